-- The service's HD seed (64 random bytes), sealed with AES-256-GCM under the master key and
-- bound to the context "wallet_seed". Every deposit address and service wallet derives from
-- it. One row at most: id is always true. The row is never updated or deleted by Coffer:
-- losing it loses the keys of every deposit address.
CREATE TABLE wallet_seed (
    id         boolean PRIMARY KEY DEFAULT true CHECK (id),
    sealed     bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
