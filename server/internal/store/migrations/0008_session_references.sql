-- An operator reference names one live session at a time: once that session expired or was
-- cancelled, the same reference opens a new session and names it from then on. The old session
-- keeps its operator_reference (late deposits to it still echo it), so the reference's current
-- session lives in a table of its own instead of a UNIQUE constraint on sessions.
CREATE TABLE operator_references (
    operator_id uuid NOT NULL REFERENCES operators (id),
    reference   text NOT NULL,
    -- Deferred: a new reference is claimed before its session row is inserted, in one
    -- transaction, so concurrent first uses of a reference open one session.
    session_id  uuid NOT NULL REFERENCES sessions (id) DEFERRABLE INITIALLY DEFERRED,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (operator_id, reference)
);

INSERT INTO operator_references (operator_id, reference, session_id, updated_at)
SELECT operator_id, operator_reference, id, created_at FROM sessions WHERE operator_reference IS NOT NULL;

ALTER TABLE sessions DROP CONSTRAINT sessions_operator_id_operator_reference_key;
CREATE INDEX sessions_reference_idx ON sessions (operator_id, operator_reference) WHERE operator_reference IS NOT NULL;

-- One synchronous WITHDRAW_REQUEST in flight per withdraw session, across replicas: a lease
-- that ends by itself should its holder die.
ALTER TABLE sessions ADD COLUMN submitting_until timestamptz;
