-- The service's own transactions by the block they were mined in (LockDepositsSweptFrom,
-- deposit/reorg.go): a rollback finds the sweeps it takes away from the blocks it abandons.
CREATE INDEX chain_txs_mined_block_idx ON chain_txs (chain_id, mined_block) WHERE mined_block IS NOT NULL;
