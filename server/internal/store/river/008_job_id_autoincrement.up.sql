-- No-op. Postgres sequences already prevent automatically generated job IDs
-- from being reused.
SELECT 1;
