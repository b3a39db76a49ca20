-- Named queries used by tms.storage.postgres. Each starts with "-- name: <name>".
-- Parameters are always psycopg named placeholders; no SQL is built in Python.

-- name: insert_table
INSERT INTO tms_tables (table_id, format, catalog, namespace, table_name, base_path,
                        catalog_properties, owner, queue, priority, policy)
VALUES (%(table_id)s, %(format)s, %(catalog)s, %(namespace)s, %(table_name)s, %(base_path)s,
        %(catalog_properties)s, %(owner)s, %(queue)s, %(priority)s, %(policy)s)
ON CONFLICT (table_id) DO NOTHING
RETURNING id;

-- name: get_table
-- Commit count and last commit are read from the events when asked for (tms_tables_view), so
-- the intake path never has to update the table's row.
SELECT * FROM tms_tables_view WHERE table_id = %(table_id)s;

-- name: get_table_by_pk
SELECT * FROM tms_tables_view WHERE id = %(pk)s;

-- name: list_tables
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
RETURNING id;

-- name: set_table_state
UPDATE tms_tables
SET state = %(state)s::tms_table_state,
    next_check_at = CASE WHEN %(state)s = 'ACTIVE' THEN now() ELSE next_check_at END,
    updated_at = now()
WHERE table_id = %(table_id)s
RETURNING id;

-- name: delete_table
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

-- name: notify_commits
-- The one intake path for commits (single and batch), inserts only: the events (idempotent on
-- (table, commit id); the caller has removed duplicates within the batch) and the tables'
-- "new commits" marks. Returns the known tables and the events newly recorded.
WITH input AS (
    SELECT * FROM unnest(%(table_ids)s::text[], %(commit_ids)s::text[],
                         %(commit_times)s::timestamptz[], %(files_added)s::bigint[],
                         %(bytes_added)s::bigint[], %(operation_types)s::text[],
                         %(traceparents)s::text[])
        WITH ORDINALITY AS i(table_id, commit_id, commit_time, files_added, bytes_added,
                             operation_type, traceparent, ord)
), known AS (
    SELECT id, table_id FROM tms_tables WHERE table_id = ANY(%(table_ids)s)
), ins AS (
    INSERT INTO tms_commit_events (table_pk, commit_id, commit_time, files_added, bytes_added,
                                   operation_type)
    SELECT k.id, i.commit_id, i.commit_time, i.files_added, i.bytes_added, i.operation_type
    FROM input i JOIN known k ON k.table_id = i.table_id
    ORDER BY i.ord  -- seq follows the writer's order: the last one is the latest commit
    ON CONFLICT (table_pk, commit_id) DO NOTHING
    RETURNING table_pk, commit_id
), dirty AS (
    -- a mark already waiting keeps the trace of the commit that set it
    INSERT INTO tms_dirty_tables (table_pk, traceparent)
    SELECT DISTINCT ON (ins.table_pk) ins.table_pk, nullif(i.traceparent, '')
    FROM ins JOIN known k ON k.id = ins.table_pk
    JOIN input i ON i.table_id = k.table_id AND i.commit_id = ins.commit_id
    ORDER BY ins.table_pk, i.ord
    ON CONFLICT (table_pk) DO NOTHING
)
SELECT k.table_id, NULL::text AS commit_id FROM known k
UNION ALL
SELECT k.table_id, ins.commit_id FROM ins JOIN known k ON k.id = ins.table_pk;

-- name: due_tables
-- Tables with undecided commits, then tables whose pull check is due.
(SELECT table_pk AS id FROM tms_dirty_tables ORDER BY since LIMIT %(limit)s)
UNION
(SELECT id FROM tms_tables
  WHERE state = 'ACTIVE' AND next_check_at <= now()
  ORDER BY next_check_at LIMIT %(limit)s);

-- name: mark_dirty
INSERT INTO tms_dirty_tables (table_pk, traceparent) VALUES (%(pk)s, %(traceparent)s)
ON CONFLICT (table_pk) DO NOTHING;

-- name: finish_decision
UPDATE tms_tables
SET next_check_at = now() + make_interval(secs => %(next_check_s)s)
WHERE id = %(pk)s;

-- name: insert_operation
-- The partial unique index refuses a second active operation for (table, action): a
-- duplicate decision, even from a split-brain scheduler, inserts nothing.
INSERT INTO tms_operations (table_pk, action, priority, trigger, reason, params, metrics,
                            max_attempts, queue, traceparent)
