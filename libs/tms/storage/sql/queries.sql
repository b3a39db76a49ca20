-- Named queries used by tms.storage.postgres. Each starts with "-- name: <name>".
-- Parameters are always psycopg named placeholders; no SQL is built in Python.

-- name: insert_table
INSERT INTO tms_tables (table_id, format, catalog, namespace, table_name, base_path,
                        catalog_properties, owner, queue, priority, policy)
VALUES (%(table_id)s, %(format)s, %(catalog)s, %(namespace)s, %(table_name)s, %(base_path)s,
        %(catalog_properties)s, %(owner)s, %(queue)s, %(priority)s, %(policy)s)
ON CONFLICT (table_id) DO NOTHING
RETURNING *;

-- name: get_table
SELECT * FROM tms_tables WHERE table_id = %(table_id)s;

-- name: get_table_by_pk
SELECT * FROM tms_tables WHERE id = %(pk)s;

-- name: list_tables
SELECT * FROM tms_tables
WHERE table_id > %(after)s
  AND (%(format)s::text IS NULL OR format = %(format)s)
  AND (%(state)s::tms_table_state IS NULL OR state = %(state)s::tms_table_state)
  AND (%(owner)s::text IS NULL OR owner = %(owner)s)
  AND (%(queue)s::text IS NULL OR queue = %(queue)s)
ORDER BY table_id
LIMIT %(limit)s;

-- name: table_owners
SELECT table_id, owner FROM tms_tables WHERE table_id = ANY(%(table_ids)s);

-- name: update_table
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
RETURNING *;

-- name: set_table_state
UPDATE tms_tables
SET state = %(state)s::tms_table_state,
    next_check_at = CASE WHEN %(state)s = 'ACTIVE' THEN now() ELSE next_check_at END,
    updated_at = now()
WHERE table_id = %(table_id)s
RETURNING *;

-- name: delete_table
DELETE FROM tms_tables t
WHERE t.table_id = %(table_id)s
  AND (%(force)s OR NOT EXISTS (SELECT 1 FROM tms_operations o
                                WHERE o.table_pk = t.id AND o.state = 'RUNNING'))
RETURNING id;

-- name: claim_request
-- request_id idempotency: the first caller inserts; a replay (or a concurrent twin, once the
-- first commits) finds the existing row.
INSERT INTO tms_requests (request_id, method, fingerprint, resource)
VALUES (%(request_id)s, %(method)s, %(fingerprint)s, %(resource)s)
ON CONFLICT (request_id) DO NOTHING
RETURNING request_id;

-- name: get_request
SELECT * FROM tms_requests WHERE request_id = %(request_id)s;

-- name: set_request_resource
UPDATE tms_requests SET resource = %(resource)s WHERE request_id = %(request_id)s;

-- name: lock_tables_for_commits
-- A batch touching several tables locks their rows in id order first, so two concurrent
-- batches can never deadlock on each other's rows.
SELECT id FROM tms_tables WHERE table_id = ANY(%(table_ids)s) ORDER BY id FOR NO KEY UPDATE;

-- name: notify_commits
-- The one intake path for commits (single and batch): record each event, idempotent on
-- (table, commit id), and bump each table's commit sequence by the number of new events.
-- Returns one row per input, in input order: known table? newly recorded?
WITH input AS (
    SELECT * FROM unnest(%(table_ids)s::text[], %(commit_ids)s::text[],
                         %(commit_times)s::timestamptz[], %(files_added)s::bigint[],
                         %(bytes_added)s::bigint[], %(operation_types)s::text[])
        WITH ORDINALITY AS i(table_id, commit_id, commit_time, files_added, bytes_added,
                             operation_type, idx)
), known AS (
    -- KEY SHARE: a table being deregistered right now is waited for, then seen as gone,
    -- instead of failing the insert below on its foreign key
    SELECT id, table_id FROM tms_tables WHERE table_id = ANY(%(table_ids)s) FOR KEY SHARE
), resolved AS (
    SELECT i.*, t.id AS table_pk,
           min(i.idx) OVER (PARTITION BY i.table_id, i.commit_id) AS first_idx
    FROM input i LEFT JOIN known t ON t.table_id = i.table_id
), ins AS (
    INSERT INTO tms_commit_events (table_pk, commit_id, commit_time, files_added, bytes_added,
                                   operation_type)
    SELECT table_pk, commit_id, commit_time, files_added, bytes_added, operation_type
    FROM resolved
    WHERE table_pk IS NOT NULL AND idx = first_idx
    ON CONFLICT (table_pk, commit_id) DO NOTHING
    RETURNING table_pk, commit_id
), fresh AS (
    SELECT r.* FROM resolved r JOIN ins ON ins.table_pk = r.table_pk
                                      AND ins.commit_id = r.commit_id AND r.idx = r.first_idx
), upd AS (
    UPDATE tms_tables t
    SET commit_seq = t.commit_seq + c.n, last_commit_id = c.last_id,
        last_commit_time = coalesce(c.last_time, now()), updated_at = now()
    FROM (SELECT table_pk, count(*) AS n,
                 (array_agg(commit_id ORDER BY idx DESC))[1] AS last_id,
                 (array_agg(commit_time ORDER BY idx DESC))[1] AS last_time
          FROM fresh GROUP BY table_pk) c
    WHERE t.id = c.table_pk
    RETURNING t.id
)
SELECT r.idx, r.table_pk IS NOT NULL AS known,
       EXISTS (SELECT 1 FROM fresh f WHERE f.idx = r.idx) AS inserted
