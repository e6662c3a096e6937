package custody

import (
	"context"
	"fmt"

	"github.com/cofferhq/coffer/server/internal/admin"
	"github.com/cofferhq/coffer/server/internal/operator"
	"github.com/cofferhq/coffer/server/internal/store/dbsqlc"
	"github.com/cofferhq/coffer/server/internal/wallet"
)

// column is a database column of values sealed under the master key. Every such column must be
// listed in sealedColumns, or a rotation would leave it under the old key (a test checks the
// schema: each bytea column named *sealed is listed). Its statements are sqlc's
// (store/dbsqlc/custody.sql): one set per column, since the table and column are identifiers.
type column struct {
	table, column string
	// context turns a value's arg (the SQL expression its NotUnder statement returns) into its
	// seal context.
	context func(arg string) string
	// keys counts the column's values per master key id ("v1": the format without key ids).
	keys func(context.Context, dbsqlc.DBTX) ([]keyCount, error)
	// notUnder returns up to 100 values not sealed under the key whose sealed header is given.
	notUnder func(context.Context, dbsqlc.DBTX, []byte) ([]sealedValue, error)
	// reseal stores a value re-sealed if it is still as read (1 row; 0: it changed meanwhile).
	reseal func(context.Context, dbsqlc.DBTX, dbsqlc.ResealWalletSeedParams) (int64, error)
}

func (c column) String() string { return c.table + "." + c.column }

// keyCount is a column's number of values sealed under one master key.
type keyCount struct {
	KeyID string
	N     int64
}

// sealedValue is a sealed value with its row's primary key (as text) and its seal context's
// argument.
type sealedValue struct {
	Pk, Arg string
	Sealed  []byte
}

func sealedColumns() []column {
	return []column{
		{table: "wallet_seed", column: "sealed", context: func(string) string { return wallet.SeedContext },
			keys: keysOf(queries.SealedKeysWalletSeed), notUnder: valuesOf(queries.NotUnderWalletSeed),
			reseal: queries.ResealWalletSeed},
		{table: "wallet_seed", column: "public_sealed", context: func(string) string { return wallet.PublicContext },
			keys: keysOf(queries.SealedKeysWalletPublic), notUnder: valuesOf(queries.NotUnderWalletPublic),
			reseal: resealAs(queries.ResealWalletPublic)},
		{table: "operator_keys", column: "sealed", context: operator.KeyContext,
			keys: keysOf(queries.SealedKeysOperatorKeys), notUnder: valuesOf(queries.NotUnderOperatorKeys),
			reseal: resealAs(queries.ResealOperatorKeys)},
		{table: "admins", column: "totp_sealed", context: admin.TOTPContext,
			keys: keysOf(queries.SealedKeysAdminTOTP), notUnder: valuesOf(queries.NotUnderAdminTOTP),
			reseal: resealAs(queries.ResealAdminTOTP)},
	}
}

// keysOf adapts a column's SealedKeys statement: each column's has its own row type, all of the
// same shape.
func keysOf[Row ~struct {
	KeyID string
	N     int64
}](q func(context.Context, dbsqlc.DBTX) ([]Row, error)) func(context.Context, dbsqlc.DBTX) ([]keyCount, error) {
	return func(ctx context.Context, db dbsqlc.DBTX) ([]keyCount, error) {
		rows, err := q(ctx, db)
		out := make([]keyCount, len(rows))
		for i, r := range rows {
			out[i] = keyCount(r)
		}
		return out, err
	}
}

// valuesOf adapts a column's NotUnder statement.
func valuesOf[Row ~struct {
	Pk     string
	Arg    string
	Sealed []byte
}](q func(context.Context, dbsqlc.DBTX, []byte) ([]Row, error)) func(context.Context, dbsqlc.DBTX, []byte) ([]sealedValue, error) {
	return func(ctx context.Context, db dbsqlc.DBTX, header []byte) ([]sealedValue, error) {
		rows, err := q(ctx, db, header)
		out := make([]sealedValue, len(rows))
		for i, r := range rows {
			out[i] = sealedValue(r)
		}
		return out, err
	}
}

// resealAs adapts a column's Reseal statement to the first column's parameters (all alike).
func resealAs[Params ~struct {
	Resealed []byte
	Pk       string
	Sealed   []byte
}](q func(context.Context, dbsqlc.DBTX, Params) (int64, error)) func(context.Context, dbsqlc.DBTX, dbsqlc.ResealWalletSeedParams) (int64, error) {
	return func(ctx context.Context, db dbsqlc.DBTX, p dbsqlc.ResealWalletSeedParams) (int64, error) {
		return q(ctx, db, Params(p))
	}
}

// queries are custody's statements (store/dbsqlc/custody.sql), checked against the migrations
// like the store's.
var queries = dbsqlc.New() //nolint:gochecknoglobals // an empty struct with no state to share or mutate

// countSealed is the number of sealed values in the database.
func countSealed(ctx context.Context, db dbsqlc.DBTX) (int, error) {
	total := 0
	for _, c := range sealedColumns() {
		keys, err := c.keys(ctx, db)
		if err != nil {
			return 0, fmt.Errorf("count %s: %w", c, err)
		}
		for _, k := range keys {
			total += int(k.N)
		}
	}
	return total, nil
}