VALUES (%(table_pk)s, %(action)s, %(priority)s, %(trigger)s, %(reason)s, %(params)s,
        %(metrics)s, %(max_attempts)s, %(queue)s, %(traceparent)s)
ON CONFLICT (table_pk, action) WHERE state IN ('QUEUED', 'RUNNING') DO NOTHING
RETURNING id;

-- name: active_operation
SELECT id FROM tms_operations
WHERE table_pk = %(table_pk)s AND action = %(action)s AND state IN ('QUEUED', 'RUNNING');

-- name: insert_manual_operation
INSERT INTO tms_operations (table_pk, action, priority, trigger, reason, params, metrics,
                            max_attempts, retry_of, queue)
VALUES (%(table_pk)s, %(action)s, %(priority)s, %(trigger)s, %(reason)s, %(params)s, '{}',
        %(max_attempts)s, %(retry_of)s, %(queue)s)
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

-- name: claim_lock
-- Claims take turns (transaction-scoped), so a queue's running count read by the claim below
-- is still true when it commits: per-queue limits hold exactly across executors.
SELECT pg_advisory_xact_lock(%(key)s);

-- name: claim_operation
-- Highest priority first among operations due (retry backoff over), in the executor's queues,
-- whose queue is under its limit, of tables that run nothing else. The one-RUNNING-per-table
-- index is the final guard. The attempt's own record is written in the same statement.
WITH running AS (
    SELECT queue, count(*) AS n FROM tms_operations WHERE state = 'RUNNING' GROUP BY queue
), c AS (
    SELECT o.id FROM tms_operations o
    JOIN tms_tables t ON t.id = o.table_pk AND t.state = 'ACTIVE'
    LEFT JOIN tms_queues ql ON ql.name = o.queue
    LEFT JOIN running r ON r.queue = o.queue
    WHERE o.state = 'QUEUED' AND o.run_after <= now()
      AND (%(queues)s::text[] IS NULL OR o.queue = ANY(%(queues)s::text[]))
      AND (ql.max_running IS NULL OR coalesce(r.n, 0) < ql.max_running)
      AND NOT EXISTS (SELECT 1 FROM tms_operations x
                      WHERE x.table_pk = o.table_pk AND x.state = 'RUNNING')
    ORDER BY o.priority DESC, o.id
    LIMIT 1
    FOR UPDATE OF o SKIP LOCKED
), claimed AS (
    UPDATE tms_operations o
    SET state = 'RUNNING', attempt = o.attempt + 1, lease_owner = %(owner)s,
        lease_expires_at = now() + make_interval(secs => %(lease_s)s), started_at = now(),
        error = NULL, log_tail = NULL, exit_code = NULL, engine_handle = NULL, result = NULL
    FROM c
    WHERE o.id = c.id AND o.state = 'QUEUED'
    RETURNING o.*
), attempt AS (
    INSERT INTO tms_attempts (operation_id, attempt, executor_id, started_at)
    SELECT id, attempt, lease_owner, started_at FROM claimed
)
SELECT * FROM claimed;

-- name: renew_lease
-- Also tells the executor whether a cancel was requested.
UPDATE tms_operations
SET lease_expires_at = now() + make_interval(secs => %(lease_s)s)
WHERE id = %(id)s AND state = 'RUNNING' AND attempt = %(attempt)s AND lease_owner = %(owner)s
RETURNING id, cancel_requested;

-- name: set_engine_handle
WITH o AS (
    UPDATE tms_operations SET engine_handle = %(engine_handle)s
    WHERE id = %(id)s AND state = 'RUNNING' AND attempt = %(attempt)s
      AND lease_owner = %(owner)s
    RETURNING id, attempt
), a AS (
    UPDATE tms_attempts a SET engine_handle = %(engine_handle)s
    FROM o WHERE a.operation_id = o.id AND a.attempt = o.attempt
)
SELECT id FROM o;

-- name: finish_operation
-- Fenced by id, state, attempt and owner: a stale attempt's late write changes nothing.
WITH o AS (
    UPDATE tms_operations
    SET state = %(state)s, finished_at = now(), lease_expires_at = NULL, result = %(result)s,
        error = %(error)s, log_tail = %(log_tail)s, exit_code = %(exit_code)s
    WHERE id = %(id)s AND state = 'RUNNING' AND attempt = %(attempt)s
      AND lease_owner = %(owner)s
    RETURNING id, attempt
), a AS (
    UPDATE tms_attempts a
    SET state = %(state)s::text::tms_attempt_state, finished_at = now(), result = %(result)s,
        error = %(error)s, log_tail = %(log_tail)s, exit_code = %(exit_code)s
    FROM o WHERE a.operation_id = o.id AND a.attempt = o.attempt
)
SELECT id FROM o;

