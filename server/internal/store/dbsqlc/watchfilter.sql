-- name: GetWatchFilter :one
SELECT format, capacity, address_count, last_index, gaps, filter, checksum, saved_at FROM watch_filter;

-- name: SaveWatchFilter :execrows
-- Replaces the saved filter only with one that has read further, or as far but is larger
-- (rebuilt), or of another format: workers save concurrently and the best one stays.
INSERT INTO watch_filter (format, capacity, address_count, last_index, gaps, filter, checksum)
VALUES (@format, @capacity, @address_count, @last_index, @gaps::bigint[], @filter, @checksum)
ON CONFLICT (singleton) DO UPDATE SET format = EXCLUDED.format, capacity = EXCLUDED.capacity,
	address_count = EXCLUDED.address_count, last_index = EXCLUDED.last_index, gaps = EXCLUDED.gaps,
	filter = EXCLUDED.filter, checksum = EXCLUDED.checksum, saved_at = now()
WHERE watch_filter.format <> EXCLUDED.format OR watch_filter.last_index < EXCLUDED.last_index
	OR (watch_filter.last_index = EXCLUDED.last_index AND watch_filter.capacity < EXCLUDED.capacity);

-- name: DeleteWatchFilter :exec
-- Removes a saved filter that failed its checks (by its checksum: not one saved since).
DELETE FROM watch_filter WHERE checksum = @checksum;

-- name: GetWatchFilterHeader :one
-- The saved filter without its bytes (read in chunks: WatchFilterChunk).
SELECT format, capacity, address_count, last_index, gaps, checksum, saved_at,
	octet_length(filter)::bigint AS size FROM watch_filter;

-- name: WatchFilterChunk :one
-- A piece of the saved filter's bytes (from is 1-based). The column is stored uncompressed,
-- so PostgreSQL reads only the pieces of it asked for.
SELECT substring(filter FROM @from_byte::int FOR @length::int)::bytea AS chunk FROM watch_filter;
