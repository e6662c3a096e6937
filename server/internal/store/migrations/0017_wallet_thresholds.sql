-- Per-wallet low-balance thresholds (OpsService.SetWalletThreshold, `coffer ops threshold`).
-- Append-only: each row is a setting (or, with amount NULL, its removal) with who and why; the
-- threshold in force for a (chain, wallet, currency) is its newest row. The periodic
-- reconciliation reads each wallet's balance, exports the threshold as a gauge and logs a WARN
-- while the balance is under it.
CREATE TABLE wallet_thresholds (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    chain_id   bigint NOT NULL,
    wallet     text NOT NULL,
    currency   text NOT NULL,
    amount     numeric CHECK (amount >= 0),
    set_by     text NOT NULL,
    reason     text NOT NULL CHECK (reason <> ''),
    set_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX wallet_thresholds_key_idx ON wallet_thresholds (chain_id, wallet, currency, id DESC);
