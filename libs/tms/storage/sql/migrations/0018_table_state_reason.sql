-- v18: why a table is in its state.
--
-- A table can be paused by TMS itself, not only by a person: an admin's UpdateCatalog that
-- shrinks the catalog's allowed locations pauses the tables now outside them, and the owner
-- must be able to read why (GetTable, ListTables). A person's pause and resume set it too.
-- Empty: no reason recorded (tables paused before this column).

ALTER TABLE tms_tables ADD COLUMN state_reason text NOT NULL DEFAULT ''
    CHECK (length(state_reason) <= 1000);

-- the view's t.* was expanded when it was made: made again to carry the new column (with the
-- last decision and operation v16 added)
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
