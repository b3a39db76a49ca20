-- v16: each table's health score, the figures behind it and their history (docs/health.md).
--
-- tms_tables.health_score: the score of the last inspection (NULL until the first), indexed
-- with table_id so ListTables filters and sorts by health with keyset pagination (either
-- way, tables never inspected last: hence the two coalesced keys). The
-- scheduler writes it only when it changed, so an unchanged fleet costs no row versions.
-- tms_table_health: the parts of that score and the files per partition (the worst 100), one
-- row per table, replaced at every inspection.
-- tms_table_history: the figures of inspections over time, downsampled by the leader:
-- resolution 0 = as inspected (the last day), 1 = the last inspection of an hour (30 days),
-- 2 = the last inspection of a UTC day (a year); older points are deleted. Columns are
-- ordered widest first so that rows pack without alignment padding.

ALTER TABLE tms_tables ADD COLUMN health_score smallint
    CHECK (health_score BETWEEN 0 AND 100);
CREATE INDEX tms_tables_health_asc ON tms_tables ((coalesce(health_score, 101)), table_id);
CREATE INDEX tms_tables_health_desc ON tms_tables ((coalesce(health_score, -1)), table_id);

CREATE TABLE tms_table_health (
    table_pk bigint PRIMARY KEY REFERENCES tms_tables (id) ON DELETE CASCADE,
    inspected_at timestamptz NOT NULL,
    score smallint NOT NULL CHECK (score BETWEEN 0 AND 100),
    parts jsonb NOT NULL DEFAULT '[]',
    partitions jsonb NOT NULL DEFAULT '[]'
);

CREATE TABLE tms_table_history (
    table_pk bigint NOT NULL REFERENCES tms_tables (id) ON DELETE CASCADE,
    at timestamptz NOT NULL,
    data_files bigint NOT NULL,
    small_files bigint NOT NULL,
    mean_file_bytes bigint NOT NULL,
    total_bytes bigint NOT NULL,
    delete_files integer NOT NULL,
    snapshots integer NOT NULL,
    manifests integer NOT NULL,
    health_score smallint CHECK (health_score BETWEEN 0 AND 100),
    resolution smallint NOT NULL DEFAULT 0 CHECK (resolution IN (0, 1, 2)),
    PRIMARY KEY (table_pk, at)
);

-- the view's t.* picks up the new column (and checked_at, added after the view was made);
-- every read of a table also gets its last changed decision and its newest operation
DROP VIEW tms_tables_view;
CREATE VIEW tms_tables_view AS
SELECT t.*,
       t.pruned_commits + c.n AS commit_count,
       coalesce(l.commit_id, t.pruned_last_commit_id) AS last_commit_id,
       coalesce(l.at, t.pruned_last_commit_time) AS last_commit_time,
       ld.last_decision, lo.last_operation_id, lo.last_operation_state
FROM tms_tables t
CROSS JOIN LATERAL (SELECT count(*) AS n FROM tms_commit_events e WHERE e.table_pk = t.id) c
LEFT JOIN LATERAL (SELECT e.commit_id, coalesce(e.commit_time, e.received_at) AS at
                   FROM tms_commit_events e WHERE e.table_pk = t.id
                   ORDER BY e.seq DESC LIMIT 1) l ON true
LEFT JOIN LATERAL (SELECT d.action || ': ' || d.reason AS last_decision
                   FROM tms_decisions d WHERE d.table_pk = t.id
                   ORDER BY d.decided_at DESC, d.action LIMIT 1) ld ON true
LEFT JOIN LATERAL (SELECT o.id AS last_operation_id, o.state::text AS last_operation_state
                   FROM tms_operations o WHERE o.table_pk = t.id
                   ORDER BY o.id DESC LIMIT 1) lo ON true;
