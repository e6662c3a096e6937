-- Tokens a sweep moved to the bankroll (and the fee address) for no deposit, and what later
-- sweeps of the same address and asset took from them (deposit/carry.go). A retired sweep's
-- signed transfer mined before its cancel moved a later payment's tokens in a written-off
-- deposit's name: the written-off deposit is not credited, so that money is carried (a
-- positive row) and the address's next sweep of the asset sends only the remainder and
-- credits its deposits in full, taking the carry (a negative row) in the transaction that
-- credits. The balance of an address and asset is the sum of its rows.
CREATE TABLE sweep_carries (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    chain_id    bigint NOT NULL,
    address     text NOT NULL,
    currency    text NOT NULL,
    sweep_id    bigint NOT NULL REFERENCES sweeps (id),
    kind        text NOT NULL CHECK (kind IN ('CARRIED', 'TAKEN')),
    bankroll    numeric(78, 0) NOT NULL,
    fee         numeric(78, 0) NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    CHECK (CASE kind WHEN 'CARRIED' THEN bankroll >= 0 AND fee >= 0 ELSE bankroll <= 0 AND fee <= 0 END),
    CHECK (bankroll <> 0 OR fee <> 0),
    UNIQUE (sweep_id, currency, kind)
);
CREATE INDEX sweep_carries_address_idx ON sweep_carries (chain_id, address, currency);
