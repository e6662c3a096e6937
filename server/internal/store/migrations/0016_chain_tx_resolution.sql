-- Resolving a stuck or reverted transaction (OpsService.{Resend,Cancel,Fail}ChainTransaction,
-- `coffer ops tx`). The API and the CLI hold no keys, so a re-send or a cancel is a request on
-- the transaction that the worker advancing it carries out (signed, stored, then broadcast, as
-- every attempt). A cancel attempt is a 0-value self-send at the same nonce; if it is the one
-- mined the transaction is 'cancelled'. 'failed' is the service team's verdict on a
-- transaction that can never pay (reverted, or its nonce taken by another transaction). A
-- cancelled or failed payout leaves its 'withdrawal:<id>' ref (archived with ':resolved:<tx
-- id>') so the withdrawal, decided again, gets a new payout under that ref.
ALTER TABLE chain_txs DROP CONSTRAINT chain_txs_state_check;
ALTER TABLE chain_txs ADD CONSTRAINT chain_txs_state_check
    CHECK (state IN ('pending', 'mined', 'reverted', 'cancelled', 'failed'));
ALTER TABLE chain_txs ADD COLUMN requested_action text CHECK (requested_action IN ('resend', 'cancel'));
ALTER TABLE chain_tx_attempts ADD COLUMN cancel boolean NOT NULL DEFAULT false;

-- The audit trail of every ops action on a transaction.
CREATE TABLE chain_tx_actions (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tx_id      bigint NOT NULL REFERENCES chain_txs (id),
    action     text NOT NULL CHECK (action IN ('resend', 'cancel', 'fail')),
    actor      text NOT NULL,
    reason     text NOT NULL CHECK (reason <> ''),
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX chain_tx_actions_tx_idx ON chain_tx_actions (tx_id, id);
