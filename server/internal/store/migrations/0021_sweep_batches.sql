-- EIP-7702 batch sweeps (docs/sweeps-eip7702.md). On a chain with sweepMethod eip7702, the
-- sweep of a token-deposit address is never signed by the address and needs no gas top-up:
-- the gas tank sends one transaction (chain_txs purpose 'sweep-batch', ref 'batch:<id>') that
-- calls the chain's Sweeper, which sweeps each address of the batch (delegated to it) to the
-- bankroll. The sweeps keep their rows, deposits and credit as before; a batch only groups them.
--   SENDING  the batch transaction is stored (signed before broadcast) and advanced until mined
--   DONE     its receipt was read: each sweep of it is either swept (mined_at set, credited
--            next) or skipped and back to FUNDING for the next batch
CREATE TABLE sweep_batches (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    chain_id   bigint NOT NULL,
    status     text NOT NULL DEFAULT 'SENDING' CHECK (status IN ('SENDING', 'DONE')),
    created_at timestamptz NOT NULL DEFAULT now(),
    done_at    timestamptz
);
-- The batches in flight of a chain (a few at most: deposit/batch.go's maxBatchesInFlight).
CREATE INDEX sweep_batches_open_idx ON sweep_batches (chain_id) WHERE status = 'SENDING';

-- batched: the sweep goes in a batch (fixed when it opens: a token-deposit address on an
-- eip7702 chain); batch_id: the batch it is in, NULL while it waits for one; skips: how many
-- batches skipped it (its delegation was cleared or replaced, or its sweep reverted).
ALTER TABLE sweeps
    ADD COLUMN batched boolean NOT NULL DEFAULT false,
    ADD COLUMN batch_id bigint REFERENCES sweep_batches (id),
    ADD COLUMN skips integer NOT NULL DEFAULT 0,
    ADD CONSTRAINT sweeps_batch_check CHECK (batched OR batch_id IS NULL);
CREATE INDEX sweeps_batch_due_idx ON sweeps (chain_id, id) WHERE batched AND status = 'FUNDING';
CREATE INDEX sweeps_batch_idx ON sweeps (batch_id) WHERE batch_id IS NOT NULL;

-- The mined transaction that swept a deposit ('' until there is one): its sweep's transfer of
-- its currency (or an early per-deposit sweep, 'deposit:<id>'), or its sweep's batch once that
-- batch swept it. One definition for every query that shows a deposit ($1 the deposit's id,
-- $2 its sweep_id, $3 its currency).
CREATE FUNCTION deposit_sweep_tx_hash(bigint, bigint, text) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT COALESCE(
        (SELECT chain_txs.mined_hash FROM chain_txs WHERE chain_txs.purpose = 'sweep'
            AND chain_txs.ref IN ('deposit:' || $1, 'sweep:' || $2 || ':' || $3)),
        (SELECT chain_txs.mined_hash FROM chain_txs JOIN sweeps ON chain_txs.ref = 'batch:' || sweeps.batch_id
            WHERE chain_txs.purpose = 'sweep-batch' AND sweeps.id = $2 AND sweeps.mined_at IS NOT NULL),
        '')
$$;
