-- v4: bounded storage. Old commit events are pruned in small batches and folded into per-table
-- counters, finished operations and idempotency keys are pruned after their retention, and a
-- view gives every reader the table with its commit count and last commit in one place.

ALTER TABLE tms_tables
    ADD COLUMN pruned_commits bigint NOT NULL DEFAULT 0 CHECK (pruned_commits >= 0),
    ADD COLUMN pruned_last_commit_id text,
    ADD COLUMN pruned_last_commit_time timestamptz;

CREATE INDEX tms_commit_events_age ON tms_commit_events (received_at);
CREATE INDEX tms_operations_finished ON tms_operations (finished_at)
    WHERE state IN ('SUCCEEDED', 'FAILED', 'CANCELLED');

CREATE VIEW tms_tables_view AS
SELECT t.*,
       t.pruned_commits + c.n AS commit_count,
       coalesce(l.commit_id, t.pruned_last_commit_id) AS last_commit_id,
       coalesce(l.at, t.pruned_last_commit_time) AS last_commit_time
FROM tms_tables t
CROSS JOIN LATERAL (SELECT count(*) AS n FROM tms_commit_events e WHERE e.table_pk = t.id) c
LEFT JOIN LATERAL (SELECT e.commit_id, coalesce(e.commit_time, e.received_at) AS at
                   FROM tms_commit_events e WHERE e.table_pk = t.id
                   ORDER BY e.seq DESC LIMIT 1) l ON true;
