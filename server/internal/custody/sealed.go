package custody

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cofferhq/coffer/server/internal/admin"
	"github.com/cofferhq/coffer/server/internal/operator"
	"github.com/cofferhq/coffer/server/internal/store/dbsqlc"
	"github.com/cofferhq/coffer/server/internal/wallet"
)

// column is a database column of values sealed under the master key. Every such column must be
// listed in sealedColumns, or a rotation would leave it under the old key (a test checks the
// schema: each bytea column named *sealed is listed).
type column struct {
	table, column string
	// pk is the primary key column and pkType its type, for the compare-and-swap update.
	pk, pkType string
	// arg is an SQL expression (as text) that context turns into the seal context.
	arg     string
	context func(arg string) string
}

func (c column) String() string { return c.table + "." + c.column }

func sealedColumns() []column {
	return []column{
		{table: "wallet_seed", column: "sealed", pk: "id", pkType: "boolean", arg: "''",
			context: func(string) string { return wallet.SeedContext }},
		{table: "wallet_seed", column: "public_sealed", pk: "id", pkType: "boolean", arg: "''",
			context: func(string) string { return wallet.PublicContext }},
		{table: "operator_keys", column: "sealed", pk: "id", pkType: "bigint", arg: "operator_id::text",
			context: operator.KeyContext},
		{table: "admins", column: "totp_sealed", pk: "id", pkType: "uuid", arg: "id::text",
			context: admin.TOTPContext},
	}
}

// queries are custody's statements (store/dbsqlc/custody.sql), checked against the migrations
// like the store's. Those over every sealed column (countSealed, resealBatch, ReadStatus) stay
// hand-written: their table and column are identifiers.
var queries = dbsqlc.New() //nolint:gochecknoglobals // an empty struct with no state to share or mutate

// db is a pool or a transaction.
type db interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// countSealed is the number of sealed values in the database.
func countSealed(ctx context.Context, q db) (int, error) {
	total := 0
	for _, c := range sealedColumns() {
		var n int
		// Hand-written: the table and column are identifiers.
		if err := q.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s WHERE %s IS NOT NULL`, c.table, c.column)).Scan(&n); err != nil {
			return 0, fmt.Errorf("count %s: %w", c, err)
		}
		total += n
	}
	return total, nil
}

// notUnder is the condition selecting a column's values not sealed under the key whose sealed
// header is $1.
func notUnder(c column) string {
	return fmt.Sprintf(`%s IS NOT NULL AND substring(%s from 1 for %d) <> $1::bytea`, c.column, c.column, headerLen)
}

// headerLen is the length of secret.SealedHeader.
const headerLen = 9

// keyOf is an SQL expression naming the master key a value was sealed under: its key id in
// hex, or "v1" for values sealed before values named their key.
func keyOf(c column) string {
	return fmt.Sprintf(`CASE WHEN get_byte(%[1]s, 0) = 2 AND length(%[1]s) >= %[2]d THEN encode(substring(%[1]s from 2 for %[3]d), 'hex') ELSE 'v1' END`,
		c.column, headerLen, headerLen-1)
}
