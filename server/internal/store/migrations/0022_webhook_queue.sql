-- The outbox's queue (webhook/drain.go): one row per pending event, deleted when the event is
-- delivered or dead-lettered. Deliveries are no longer a River job each: one River job per
-- operator (webhook_drain) posts that operator's due events, many at once, and records each
-- attempt here and on the event. The queue holds what changes on every attempt (when the next
-- one is due, how many are left before the dead letter), so webhook_events rows are still
-- updated in place (HOT) and the due index stays as small as the backlog.
--   inserted  with the event (Enqueue), or by a redelivery (5 more attempts, due now)
--   updated   after a failed attempt that was not the last: due after the retry delay
--   deleted   after the acknowledgement or the last failed attempt (the event is dead)
CREATE TABLE webhook_queue (
    event_id        uuid PRIMARY KEY REFERENCES webhook_events (id),
    operator_id     uuid NOT NULL,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    attempts_left   integer NOT NULL DEFAULT 5 CHECK (attempts_left > 0)
);
-- An operator's due events, oldest due first.
CREATE INDEX webhook_queue_due_idx ON webhook_queue (operator_id, next_attempt_at, event_id);

-- Events pending before this migration had a webhook_deliver job each: they are due now,
-- with five attempts (those jobs finish without sending).
INSERT INTO webhook_queue (event_id, operator_id)
SELECT id, operator_id FROM webhook_events WHERE state = 'pending';

-- One row per operator whose drain (a webhook_drain River job) is live: inserted with the job by
-- the first Enqueue that finds none, deleted by the drain when it ends with nothing queued. An
-- Enqueue that finds the row does nothing more: it writes nothing and locks nothing that
-- another Enqueue of the operator waits on. due_at is set while the drain waits for a retry
-- (its job scheduled then); an Enqueue clears it and makes the job available at once.
CREATE TABLE webhook_drains (
    operator_id uuid PRIMARY KEY,
    job_id      bigint,
    due_at      timestamptz
);
