package store

import (
	"context"

	"github.com/cofferhq/coffer/server/internal/store/dbsqlc"
)

// ClaimReference claims an operator's reference for the session about to be inserted with id
// sessionID, or, when the reference already names a session, locks that claim until the
// transaction ends and returns the session it names. Concurrent first uses of a reference
// thus open one session: the others wait for its transaction and then see it. The caller runs
// it in the transaction that inserts the session (the foreign key is checked at commit).
func (q *Queries) ClaimReference(ctx context.Context, operatorID, reference, sessionID string) (current string, err error) {
	return sqlc.ClaimReference(ctx, q.db, dbsqlc.ClaimReferenceParams{OperatorID: operatorID, Reference: reference, SessionID: sessionID})
}

// PointReference makes a claimed reference name another session (the one it named ended).
func (q *Queries) PointReference(ctx context.Context, operatorID, reference, sessionID string) error {
	return sqlc.PointReference(ctx, q.db, dbsqlc.PointReferenceParams{OperatorID: operatorID, Reference: reference, SessionID: sessionID})
}
