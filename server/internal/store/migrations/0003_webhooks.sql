-- Webhooks: the outbox of signed events and every delivery attempt.
--
-- A webhook_events row is inserted in the same transaction as the state change it reports,
-- together with its River job (webhook_deliver). Its id is the webhook-id header and its body
-- the exact form body: both are the same on every attempt and every redelivery.
--   pending   -> delivered            acknowledged (2xx and {"error":0})
--   pending   -> dead                 the last of the job's 5 attempts failed (dead letter)
--   dead      -> pending              redelivered by an admin or the service team (a new job)
-- Synchronous sends (test webhooks, mode-A WITHDRAW_REQUEST) are recorded once, already
-- finished: delivered, or failed. They are never retried nor dead-lettered.
CREATE TABLE webhook_events (
    id              uuid PRIMARY KEY,
    operator_id     uuid NOT NULL REFERENCES operators (id),
    event_type      text NOT NULL CHECK (event_type IN ('DEPOSIT', 'WITHDRAW_REQUEST', 'WITHDRAW_COMPLETE')),
    -- The deposit id or withdrawal id the event reports (the session id for a test event).
    subject_id      text NOT NULL,
    test            boolean NOT NULL DEFAULT false,
    sync            boolean NOT NULL DEFAULT false,
    body            text NOT NULL,
    state           text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'dead', 'failed')),
    attempts        integer NOT NULL DEFAULT 0,
    last_status     integer,              -- HTTP status of the last attempt; NULL without a response
    last_error      text NOT NULL DEFAULT '',
    last_url        text NOT NULL DEFAULT '', -- target of the last attempt (credentials removed)
    created_at      timestamptz NOT NULL DEFAULT now(),
    last_attempt_at timestamptz,
    delivered_at    timestamptz,
    dead_at         timestamptz,
    CHECK (state <> 'failed' OR sync),
    CHECK ((state = 'dead') = (dead_at IS NOT NULL)),
    CHECK (state <> 'dead' OR NOT sync)
) WITH (fillfactor = 70);
-- One outbox event per reported state change: enqueuing the same (type, subject) again is a
-- no-op. Test and synchronous events are not deduplicated.
CREATE UNIQUE INDEX webhook_events_subject_idx ON webhook_events (operator_id, event_type, subject_id)
    WHERE NOT test AND NOT sync;
-- Dead letters, newest first (the panel and the ops API page through them).
-- (dead_at, not state: an attempt that leaves dead_at NULL changes no indexed column, so
-- PostgreSQL updates the row in place, HOT, with room left by the fill factor.)
CREATE INDEX webhook_events_dead_idx ON webhook_events (dead_at DESC, id DESC) WHERE dead_at IS NOT NULL;
CREATE INDEX webhook_events_operator_dead_idx ON webhook_events (operator_id, dead_at DESC, id DESC) WHERE dead_at IS NOT NULL;

CREATE TABLE webhook_attempts (
    event_id     uuid NOT NULL,
    -- 1-based over the event's life: redeliveries count on.
    attempt      integer NOT NULL,
    url          text NOT NULL,
    status       integer,                 -- HTTP status; NULL without a response
    acked        boolean NOT NULL,
    error_code   integer,                 -- the receiver's "error" value, when it sent one
    error        text NOT NULL DEFAULT '',
    duration_ms  integer NOT NULL,
    attempted_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (event_id, attempt)
);
