-- The operator's event feed (GET /events, EventService): every webhook_events row in commit
-- order, gapless across replicas and concurrent commits.
--
-- txid is the inserting transaction's id (xid8: 64 bits, never wraps). The feed is ordered by
-- (txid, id) and a reader returns only rows with txid < pg_snapshot_xmin(pg_current_snapshot()):
-- every transaction below its snapshot's xmin has finished, and any transaction still running
-- or not yet started has an xid at or above it, so no row can later appear before a position a
-- reader has already returned. The insert path pays nothing but the column and the index: no
-- sequence taken under a lock, no second write of the row. A long-running writing transaction
-- holds the feed back (never reorders it) until it ends.
--
-- Rows that exist before this migration get txid 0: they come first, in id order (UUIDv7, time
-- ordered). The constant default avoids rewriting the table; new rows then take the default
-- below.
ALTER TABLE webhook_events ADD COLUMN txid xid8 NOT NULL DEFAULT '0';
ALTER TABLE webhook_events ALTER COLUMN txid SET DEFAULT pg_current_xact_id();
CREATE INDEX webhook_events_feed_idx ON webhook_events (operator_id, txid, id);
