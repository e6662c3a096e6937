package store

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cofferhq/coffer/server/internal/store/dbsqlc"
)

// inBatch takes generated :many statements only: anything else is a programming error, caught
// when the statement is queued rather than by a batch that silently lacks it.
func TestInBatchRefusesWhatIsNotAQuery(t *testing.T) {
	t.Parallel()
	for name, run := range map[string]func(dbsqlc.DBTX) error{
		"one row": func(db dbsqlc.DBTX) error { _, err := sqlc.GetOperator(context.Background(), db, "x"); return err },
		"exec":    func(db dbsqlc.DBTX) error { return sqlc.LockSession(context.Background(), db, "x") },
		"nothing": func(dbsqlc.DBTX) error { return nil },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			inBatch(&pgx.Batch{}, run)
		})
	}
}
