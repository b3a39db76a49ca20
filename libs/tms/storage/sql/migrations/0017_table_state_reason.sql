-- v17: why a table is in its state.
--
-- A table can be paused by TMS itself, not only by a person: an admin's UpdateCatalog that
-- shrinks the catalog's allowed locations pauses the tables now outside them, and the owner
-- must be able to read why (GetTable, ListTables). A person's pause and resume set it too.
-- Empty: no reason recorded (tables paused before this column).

ALTER TABLE tms_tables ADD COLUMN state_reason text NOT NULL DEFAULT ''
    CHECK (length(state_reason) <= 1000);

-- the view's t.* was expanded when it was made: made again to carry the new column
DROP VIEW tms_tables_view;
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
