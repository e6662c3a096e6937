-- Deposits by block, whatever their status (LockDepositsOffChain, deposit/scan.go): a scan pass
-- looks up the deposits recorded at the heights it read, to find one recorded (by a replay,
-- ahead of the scanner) in a block that is no longer on the chain. deposits_open_idx covers
-- only CONFIRMING and SWEEPING; a credited deposit is the one that matters most.
CREATE INDEX deposits_block_idx ON deposits (chain_id, block_number);
