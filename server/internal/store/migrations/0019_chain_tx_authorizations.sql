-- EIP-7702 authorizations a transaction carries (a batch sweep delegating deposit addresses to
-- the Sweeper, docs/sweeps-eip7702.md): the signed list in go-ethereum's JSON form, NULL for
-- none (an empty list is no list: it is stored as NULL and signed as a plain EIP-1559
-- transaction). Each attempt but a cancel is signed with this list; its raw bytes, stored
-- before broadcast as for every attempt, are what is sent.
ALTER TABLE chain_txs ADD COLUMN authorizations jsonb
    CHECK (authorizations IS NULL OR (jsonb_typeof(authorizations) = 'array' AND authorizations <> '[]'::jsonb));
