-- Withdrawals and their audit trail. A withdrawal exists from the moment it is accepted: mode A
-- after the operator's synchronous WITHDRAW_REQUEST answered error 0 (PENDING), mode B at
-- submission (AWAITING_APPROVAL). Every later status change goes through the transition table
-- (server/internal/withdrawal/transitions.go) and leaves one withdrawal_transitions row.
CREATE TABLE withdrawals (
    id                 uuid PRIMARY KEY, -- the withdrawRequestId
    operator_id        uuid NOT NULL REFERENCES operators (id),
    session_id         uuid NOT NULL REFERENCES sessions (id),
    external_user_id   text NOT NULL,
    type               text NOT NULL CHECK (type IN ('DIRECT_TRANSFER', 'OFF_RAMP')),
    approval_mode      text NOT NULL CHECK (approval_mode IN ('sync', 'external')),
    status             text NOT NULL CHECK (status IN ('PENDING', 'PROCESSING', 'AWAITING_APPROVAL', 'COMPLETED',
                                                       'REJECTED', 'CANCELLED', 'EXPIRED')),
    chain_id           bigint NOT NULL,
    currency           text NOT NULL,
    contract_address   text, -- NULL for the native currency
    decimals           integer NOT NULL,
    address            text NOT NULL, -- destination, EIP-55
    fiat_currency      text NOT NULL,
    fiat_amount        numeric(38, 18) NOT NULL CHECK (fiat_amount > 0),
    crypto_amount      numeric(78, 0) NOT NULL CHECK (crypto_amount > 0), -- smallest unit, what is paid
    amount_in_usd      numeric,
    settlement_tx_hash text,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    expires_at         timestamptz NOT NULL,
    CHECK ((status = 'COMPLETED') = (settlement_tx_hash IS NOT NULL))
);
CREATE INDEX withdrawals_operator_idx ON withdrawals (operator_id, created_at DESC, id DESC);
CREATE INDEX withdrawals_session_idx ON withdrawals (session_id);
-- The expiry job's work list: unactioned withdrawals by deadline.
CREATE INDEX withdrawals_open_idx ON withdrawals (expires_at) WHERE status IN ('PENDING', 'AWAITING_APPROVAL');

CREATE TABLE withdrawal_transitions (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    withdrawal_id uuid NOT NULL REFERENCES withdrawals (id),
    from_status   text NOT NULL,
    to_status     text NOT NULL,
    action        text NOT NULL,
    actor         text NOT NULL, -- admin:<id>, operator:<id>, user, system
    note          text NOT NULL DEFAULT '',
    at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX withdrawal_transitions_withdrawal_idx ON withdrawal_transitions (withdrawal_id, id);
