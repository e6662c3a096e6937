package store

import "context"

// ClaimReference claims an operator's reference for the session about to be inserted with id
// sessionID, or, when the reference already names a session, locks that claim until the
// transaction ends and returns the session it names. Concurrent first uses of a reference
// thus open one session: the others wait for its transaction and then see it. The caller runs
// it in the transaction that inserts the session (the foreign key is checked at commit).
func (q *Queries) ClaimReference(ctx context.Context, operatorID, reference, sessionID string) (current string, err error) {
	err = q.db.QueryRow(ctx, `
		INSERT INTO operator_references (operator_id, reference, session_id) VALUES ($1, $2, $3)
		ON CONFLICT (operator_id, reference) DO UPDATE SET session_id = operator_references.session_id
		RETURNING session_id::text`, operatorID, reference, sessionID).Scan(&current)
	return current, err
}

// PointReference makes a claimed reference name another session (the one it named ended).
func (q *Queries) PointReference(ctx context.Context, operatorID, reference, sessionID string) error {
	_, err := q.db.Exec(ctx, `UPDATE operator_references SET session_id = $3, updated_at = now()
		WHERE operator_id = $1 AND reference = $2`, operatorID, reference, sessionID)
	return err
}
