-- The service's transactions to an address by purpose, newest last (LastTopUpID, MinedTopUpIDs,
-- deposit/sweep.go): every gas top-up step reads the newest top-up to the address it funds.
CREATE INDEX chain_txs_to_address_idx ON chain_txs (chain_id, to_address, purpose, id);
