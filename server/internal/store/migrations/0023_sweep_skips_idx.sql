-- The sweeps a batch skipped, by address (ListSweepBatches, deposit/batchlist.go): a skipped sweep
-- leaves its batch (batch_id NULL again), so the ops listing finds it by its address, among the
-- few sweeps ever skipped (skips > 0) rather than every sweep of the chain.
CREATE INDEX sweeps_skipped_idx ON sweeps (chain_id, address) WHERE skips > 0;
