-- Worker liveness (issue 11): a killed worker's jobs are run again within seconds, not after
-- River's rescue window (COFFER_JOB_RESCUE_AFTER, minutes).
--
-- Every worker process registers its River client id here and holds a session advisory lock on
-- lock_key over a connection of its own, beating beat_at every second over it. PostgreSQL frees
-- the lock the moment that connection goes (a kill -9 closes the socket), and a process that is
-- merely slow keeps it. A worker is dead when its lock is free AND it has not beaten for the
-- grace period (a PostgreSQL restart frees every lock, but live workers take theirs back and
-- beat within it). Any live worker then puts the dead one's running jobs back to available,
-- deposes it if it was River's leader, and removes its row.
CREATE TABLE worker_liveness (
    client_id  text PRIMARY KEY,
    lock_key   bigint NOT NULL UNIQUE,
    host       text NOT NULL,
    pid        integer NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now(),
    beat_at    timestamptz NOT NULL DEFAULT now()
);
