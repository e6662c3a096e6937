package dbsqlc

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Written by hand beside sqlc's output (sqlc leaves other files alone): statements whose rows
// are read as a stream rather than collected into a slice. The SQL is still sqlc's, checked
// against the schema.

// AllWatchedAddressesRows runs AllWatchedAddresses and returns its rows unread.
func (q *Queries) AllWatchedAddressesRows(ctx context.Context, db DBTX) (pgx.Rows, error) {
	return db.Query(ctx, allWatchedAddresses)
}
