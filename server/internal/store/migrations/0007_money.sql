-- Money rules: sweeps per deposit address, dust, operator funds, treasuries, attribution.

-- A sweep moves every confirmed, unswept deposit of one deposit address to the bankroll: one
-- (net) transfer, plus one to the fee address, per asset due. One sweep at a time per address:
-- its transactions share the address's nonce sequence, and gas is planned for all of them
-- together, so native deposits at the address are never spent as another sweep's gas.
--   FUNDING  deposits attached, transactions not signed yet: waiting for the address to hold
--            what they cost (a gas top-up from the gas tank is on its way)
--   SENDING  transactions signed and stored; advanced (re-broadcast, bumped) until all are mined
--   DONE     every transaction mined and every deposit of it credited
CREATE TABLE sweeps (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    chain_id    bigint NOT NULL,
    address     text NOT NULL,
    status      text NOT NULL DEFAULT 'FUNDING' CHECK (status IN ('FUNDING', 'SENDING', 'DONE')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    sent_at     timestamptz,
    mined_at    timestamptz,
    done_at     timestamptz
);
CREATE UNIQUE INDEX sweeps_open_idx ON sweeps (chain_id, address) WHERE status <> 'DONE';

-- Deposits: their sweep; BELOW_MINIMUM (recorded, not swept alone: credited once the address's
-- unswept balance of the asset reaches the chain's minimum); treasury payments (an operator
-- funding its own payouts: credited to its funds, no DEPOSIT webhook).
ALTER TABLE deposits
    ADD COLUMN sweep_id bigint REFERENCES sweeps (id),
    ADD COLUMN treasury boolean NOT NULL DEFAULT false,
    -- Set when the DEPOSIT went out without a rate (the rate source stayed down past the wait).
    ADD COLUMN unpriced boolean NOT NULL DEFAULT false,
    DROP CONSTRAINT deposits_status_check,
    ADD CONSTRAINT deposits_status_check
        CHECK (status IN ('CONFIRMING', 'SWEEPING', 'BELOW_MINIMUM', 'CREDITED', 'ORPHANED', 'UNSWEEPABLE'));
CREATE INDEX deposits_sweep_idx ON deposits (sweep_id) WHERE sweep_id IS NOT NULL;
-- The unswept deposits of an address (what a sweep picks up and what its gas must not touch).
CREATE INDEX deposits_unswept_idx ON deposits (chain_id, address)
    WHERE status IN ('CONFIRMING', 'SWEEPING', 'BELOW_MINIMUM');

-- Transactions: each signed attempt carries its own value. A transaction that pays its own gas
-- from the value it sends (a native sweep) lowers the value when a replacement raises the fee,
-- so it never costs more than the funds it moves; whichever attempt is mined sets the value.
ALTER TABLE chain_txs ADD COLUMN pays_own_gas boolean NOT NULL DEFAULT false;
ALTER TABLE chain_tx_attempts ADD COLUMN value numeric(78, 0);
UPDATE chain_tx_attempts a SET value = t.value FROM chain_txs t WHERE t.id = a.tx_id;
ALTER TABLE chain_tx_attempts ALTER COLUMN value SET NOT NULL;

-- Which deposit session handed out an address, for which chain and currency, when: a deposit
-- belongs to the user's live session that most recently handed out the address for its chain
-- and currency.
CREATE TABLE address_handouts (
    session_id  uuid NOT NULL REFERENCES sessions (id),
    chain_id    bigint NOT NULL,
    currency    text NOT NULL,
    handed_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (session_id, chain_id, currency)
);

-- An operator's treasury address: payments to it fund the operator's payouts. Derived like
-- deposit addresses (same index sequence, m/44'/60'/0'/0/<address_index>), watched forever.
CREATE TABLE treasuries (
    operator_id   uuid PRIMARY KEY REFERENCES operators (id),
    address_index bigint NOT NULL UNIQUE,
    address       text NOT NULL UNIQUE,
    created_at    timestamptz NOT NULL DEFAULT now()
);

-- Operator funds per (chain, asset), in the asset's smallest unit. A payout reserves its amount
-- (available → reserved) in the transaction that queues it, and settles (reserved → paid) in the
-- one that completes it; an abandoned payout releases it. The checks make overdrawing
-- impossible whatever runs concurrently.
CREATE TABLE operator_funds (
    operator_id uuid NOT NULL REFERENCES operators (id),
    chain_id    bigint NOT NULL,
    currency    text NOT NULL,
    available   numeric(78, 0) NOT NULL DEFAULT 0 CHECK (available >= 0),
    reserved    numeric(78, 0) NOT NULL DEFAULT 0 CHECK (reserved >= 0),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (operator_id, chain_id, currency)
);

-- Every movement of operator funds, never updated or deleted.
--   DEPOSIT     a user deposit credited (net amount)            available +
--   TREASURY    a payment to the treasury address credited       available +
--   RESERVE     a payout queued                                   available -, reserved +
--   SETTLE      the payout confirmed                              reserved -
--   RELEASE     the payout abandoned before it was signed         reserved -, available +
--   ADJUSTMENT  a service-team entry (actor and note required)   available ±
CREATE TABLE fund_entries (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    operator_id     uuid NOT NULL REFERENCES operators (id),
    chain_id        bigint NOT NULL,
    currency        text NOT NULL,
    kind            text NOT NULL CHECK (kind IN ('DEPOSIT', 'TREASURY', 'RESERVE', 'SETTLE', 'RELEASE', 'ADJUSTMENT')),
    available_delta numeric(78, 0) NOT NULL,
    reserved_delta  numeric(78, 0) NOT NULL,
    ref             text NOT NULL, -- deposit:<id>, withdrawal:<id>, or the adjustment's own reference
    actor           text NOT NULL,
    note            text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now(),
    CHECK (kind <> 'ADJUSTMENT' OR length(note) > 0)
);
CREATE INDEX fund_entries_operator_idx ON fund_entries (operator_id, id DESC);
-- A deposit is credited once, a payout settled once.
CREATE UNIQUE INDEX fund_entries_once_idx ON fund_entries (kind, ref) WHERE kind IN ('DEPOSIT', 'TREASURY', 'SETTLE');