-- name: retry_operation
-- A failed attempt with attempts left goes back to the queue, claimable after the backoff.
-- Fenced like finish_operation; a pending cancel wins over the retry (no row: caller finishes).
WITH o AS (
    UPDATE tms_operations
    SET state = 'QUEUED', lease_owner = NULL, lease_expires_at = NULL,
        run_after = now() + make_interval(secs => %(delay_s)s), result = %(result)s,
        error = %(error)s, log_tail = %(log_tail)s, exit_code = %(exit_code)s
    WHERE id = %(id)s AND state = 'RUNNING' AND attempt = %(attempt)s
      AND lease_owner = %(owner)s AND attempt < max_attempts AND NOT cancel_requested
    RETURNING id, attempt, run_after
), a AS (
    UPDATE tms_attempts a
    SET state = 'FAILED', finished_at = now(), result = %(result)s, error = %(error)s,
        log_tail = %(log_tail)s, exit_code = %(exit_code)s, retry_at = o.run_after
    FROM o WHERE a.operation_id = o.id AND a.attempt = o.attempt
)
SELECT id FROM o;

-- name: requeue_expired
-- Reaper: RUNNING past its lease goes back to the queue while attempts remain.
WITH o AS (
    UPDATE tms_operations
    SET state = 'QUEUED', lease_owner = NULL, lease_expires_at = NULL, run_after = now(),
        error = 'lease expired (executor lost) on attempt ' || attempt
    WHERE state = 'RUNNING' AND lease_expires_at < now() AND attempt < max_attempts
      AND NOT cancel_requested
    RETURNING id, attempt, error
), a AS (
    UPDATE tms_attempts a SET state = 'LOST', finished_at = now(), error = o.error
    FROM o WHERE a.operation_id = o.id AND a.attempt = o.attempt AND a.state = 'RUNNING'
)
SELECT id, attempt FROM o;

-- name: cancel_expired
-- Reaper: a cancel was requested and the executor vanished: the cancel wins.
WITH o AS (
    UPDATE tms_operations
    SET state = 'CANCELLED', finished_at = now(), lease_expires_at = NULL,
        error = 'cancelled (executor lost before it stopped the job)'
    WHERE state = 'RUNNING' AND lease_expires_at < now() AND cancel_requested
    RETURNING id, attempt, error
), a AS (
    UPDATE tms_attempts a SET state = 'LOST', finished_at = now(), error = o.error
    FROM o WHERE a.operation_id = o.id AND a.attempt = o.attempt AND a.state = 'RUNNING'
)
SELECT id, attempt FROM o;

-- name: fail_expired
WITH o AS (
    UPDATE tms_operations
    SET state = 'FAILED', finished_at = now(), lease_expires_at = NULL,
        error = 'lease expired (executor lost) on the last attempt ' || attempt
    WHERE state = 'RUNNING' AND lease_expires_at < now() AND attempt >= max_attempts
      AND NOT cancel_requested
    RETURNING id, attempt, error
), a AS (
    UPDATE tms_attempts a SET state = 'LOST', finished_at = now(), error = o.error
    FROM o WHERE a.operation_id = o.id AND a.attempt = o.attempt AND a.state = 'RUNNING'
)
SELECT id, attempt FROM o;

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
WITH o AS (
    UPDATE tms_operations
    SET state = 'QUEUED', lease_owner = NULL, lease_expires_at = NULL, run_after = now(),
        error = %(error)s
    WHERE id = %(id)s AND state = 'RUNNING' AND attempt = %(attempt)s
      AND lease_owner = %(owner)s
    RETURNING id, attempt
), a AS (
    UPDATE tms_attempts a SET state = 'HANDED_BACK', finished_at = now(), error = %(error)s
    FROM o WHERE a.operation_id = o.id AND a.attempt = o.attempt
)
SELECT id FROM o;

-- name: forget_request
-- The request failed after reserving its id: free the id so a corrected retry can use it.
DELETE FROM tms_requests WHERE request_id = %(request_id)s AND resource = '';

