-- name: InsertDepositor :one
-- No row when the depositor exists.
INSERT INTO depositors (operator_id, external_user_id, email) VALUES (@operator_id, @external_user_id, NULLIF(@email::text, ''))
ON CONFLICT (operator_id, external_user_id) DO NOTHING
RETURNING operator_id, external_user_id, email, created_at, updated_at, address_index, address;

-- name: DepositorForUpdate :one
SELECT operator_id, external_user_id, email, created_at, updated_at, address_index, address FROM depositors
WHERE operator_id = @operator_id AND external_user_id = @external_user_id FOR UPDATE;

-- name: SetDepositorEmail :exec
UPDATE depositors SET email = @email::text, updated_at = now()
WHERE operator_id = @operator_id AND external_user_id = @external_user_id;

-- name: GetDepositor :one
SELECT operator_id, external_user_id, email, created_at, updated_at, address_index, address FROM depositors
WHERE operator_id = @operator_id AND external_user_id = @external_user_id;
