-- name: ClaimReference :one
-- A reference that names a session already keeps it, its row locked until the transaction ends.
INSERT INTO operator_references (operator_id, reference, session_id) VALUES (@operator_id, @reference, @session_id)
ON CONFLICT (operator_id, reference) DO UPDATE SET session_id = operator_references.session_id
RETURNING session_id;

-- name: PointReference :exec
UPDATE operator_references SET session_id = @session_id, updated_at = now()
WHERE operator_id = @operator_id AND reference = @reference;
