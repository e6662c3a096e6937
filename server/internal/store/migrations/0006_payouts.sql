-- What withdrawals need once they are decided and paid.
ALTER TABLE withdrawals
    -- Set when the payout is queued (an admin COMPLETED, an APPROVE that passed its checks): from
    -- then on the withdrawal is "paying" and only the payout's confirmation changes it. The
    -- rolling 24-hour cap counts withdrawals by this time.
    ADD COLUMN payout_queued_at timestamptz,
    -- The fiat amount in the operator's platform currency at submission, what caps are counted in.
    ADD COLUMN cap_amount numeric(38, 18),
    -- Why the last APPROVE was held (the spec's heldReason), NULL when not held.
    ADD COLUMN held_reason text CHECK (held_reason IN ('CAP_EXCEEDED', 'APPROVAL_NOT_ENABLED', 'OPERATOR_INACTIVE',
                                                       'EXPIRED', 'TEMPORARILY_UNAVAILABLE')),
    -- The last admin note (every note is in withdrawal_transitions).
    ADD COLUMN admin_note text NOT NULL DEFAULT '',
    ADD COLUMN completed_at timestamptz,
    -- Off-ramp withdrawals: the provider and its reference.
    ADD COLUMN offramp_provider text,
    ADD COLUMN offramp_ref text,
    ADD CONSTRAINT withdrawals_completed_paid CHECK (status <> 'COMPLETED' OR payout_queued_at IS NOT NULL);

-- The daily cap's sum: an operator's withdrawals paid (or paying) in the last 24 hours.
CREATE INDEX withdrawals_paid_idx ON withdrawals (operator_id, payout_queued_at) WHERE payout_queued_at IS NOT NULL;
-- Payouts in flight per chain and currency (liquidity).
CREATE INDEX withdrawals_paying_idx ON withdrawals (chain_id, currency) WHERE payout_queued_at IS NOT NULL AND status <> 'COMPLETED';