FROM resolved r
ORDER BY r.idx;

-- name: due_tables
-- Tables with commits not yet decided on, then tables whose pull check is due.
(SELECT id, commit_seq FROM tms_tables
  WHERE state = 'ACTIVE' AND commit_seq > decided_seq
  ORDER BY id LIMIT %(limit)s)
UNION
(SELECT id, commit_seq FROM tms_tables
  WHERE state = 'ACTIVE' AND next_check_at <= now()
  ORDER BY next_check_at LIMIT %(limit)s);

-- name: finish_decision
UPDATE tms_tables
SET decided_seq = GREATEST(decided_seq, %(seq)s),
    next_check_at = now() + make_interval(secs => %(next_check_s)s)
WHERE id = %(pk)s
RETURNING decided_seq;

-- name: upsert_decision
INSERT INTO tms_decisions (table_pk, action, decided_at, should_run, reason, metrics,
                           operation_id, scheduler_id)
VALUES (%(table_pk)s, %(action)s, now(), %(should_run)s, %(reason)s, %(metrics)s,
        %(operation_id)s, %(scheduler_id)s)
ON CONFLICT (table_pk, action) DO UPDATE
SET decided_at = excluded.decided_at, should_run = excluded.should_run,
    reason = excluded.reason, metrics = excluded.metrics,
    operation_id = excluded.operation_id, scheduler_id = excluded.scheduler_id;

-- name: list_decisions
SELECT * FROM tms_decisions WHERE table_pk = %(table_pk)s ORDER BY action;

-- name: insert_operation
-- The partial unique index refuses a second active operation for (table, action): a
-- duplicate decision, even from a split-brain scheduler, inserts nothing.
INSERT INTO tms_operations (table_pk, action, priority, trigger, reason, params, metrics,
                            max_attempts)
VALUES (%(table_pk)s, %(action)s, %(priority)s, %(trigger)s, %(reason)s, %(params)s,
        %(metrics)s, %(max_attempts)s)
ON CONFLICT (table_pk, action) WHERE state IN ('QUEUED', 'RUNNING') DO NOTHING
RETURNING id;

-- name: active_operation
SELECT id FROM tms_operations
WHERE table_pk = %(table_pk)s AND action = %(action)s AND state IN ('QUEUED', 'RUNNING');

-- name: insert_manual_operation
INSERT INTO tms_operations (table_pk, action, priority, trigger, reason, params, metrics,
                            max_attempts, retry_of)
VALUES (%(table_pk)s, %(action)s, %(priority)s, %(trigger)s, %(reason)s, %(params)s, '{}',
        %(max_attempts)s, %(retry_of)s)
ON CONFLICT (table_pk, action) WHERE state IN ('QUEUED', 'RUNNING') DO NOTHING
RETURNING id;

-- name: cancel_queued
UPDATE tms_operations
SET state = 'CANCELLED', finished_at = now(), error = %(reason)s
WHERE id = %(id)s AND state = 'QUEUED'
RETURNING id;

-- name: request_cancel
UPDATE tms_operations SET cancel_requested = true
WHERE id = %(id)s AND state = 'RUNNING'
RETURNING id;

-- name: explain_table
SELECT a.action, d.decided_at, d.should_run, d.reason, d.metrics, d.operation_id,
       d.scheduler_id,
       (SELECT o.id FROM tms_operations o
        WHERE o.table_pk = %(table_pk)s AND o.action = a.action
          AND o.state IN ('QUEUED', 'RUNNING')) AS active_id
FROM unnest(%(actions)s::text[]) WITH ORDINALITY AS a(action, pos)
LEFT JOIN tms_decisions d ON d.table_pk = %(table_pk)s AND d.action = a.action
ORDER BY a.pos;

-- name: last_finished_operation
SELECT * FROM tms_operations
WHERE table_pk = %(table_pk)s AND action = %(action)s AND state = 'SUCCEEDED'
ORDER BY finished_at DESC
LIMIT 1;

-- name: claim_operation
-- Highest priority first; skip rows other executors hold and tables that already run
-- something. The one-RUNNING-per-table index is the final guard if two claims race.
WITH c AS (
    SELECT o.id FROM tms_operations o
    JOIN tms_tables t ON t.id = o.table_pk AND t.state = 'ACTIVE'
    WHERE o.state = 'QUEUED'
      AND NOT EXISTS (SELECT 1 FROM tms_operations r
                      WHERE r.table_pk = o.table_pk AND r.state = 'RUNNING')
    ORDER BY o.priority DESC, o.id
    LIMIT 1
    FOR UPDATE OF o SKIP LOCKED
)
UPDATE tms_operations o
SET state = 'RUNNING', attempt = o.attempt + 1, lease_owner = %(owner)s,
    lease_expires_at = now() + make_interval(secs => %(lease_s)s), started_at = now(),
    error = NULL, log_tail = NULL, exit_code = NULL, engine_handle = NULL
