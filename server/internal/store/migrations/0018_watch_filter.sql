-- The watched set's Bloom filter as a worker last saved it (deposit/watch.go), so a worker
-- starts from it and reads only the addresses assigned since, instead of streaming every
-- watched address (seconds at ten million). One row; a save replaces it only with a filter
-- that has read further (or is larger). The filter is trusted only after its checksum, its
-- format and a sample of watched addresses check out; otherwise the worker rebuilds it.
CREATE TABLE watch_filter (
    singleton     boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    -- the filter's encoding and sizing (bits per address, hash functions); another value is
    -- not read
    format        text NOT NULL,
    capacity      bigint NOT NULL CHECK (capacity > 0),
    address_count bigint NOT NULL CHECK (address_count >= 0),
    -- every watched address up to last_index is in the filter but those of gaps (indexes
    -- skipped by a transaction that had not committed when they were read)
    last_index    bigint NOT NULL,
    gaps          bigint[] NOT NULL,
    filter        bytea NOT NULL,
    checksum      bytea NOT NULL,
    saved_at      timestamptz NOT NULL DEFAULT now()
);
-- A filter's bits are random: compressing them only costs CPU.
ALTER TABLE watch_filter ALTER COLUMN filter SET STORAGE EXTERNAL;
