-- Every handout of a user's address by a deposit session, kept as runs: a run is one
-- session's consecutive handouts for a chain and currency with no other session of the user
-- handing out the address for them in between (started_at: the first, last_at: the latest).
-- Attribution needs each session's latest handout before a payment; address_handouts keeps
-- only a session's first and latest, so a session that showed the address again after being
-- paid lost the payment to one whose handout fell between its first and the one before the
-- payment. Runs of one user never overlap, so the latest handout before a moment is the run's
-- last_at, or the moment itself inside a run. address_handouts stays written for the replicas
-- of the previous release during a rolling deploy.
CREATE TABLE handout_runs (
    session_id  uuid NOT NULL REFERENCES sessions (id),
    chain_id    bigint NOT NULL,
    currency    text NOT NULL,
    started_at  timestamptz NOT NULL,
    last_at     timestamptz NOT NULL,
    PRIMARY KEY (session_id, chain_id, currency, started_at)
);

-- What address_handouts knew: each session's first and latest handout, as runs of one.
INSERT INTO handout_runs (session_id, chain_id, currency, started_at, last_at)
SELECT session_id, chain_id, currency, first_handed_at, first_handed_at FROM address_handouts
UNION
SELECT session_id, chain_id, currency, handed_at, handed_at FROM address_handouts;