FROM c
WHERE o.id = c.id AND o.state = 'QUEUED'
RETURNING o.*;

-- name: renew_lease
-- Also tells the executor whether a cancel was requested.
UPDATE tms_operations
SET lease_expires_at = now() + make_interval(secs => %(lease_s)s)
WHERE id = %(id)s AND state = 'RUNNING' AND attempt = %(attempt)s AND lease_owner = %(owner)s
RETURNING id, cancel_requested;

-- name: set_engine_handle
UPDATE tms_operations SET engine_handle = %(engine_handle)s
WHERE id = %(id)s AND state = 'RUNNING' AND attempt = %(attempt)s AND lease_owner = %(owner)s
RETURNING id;

-- name: finish_operation
-- Fenced by id, state, attempt and owner: a stale attempt's late write changes nothing.
UPDATE tms_operations
SET state = %(state)s, finished_at = now(), lease_expires_at = NULL, result = %(result)s,
    error = %(error)s, log_tail = %(log_tail)s, exit_code = %(exit_code)s
WHERE id = %(id)s AND state = 'RUNNING' AND attempt = %(attempt)s AND lease_owner = %(owner)s
RETURNING id;

-- name: requeue_expired
-- Reaper: RUNNING past its lease goes back to the queue while attempts remain.
UPDATE tms_operations
SET state = 'QUEUED', lease_owner = NULL, lease_expires_at = NULL,
    error = 'lease expired (executor lost) on attempt ' || attempt
WHERE state = 'RUNNING' AND lease_expires_at < now() AND attempt < max_attempts
  AND NOT cancel_requested
RETURNING id, attempt;

-- name: cancel_expired
-- Reaper: a cancel was requested and the executor vanished: the cancel wins.
UPDATE tms_operations
SET state = 'CANCELLED', finished_at = now(), lease_expires_at = NULL,
    error = 'cancelled (executor lost before it stopped the job)'
WHERE state = 'RUNNING' AND lease_expires_at < now() AND cancel_requested
RETURNING id, attempt;

-- name: fail_expired
UPDATE tms_operations
SET state = 'FAILED', finished_at = now(), lease_expires_at = NULL,
    error = 'lease expired (executor lost) on the last attempt ' || attempt
WHERE state = 'RUNNING' AND lease_expires_at < now() AND attempt >= max_attempts
  AND NOT cancel_requested
RETURNING id, attempt;

-- name: get_operation
SELECT o.*, t.table_id FROM tms_operations o JOIN tms_tables t ON t.id = o.table_pk
WHERE t.table_id = %(table_id)s AND o.id = %(id)s;

-- name: list_operations
-- Newest first; keyset pagination on id.
SELECT o.*, t.table_id FROM tms_operations o JOIN tms_tables t ON t.id = o.table_pk
WHERE (%(table_id)s::text IS NULL OR t.table_id = %(table_id)s)
  AND (%(state)s::tms_operation_state IS NULL OR o.state = %(state)s::tms_operation_state)
  AND (%(action)s::text IS NULL OR o.action = %(action)s)
  AND (%(created_after)s::timestamptz IS NULL OR o.created_at >= %(created_after)s)
  AND (%(created_before)s::timestamptz IS NULL OR o.created_at < %(created_before)s)
  AND o.id < %(before_id)s
ORDER BY o.id DESC
LIMIT %(limit)s;

-- name: advisory_lock
SELECT pg_advisory_lock(%(key)s);

-- name: advisory_unlock
SELECT pg_advisory_unlock(%(key)s);

-- name: create_migrations_table
CREATE TABLE IF NOT EXISTS tms_schema_migrations (
    version     integer PRIMARY KEY,
    name        text NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
);

-- name: applied_migrations
SELECT version FROM tms_schema_migrations ORDER BY version;

-- name: record_migration
INSERT INTO tms_schema_migrations (version, name) VALUES (%(version)s, %(name)s);

-- name: ping
SELECT 1;

-- name: release_operation
-- Graceful hand-back (executor shutting down): the operation returns to the queue at once
-- instead of waiting for its lease to expire. The attempt number stays, so fencing holds.
UPDATE tms_operations
SET state = 'QUEUED', lease_owner = NULL, lease_expires_at = NULL, error = %(error)s
WHERE id = %(id)s AND state = 'RUNNING' AND attempt = %(attempt)s AND lease_owner = %(owner)s
RETURNING id;

-- name: forget_request
-- The request failed after reserving its id: free the id so a corrected retry can use it.
DELETE FROM tms_requests WHERE request_id = %(request_id)s AND resource = '';