-- name: prune_commit_events
-- Oldest first, one small batch; what goes is folded into the tables' counters.
WITH doomed AS (
    SELECT table_pk, commit_id FROM tms_commit_events
    WHERE received_at < now() - make_interval(secs => %(retention_s)s)
    ORDER BY received_at
    LIMIT %(batch)s
    FOR UPDATE SKIP LOCKED
), gone AS (
    DELETE FROM tms_commit_events e USING doomed d
    WHERE e.table_pk = d.table_pk AND e.commit_id = d.commit_id
    RETURNING e.table_pk, e.commit_id, coalesce(e.commit_time, e.received_at) AS at, e.seq
), folded AS (
    UPDATE tms_tables t
    SET pruned_commits = t.pruned_commits + g.n,
        pruned_last_commit_id = g.last_id, pruned_last_commit_time = g.last_at
    FROM (SELECT table_pk, count(*) AS n,
                 (array_agg(commit_id ORDER BY seq DESC))[1] AS last_id,
                 (array_agg(at ORDER BY seq DESC))[1] AS last_at
          FROM gone GROUP BY table_pk) g
    WHERE t.id = g.table_pk
)
SELECT count(*) AS pruned FROM gone;

-- name: prune_operations
-- Finished operations past their retention, oldest first, one small batch.
DELETE FROM tms_operations
WHERE id IN (SELECT id FROM tms_operations
             WHERE state IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
               AND finished_at < now() - make_interval(secs => %(retention_s)s)
             ORDER BY finished_at
             LIMIT %(batch)s)
RETURNING id;

-- name: prune_requests
DELETE FROM tms_requests
WHERE request_id IN (SELECT request_id FROM tms_requests
                     WHERE created_at < now() - make_interval(secs => %(retention_s)s)
                     LIMIT %(batch)s)
RETURNING request_id;

-- name: begin_decision
-- One round trip to start a decision: consume the table's "new commits" mark and read the
-- table (without the commit count, which a decision does not need and which costs a scan).
WITH mark AS (
    DELETE FROM tms_dirty_tables WHERE table_pk = %(pk)s RETURNING table_pk, traceparent
)
SELECT t.*, EXISTS (SELECT 1 FROM mark) AS had_commits,
       (SELECT traceparent FROM mark) AS traceparent,
       0::bigint AS commit_count, NULL::text AS last_commit_id,
       NULL::timestamptz AS last_commit_time
FROM tms_tables t
WHERE t.id = %(pk)s;

-- name: last_succeeded_by_action
SELECT DISTINCT ON (action) * FROM tms_operations
WHERE table_pk = %(table_pk)s AND state = 'SUCCEEDED'
ORDER BY action, finished_at DESC;

-- name: upsert_decisions
-- Every action's decision for one table in one statement.
INSERT INTO tms_decisions (table_pk, action, decided_at, should_run, reason, metrics,
                           operation_id, scheduler_id)
SELECT %(table_pk)s, u.action, now(), u.should_run, u.reason, u.metrics, u.operation_id,
       %(scheduler_id)s
FROM unnest(%(actions)s::text[], %(should_run)s::boolean[], %(reasons)s::text[],
            %(metrics)s::jsonb[], %(operation_ids)s::bigint[])
     AS u(action, should_run, reason, metrics, operation_id)
ON CONFLICT (table_pk, action) DO UPDATE
SET decided_at = excluded.decided_at, should_run = excluded.should_run,
    reason = excluded.reason, metrics = excluded.metrics,
    operation_id = excluded.operation_id, scheduler_id = excluded.scheduler_id;

-- name: list_attempts
SELECT * FROM tms_attempts WHERE operation_id = ANY(%(ids)s::bigint[])
ORDER BY operation_id, attempt;

-- name: upsert_queue
INSERT INTO tms_queues (name, max_running) VALUES (%(name)s, %(max_running)s)
ON CONFLICT (name) DO UPDATE SET max_running = EXCLUDED.max_running, updated_at = now()
RETURNING name;

-- name: list_queues
-- Every queue that has a limit or operations, with what it holds now.
WITH counts AS (
    SELECT queue, count(*) FILTER (WHERE state = 'QUEUED') AS queued,
           count(*) FILTER (WHERE state = 'RUNNING') AS running
    FROM tms_operations WHERE state IN ('QUEUED', 'RUNNING') GROUP BY queue
)
SELECT coalesce(q.name, c.queue) AS name, q.max_running,
       coalesce(c.queued, 0) AS queued, coalesce(c.running, 0) AS running
FROM tms_queues q FULL JOIN counts c ON c.queue = q.name
ORDER BY 1;

