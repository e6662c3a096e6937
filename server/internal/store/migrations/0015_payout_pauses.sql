-- Payout pauses (OpsService.PausePayouts, `coffer ops pause`): while a pause covers a
-- withdrawal (global, its chain or its operator), an APPROVE is held TEMPORARILY_UNAVAILABLE,
-- an admin COMPLETED is refused with the reason and queued payouts are not signed or
-- broadcast. A row is never deleted: the resume is written on it, so the table is the audit
-- trail of both (who, why, when). At most one pause per scope is active at a time.
CREATE TABLE payout_pauses (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    scope         text NOT NULL CHECK (scope IN ('global', 'chain', 'operator')),
    chain_id      bigint,
    operator_id   uuid REFERENCES operators (id),
    reason        text NOT NULL CHECK (reason <> ''),
    paused_by     text NOT NULL,
    paused_at     timestamptz NOT NULL DEFAULT now(),
    resumed_by    text,
    resume_reason text,
    resumed_at    timestamptz,
    CHECK ((scope = 'global' AND chain_id IS NULL AND operator_id IS NULL)
        OR (scope = 'chain' AND chain_id IS NOT NULL AND operator_id IS NULL)
        OR (scope = 'operator' AND operator_id IS NOT NULL AND chain_id IS NULL)),
    CHECK ((resumed_at IS NULL) = (resumed_by IS NULL))
);
CREATE UNIQUE INDEX payout_pauses_active_idx ON payout_pauses
    (scope, coalesce(chain_id, 0), coalesce(operator_id, '00000000-0000-0000-0000-000000000000'))
    WHERE resumed_at IS NULL;
