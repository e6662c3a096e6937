-- Deposits: addresses, chain scanning state, deposits, and the signed transactions Coffer
-- broadcasts (sweeps now, payouts later). Raw token amounts are NUMERIC(78,0) (uint256).

-- One deposit address per (operator, externalUserId), derived at m/44'/60'/0'/0/<address_index>;
-- the address (EIP-55) is the same on every EVM chain and watched forever.
CREATE SEQUENCE deposit_address_index AS bigint MINVALUE 0 START 0;
ALTER TABLE depositors
    ADD COLUMN address_index bigint UNIQUE,
    ADD COLUMN address text UNIQUE;

-- Per chain: the next block to scan, the chain's genesis (a different genesis means a reset
-- dev chain), and the latest head seen (the widget's confirmation count).
CREATE TABLE chain_cursors (
    chain_id     bigint PRIMARY KEY,
    genesis_hash text NOT NULL,
    next_block   bigint NOT NULL,
    head_block   bigint NOT NULL,
    updated_at   timestamptz NOT NULL DEFAULT now()
);

-- Hashes of recently scanned blocks, to detect reorgs by parent-hash mismatch.
CREATE TABLE chain_blocks (
    chain_id    bigint NOT NULL,
    number      bigint NOT NULL,
    hash        text NOT NULL,
    parent_hash text NOT NULL,
    PRIMARY KEY (chain_id, number)
);

CREATE TABLE deposits (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    operator_id      uuid NOT NULL REFERENCES operators (id),
    external_user_id text NOT NULL,
    session_id       uuid REFERENCES sessions (id),
    chain_id         bigint NOT NULL,
    tx_hash          text NOT NULL,
    log_index        integer NOT NULL, -- -1 for a native transfer
    block_number     bigint NOT NULL,
    block_hash       text NOT NULL,
    address          text NOT NULL,
    address_index    bigint NOT NULL,
    currency         text NOT NULL,
    contract_address text, -- NULL for the native currency
    decimals         integer NOT NULL,
    gross_amount     numeric(78, 0) NOT NULL CHECK (gross_amount > 0),
    fee_amount       numeric(78, 0),
    amount           numeric(78, 0),
    status           text NOT NULL CHECK (status IN ('CONFIRMING', 'SWEEPING', 'CREDITED', 'ORPHANED', 'UNSWEEPABLE')),
    manual           boolean NOT NULL DEFAULT false,
    idempotency_key  text NOT NULL UNIQUE,
    -- Snapshot taken at settlement.
    usd_price        numeric,
    fiat_currency    text,
    fiat_per_usd     numeric,
    amount_in_dollar numeric,
    amount_in_local  numeric,
    fee_in_dollar    numeric,
    detected_at      timestamptz NOT NULL DEFAULT now(),
    confirmed_at     timestamptz,
    credited_at      timestamptz,
    UNIQUE (chain_id, tx_hash, log_index),
    CHECK (amount IS NULL OR amount + fee_amount = gross_amount)
);
CREATE INDEX deposits_open_idx ON deposits (chain_id, block_number) WHERE status IN ('CONFIRMING', 'SWEEPING');
CREATE INDEX deposits_operator_idx ON deposits (operator_id, id DESC);
CREATE INDEX deposits_session_idx ON deposits (session_id) WHERE session_id IS NOT NULL;

-- Transactions Coffer signs. A transaction is signed and stored before it is broadcast; a gas
-- bump is a new attempt with the same nonce; the first attempt mined settles it. One
-- transaction per (purpose, ref): a deposit is swept once, a withdrawal paid once.
CREATE TABLE chain_nonces (
    chain_id   bigint NOT NULL,
    address    text NOT NULL,
    next_nonce bigint NOT NULL,
    PRIMARY KEY (chain_id, address)
);

CREATE TABLE chain_txs (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    chain_id            bigint NOT NULL,
    from_address        text NOT NULL,
    nonce               bigint NOT NULL,
    to_address          text NOT NULL,
    value               numeric(78, 0) NOT NULL,
    data                bytea,
    gas_limit           bigint NOT NULL,
    purpose             text NOT NULL,
    ref                 text NOT NULL,
    state               text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'mined', 'reverted')),
    mined_hash          text,
    mined_block         bigint,
    gas_used            bigint,
    effective_gas_price numeric(78, 0),
    created_at          timestamptz NOT NULL DEFAULT now(),
    mined_at            timestamptz,
    UNIQUE (chain_id, from_address, nonce),
    UNIQUE (purpose, ref)
);
CREATE INDEX chain_txs_pending_idx ON chain_txs (chain_id) WHERE state = 'pending';

CREATE TABLE chain_tx_attempts (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tx_id        bigint NOT NULL REFERENCES chain_txs (id),
    hash         text NOT NULL UNIQUE,
    raw          bytea NOT NULL,
    gas_tip_cap  numeric(78, 0) NOT NULL,
    gas_fee_cap  numeric(78, 0) NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    broadcast_at timestamptz
);
CREATE INDEX chain_tx_attempts_tx_idx ON chain_tx_attempts (tx_id, id);
