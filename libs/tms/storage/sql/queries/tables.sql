-- Tables: registration, reads with their statistics, owner changes, pause/resume, removal.
-- A table's statistics (commit count, last commit) come from tms_tables_view, so the intake
-- path never has to update a table's row.

-- name: table_insert
INSERT INTO tms_tables (table_id, format, catalog, namespace, table_name, base_path,
                        catalog_properties, owner, queue, priority, policy)
VALUES (%(table_id)s, %(format)s, %(catalog)s, %(namespace)s, %(table_name)s, %(base_path)s,
        %(catalog_properties)s, %(owner)s, %(queue)s, %(priority)s, %(policy)s)
ON CONFLICT (table_id) DO NOTHING
RETURNING id;

-- name: table_get
SELECT * FROM tms_tables_view WHERE table_id = %(table_id)s;

-- name: table_get_by_pk
SELECT * FROM tms_tables_view WHERE id = %(pk)s;

-- name: table_get_settings_by_pk
-- What the executor needs to build a job: the owner's settings, not the statistics.
SELECT * FROM tms_tables WHERE id = %(pk)s;

-- name: table_list
SELECT * FROM tms_tables_view
WHERE table_id > %(after)s
  AND (%(format)s::text IS NULL OR format = %(format)s)
  AND (%(state)s::tms_table_state IS NULL OR state = %(state)s::tms_table_state)
  AND (%(owner)s::text IS NULL OR owner = %(owner)s)
  AND (%(queue)s::text IS NULL OR queue = %(queue)s)
ORDER BY table_id
LIMIT %(limit)s;

-- name: table_owners
SELECT table_id, owner FROM tms_tables WHERE table_id = ANY(%(table_ids)s);

-- name: table_update
-- Field-mask update: only the fields whose set_* flag is true change.
UPDATE tms_tables
SET owner = CASE WHEN %(set_owner)s THEN %(owner)s ELSE owner END,
    queue = CASE WHEN %(set_queue)s THEN %(queue)s ELSE queue END,
    priority = CASE WHEN %(set_priority)s THEN %(priority)s ELSE priority END,
    policy = CASE WHEN %(set_policy)s THEN %(policy)s ELSE policy END,
    catalog_properties = CASE WHEN %(set_catalog_properties)s THEN %(catalog_properties)s
                              ELSE catalog_properties END,
    -- a new policy deserves a fresh decision
    next_check_at = CASE WHEN %(set_policy)s THEN now() ELSE next_check_at END,
    updated_at = now()
WHERE table_id = %(table_id)s
RETURNING id;

-- name: table_set_state
UPDATE tms_tables
SET state = %(state)s::tms_table_state,
    next_check_at = CASE WHEN %(state)s = 'ACTIVE' THEN now() ELSE next_check_at END,
    updated_at = now()
WHERE table_id = %(table_id)s
RETURNING id;

-- name: table_delete
-- The table with its events and mark; its operations and decisions go by ON DELETE CASCADE.
WITH gone AS (
    DELETE FROM tms_tables t
    WHERE t.table_id = %(table_id)s
      AND (%(force)s OR NOT EXISTS (SELECT 1 FROM tms_operations o
                                    WHERE o.table_pk = t.id AND o.state = 'RUNNING'))
    RETURNING id
), events AS (
    DELETE FROM tms_commit_events WHERE table_pk IN (SELECT id FROM gone)
), marks AS (
    DELETE FROM tms_dirty_tables WHERE table_pk IN (SELECT id FROM gone)
)
SELECT id FROM gone;

-- name: table_count_overdue
-- Metrics: active tables the schedulers have not looked at in time (a pull check or a commit
-- mark waiting longer than the grace).
SELECT count(*) AS n FROM tms_tables t
WHERE t.state = 'ACTIVE'
  AND (t.next_check_at < now() - make_interval(secs => %(grace_s)s)
       OR EXISTS (SELECT 1 FROM tms_dirty_tables d
                  WHERE d.table_pk = t.id
                    AND d.since < now() - make_interval(secs => %(grace_s)s)));
