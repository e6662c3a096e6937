-- name: InsertPayoutPause :one
INSERT INTO payout_pauses (scope, chain_id, operator_id, reason, paused_by)
VALUES (@scope, sqlc.narg(chain_id)::bigint, sqlc.narg(operator_id)::uuid, @reason, @paused_by)
RETURNING *;

-- name: ResumePayoutPause :one
-- The active pause of a scope, resumed; no row when that scope is not paused.
UPDATE payout_pauses SET resumed_by = @resumed_by::text, resume_reason = @resume_reason::text, resumed_at = now()
WHERE resumed_at IS NULL AND scope = @scope
  AND chain_id IS NOT DISTINCT FROM sqlc.narg(chain_id)::bigint AND operator_id IS NOT DISTINCT FROM sqlc.narg(operator_id)::uuid
RETURNING *;

-- name: ActivePayoutPause :one
-- The pause that covers a payout of this chain and operator, global first.
SELECT * FROM payout_pauses
WHERE resumed_at IS NULL AND (scope = 'global' OR chain_id = @chain_id::bigint OR operator_id = @operator_id::uuid)
ORDER BY CASE scope WHEN 'global' THEN 0 WHEN 'chain' THEN 1 ELSE 2 END, id
LIMIT 1;

-- name: ListPayoutPauses :many
-- Active pauses, or every pause (the history) with all_pauses; newest first.
SELECT * FROM payout_pauses WHERE resumed_at IS NULL OR @all_pauses::boolean ORDER BY id DESC LIMIT @max_rows;