-- name: begin_decisions
-- Shard mode, one round trip for a whole batch: the due tables of the shards this scheduler
-- holds (undecided commits first, then due pull checks), their marks consumed. The shards are
-- exclusively ours, so nothing else picks these rows meanwhile.
WITH due AS (
    (SELECT table_pk AS id FROM tms_dirty_tables
     WHERE table_pk %% %(num_shards)s = ANY(%(shards)s::int[])
     ORDER BY since LIMIT %(limit)s)
    UNION
    (SELECT id FROM tms_tables
     WHERE state = 'ACTIVE' AND next_check_at <= now()
       AND id %% %(num_shards)s = ANY(%(shards)s::int[])
     ORDER BY next_check_at LIMIT %(limit)s)
), mark AS (
    DELETE FROM tms_dirty_tables d USING due WHERE d.table_pk = due.id
    RETURNING d.table_pk, d.traceparent
)
SELECT t.*, EXISTS (SELECT 1 FROM mark m WHERE m.table_pk = t.id) AS had_commits,
       (SELECT m.traceparent FROM mark m WHERE m.table_pk = t.id) AS traceparent,
       0::bigint AS commit_count, NULL::text AS last_commit_id,
       NULL::timestamptz AS last_commit_time
FROM tms_tables t JOIN due ON due.id = t.id
ORDER BY t.id;

-- name: last_succeeded_for_tables
SELECT DISTINCT ON (table_pk, action) * FROM tms_operations
WHERE table_pk = ANY(%(pks)s::bigint[]) AND state = 'SUCCEEDED'
ORDER BY table_pk, action, finished_at DESC;

-- name: finish_decisions
-- Every decision of a batch and every table's next check, in one statement.
WITH d AS (
    INSERT INTO tms_decisions (table_pk, action, decided_at, should_run, reason, metrics,
                               operation_id, scheduler_id)
    SELECT u.table_pk, u.action, now(), u.should_run, u.reason, u.metrics, u.operation_id,
           %(scheduler_id)s
    FROM unnest(%(table_pks)s::bigint[], %(actions)s::text[], %(should_run)s::boolean[],
                %(reasons)s::text[], %(metrics)s::jsonb[], %(operation_ids)s::bigint[])
         AS u(table_pk, action, should_run, reason, metrics, operation_id)
    -- a table deregistered meanwhile has no row to point at any more
    WHERE EXISTS (SELECT 1 FROM tms_tables t WHERE t.id = u.table_pk)
    ON CONFLICT (table_pk, action) DO UPDATE
    SET decided_at = excluded.decided_at, should_run = excluded.should_run,
        reason = excluded.reason, metrics = excluded.metrics,
        operation_id = excluded.operation_id, scheduler_id = excluded.scheduler_id
)
UPDATE tms_tables t SET next_check_at = now() + make_interval(secs => n.next_check_s)
FROM unnest(%(check_pks)s::bigint[], %(next_check_s)s::float8[]) AS n(pk, next_check_s)
WHERE t.id = n.pk;

-- name: queue_stats
-- Metrics: what waits in each queue, per action, and for how long.
SELECT queue, action, count(*) AS queued,
       extract(epoch FROM now() - min(created_at))::float8 AS oldest_age_s
FROM tms_operations WHERE state = 'QUEUED'
GROUP BY queue, action;

-- name: overdue_tables
-- Metrics: active tables the schedulers have not looked at in time (a pull check or a commit
-- mark waiting longer than the grace).
SELECT count(*) AS n FROM tms_tables t
WHERE t.state = 'ACTIVE'
  AND (t.next_check_at < now() - make_interval(secs => %(grace_s)s)
       OR EXISTS (SELECT 1 FROM tms_dirty_tables d
                  WHERE d.table_pk = t.id
                    AND d.since < now() - make_interval(secs => %(grace_s)s)));

-- name: attempt_set_progress
-- The latest Spark progress of the running attempt, fenced like set_engine_handle (id, state,
-- attempt, lease owner). The attempt's own state is checked too: a finish that commits while
-- this waits for the attempt row makes it write nothing.
UPDATE tms_attempts a SET progress = %(progress)s
FROM tms_operations o
WHERE o.id = %(id)s AND o.state = 'RUNNING' AND o.attempt = %(attempt)s
  AND o.lease_owner = %(owner)s
  AND a.operation_id = o.id AND a.attempt = o.attempt AND a.state = 'RUNNING'
RETURNING a.operation_id AS id;
