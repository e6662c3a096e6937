-- Token-deposit addresses (docs/sweeps-eip7702.md): on a chain that sweeps with EIP-7702, a
-- user's token deposits go to an address of their own, derived at m/44'/60'/0'/1/<address_index>
-- and delegated to the Sweeper at its first sweep; native deposits keep the depositor's address
-- (m/44'/60'/0'/0/i), which is never delegated. The index comes from the same sequence as
-- depositors' and treasuries' addresses, so the watched set reads one index space ("indexes
-- above n"). One per user, assigned once, watched forever, the same on every EVM chain.
CREATE TABLE token_addresses (
    operator_id      uuid NOT NULL,
    external_user_id text NOT NULL,
    address_index    bigint NOT NULL UNIQUE,
    address          text NOT NULL UNIQUE,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (operator_id, external_user_id),
    FOREIGN KEY (operator_id, external_user_id) REFERENCES depositors (operator_id, external_user_id)
);

-- Every address the scanner watches, with its owner and its kind: the one definition the
-- queries that read them share. PostgreSQL inlines the view, so each branch keeps its own
-- unique indexes (address, address_index) and an ORDER BY address_index LIMIT merges them.
CREATE VIEW watched_addresses AS
SELECT depositors.operator_id::text AS operator_id, depositors.external_user_id, depositors.address_index,
    depositors.address, false AS treasury, false AS token
FROM depositors WHERE depositors.address_index IS NOT NULL
UNION ALL
SELECT treasuries.operator_id::text, '', treasuries.address_index, treasuries.address, true, false FROM treasuries
UNION ALL
SELECT token_addresses.operator_id::text, token_addresses.external_user_id, token_addresses.address_index,
    token_addresses.address, false, true FROM token_addresses;
