-- Operations: queued by a decision or by hand, claimed under a lease, ended once.
--
-- Every transition is fenced: a write that moves an operation out of RUNNING names the id,
-- the attempt and the lease owner it believes current, and changes nothing when another
-- attempt, the reaper or a cancel got there first. Ending an attempt's own record is the
-- function tms_attempt_close (migration 0008), called by each transition below.

-- name: operation_insert
-- The partial unique index refuses a second active operation for (table, action): a
-- duplicate decision, even from a split-brain scheduler, inserts nothing. The NOT EXISTS
-- guard skips the insert (and so the id sequence) in the common case of an operation
-- already active; the index still decides a race.
INSERT INTO tms_operations (table_pk, action, priority, trigger, reason, params, metrics,
                            max_attempts, queue, retry_of, traceparent, benefit, waits_for)
SELECT %(table_pk)s::bigint, %(action)s::text, %(priority)s::int, %(trigger)s::text,
       %(reason)s::text, %(params)s::jsonb, %(metrics)s::jsonb, %(max_attempts)s::int,
       %(queue)s::text, %(retry_of)s::bigint, %(traceparent)s::text, %(benefit)s::float8,
       %(waits_for)s::text[]
WHERE NOT EXISTS (SELECT 1 FROM tms_operations
                  WHERE table_pk = %(table_pk)s AND action = %(action)s
                    AND state IN ('QUEUED', 'RUNNING'))
ON CONFLICT (table_pk, action) WHERE state IN ('QUEUED', 'RUNNING') DO NOTHING
RETURNING id;

-- name: operation_active
SELECT id FROM tms_operations
WHERE table_pk = %(table_pk)s AND action = %(action)s AND state IN ('QUEUED', 'RUNNING');

-- name: operation_list
-- Newest first, keyset pagination on id; one operation when id is given. A QUEUED one comes
-- with what holds it back: its table's state and running operation, an active operation it
-- waits for, its queue's limit and running count, and the database's clock to compare its
-- backoff with.
SELECT o.*, t.table_id, t.state::text AS table_state, now() AS db_now,
       busy.id AS busy_with, ql.max_running AS queue_limit, qr.n AS queue_running,
       w.id AS waiting_for, w.action AS waiting_for_action
FROM tms_operations o
JOIN tms_tables t ON t.id = o.table_pk
LEFT JOIN tms_queues ql ON o.state = 'QUEUED' AND ql.name = o.queue
LEFT JOIN LATERAL (SELECT x.id FROM tms_operations x
                   WHERE o.state = 'QUEUED' AND x.table_pk = o.table_pk
                     AND x.state = 'RUNNING' LIMIT 1) busy ON true
LEFT JOIN LATERAL (SELECT x.id, x.action FROM tms_operations x
                   WHERE o.state = 'QUEUED' AND cardinality(o.waits_for) > 0
                     AND x.table_pk = o.table_pk AND x.action = ANY(o.waits_for)
                     AND x.state IN ('QUEUED', 'RUNNING') LIMIT 1) w ON true
LEFT JOIN LATERAL (SELECT count(*) AS n FROM tms_operations r
                   WHERE ql.max_running IS NOT NULL AND r.queue = o.queue
                     AND r.state = 'RUNNING') qr ON true
WHERE (%(table_id)s::text IS NULL OR t.table_id = %(table_id)s)
  AND (%(id)s::bigint IS NULL OR o.id = %(id)s)
  AND (%(state)s::tms_operation_state IS NULL OR o.state = %(state)s::tms_operation_state)
  AND (%(action)s::text IS NULL OR o.action = %(action)s)
  AND (%(created_after)s::timestamptz IS NULL OR o.created_at >= %(created_after)s)
  AND (%(created_before)s::timestamptz IS NULL OR o.created_at < %(created_before)s)
  AND (%(queue)s::text IS NULL OR o.queue = %(queue)s)
  AND o.id < %(before_id)s
ORDER BY o.id DESC
LIMIT %(limit)s;

-- name: operation_list_ordered
-- As operation_list in another order (``order_by``): create_time (oldest first), -end_time
-- (latest ended first, unfinished last), priority (highest first, then oldest); keyset on
-- the (key, id) of the last row. Apart from create_time these sort every operation that
-- passes the filters: a separate statement, so the default order keeps its plan. A QUEUED one comes
-- with what holds it back: its table's state and running operation, an active operation it
-- waits for, its queue's limit and running count, and the database's clock to compare its
-- backoff with.
SELECT o.*, t.table_id, t.state::text AS table_state, now() AS db_now,
       busy.id AS busy_with, ql.max_running AS queue_limit, qr.n AS queue_running,
       w.id AS waiting_for, w.action AS waiting_for_action
FROM tms_operations o
JOIN tms_tables t ON t.id = o.table_pk
LEFT JOIN tms_queues ql ON o.state = 'QUEUED' AND ql.name = o.queue
LEFT JOIN LATERAL (SELECT x.id FROM tms_operations x
                   WHERE o.state = 'QUEUED' AND x.table_pk = o.table_pk
                     AND x.state = 'RUNNING' LIMIT 1) busy ON true
LEFT JOIN LATERAL (SELECT x.id, x.action FROM tms_operations x
                   WHERE o.state = 'QUEUED' AND cardinality(o.waits_for) > 0
                     AND x.table_pk = o.table_pk AND x.action = ANY(o.waits_for)
                     AND x.state IN ('QUEUED', 'RUNNING') LIMIT 1) w ON true
LEFT JOIN LATERAL (SELECT count(*) AS n FROM tms_operations r
                   WHERE ql.max_running IS NOT NULL AND r.queue = o.queue
                     AND r.state = 'RUNNING') qr ON true
WHERE (%(table_id)s::text IS NULL OR t.table_id = %(table_id)s)
  AND (%(id)s::bigint IS NULL OR o.id = %(id)s)
  AND (%(state)s::tms_operation_state IS NULL OR o.state = %(state)s::tms_operation_state)
  AND (%(action)s::text IS NULL OR o.action = %(action)s)
  AND (%(created_after)s::timestamptz IS NULL OR o.created_at >= %(created_after)s)
  AND (%(created_before)s::timestamptz IS NULL OR o.created_at < %(created_before)s)
  AND (%(queue)s::text IS NULL OR o.queue = %(queue)s)
  AND CASE %(order_by)s
        WHEN 'create_time' THEN o.id > %(after_id)s
        WHEN '-end_time' THEN (coalesce(o.finished_at, '-infinity'), o.id)
                              < (%(after_time)s::timestamptz, %(after_id)s)
        ELSE o.priority < %(after_priority)s
             OR (o.priority = %(after_priority)s AND o.id > %(after_id)s) END
ORDER BY CASE WHEN %(order_by)s = '-end_time'
              THEN coalesce(o.finished_at, '-infinity') END DESC,
         CASE WHEN %(order_by)s = '-end_time' THEN o.id END DESC,
         CASE WHEN %(order_by)s = 'priority' THEN o.priority END DESC,
         o.id
LIMIT %(limit)s;

-- name: operation_last_succeeded
-- For each table, the last operation of each action that ran its job to the end: SUCCEEDED,
-- or SKIPPED because the job found nothing to plan (a Hudi utility's "no plan", which its
-- result names), so a plugin can hold back the same work on an unchanged table.
SELECT DISTINCT ON (o.table_pk, o.action) o.*, t.table_id
FROM tms_operations o JOIN tms_tables t ON t.id = o.table_pk
WHERE o.table_pk = ANY(%(pks)s::bigint[])
  AND (o.state = 'SUCCEEDED' OR (o.state = 'SKIPPED' AND o.result ? 'no_plan'))
ORDER BY o.table_pk, o.action, o.finished_at DESC;

-- name: operation_active_actions
-- For each table, the actions with an operation QUEUED or RUNNING (the one-active index), so a
-- batch's decisions need not try to queue them again one INSERT at a time.
SELECT table_pk, action FROM tms_operations
WHERE table_pk = ANY(%(pks)s::bigint[]) AND state IN ('QUEUED', 'RUNNING');

-- name: operation_cancel_queued
-- QUEUED -> CANCELLED (no attempt is running, so no attempt record to end).
UPDATE tms_operations
SET state = 'CANCELLED', finished_at = now(), error = %(reason)s
WHERE id = %(id)s AND state = 'QUEUED'
RETURNING id;

-- name: operation_request_cancel
-- A RUNNING operation is stopped by its executor, which learns of it at its next heartbeat.
UPDATE tms_operations SET cancel_requested = true
WHERE id = %(id)s AND state = 'RUNNING'
RETURNING id;

-- name: operation_claim_lock
-- Claims take turns (transaction-scoped), so a queue's running count read by the claim below
-- is still true when it commits: per-queue limits hold exactly across executors.
SELECT pg_advisory_xact_lock(%(key)s);

-- name: operation_claim
-- QUEUED -> RUNNING. Highest priority first, then highest benefit (unknown last), then
-- oldest, among operations due (retry backoff over), in the executor's queues, whose queue is
-- under its limit, of tables that run nothing else, that wait for no active operation of
-- their table (waits_for). The order is the index tms_operations_queue's, so the claim walks
-- it. The one-RUNNING-per-table index is the final guard. The attempt's own record is
-- written in the same statement.
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
      AND (cardinality(o.waits_for) = 0
           OR NOT EXISTS (SELECT 1 FROM tms_operations w
                          WHERE w.table_pk = o.table_pk AND w.action = ANY(o.waits_for)
                            AND w.state IN ('QUEUED', 'RUNNING')))
    ORDER BY o.priority DESC, o.benefit DESC NULLS LAST, o.id
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
SELECT claimed.*, t.table_id FROM claimed JOIN tms_tables t ON t.id = claimed.table_pk;

-- name: operation_renew_lease
-- The heartbeat; also tells the executor whether a cancel was requested.
UPDATE tms_operations
SET lease_expires_at = now() + make_interval(secs => %(lease_s)s)
WHERE id = %(id)s AND state = 'RUNNING' AND attempt = %(attempt)s AND lease_owner = %(owner)s
RETURNING id, cancel_requested;

-- name: operation_finish
-- RUNNING -> SUCCEEDED | FAILED | CANCELLED, fenced.
WITH o AS (
    UPDATE tms_operations
    SET state = %(state)s, finished_at = now(), lease_expires_at = NULL, result = %(result)s,
        error = %(error)s, log_tail = %(log_tail)s, exit_code = %(exit_code)s
    WHERE id = %(id)s AND state = 'RUNNING' AND attempt = %(attempt)s
      AND lease_owner = %(owner)s
    RETURNING id, attempt
)
SELECT o.id, tms_attempt_close(o.id, o.attempt, %(state)s::text::tms_attempt_state,
                               %(error)s::text, %(result)s::jsonb, %(log_tail)s::text,
                               %(exit_code)s::integer) AS closed
FROM o;

-- name: operation_skip
-- RUNNING -> SKIPPED, fenced: nothing to do. Either re-checked right before it would run,
-- its decision no longer held, so nothing ran; or its job found nothing to plan (a Hudi
-- utility's "no plan"), which is not a failure: its log tail and exit code are kept then.
-- The reason is kept as its error; a pending cancel is moot.
WITH o AS (
    UPDATE tms_operations
    SET state = 'SKIPPED', finished_at = now(), lease_expires_at = NULL, result = %(result)s,
        error = %(reason)s, cancel_requested = false, log_tail = %(log_tail)s,
        exit_code = %(exit_code)s
    WHERE id = %(id)s AND state = 'RUNNING' AND attempt = %(attempt)s
      AND lease_owner = %(owner)s
    RETURNING id, attempt
)
SELECT o.id, tms_attempt_close(o.id, o.attempt, 'SKIPPED', %(reason)s::text,
                               %(result)s::jsonb, %(log_tail)s::text,
                               %(exit_code)s::integer) AS closed
FROM o;

-- name: operation_retry_later
-- RUNNING -> QUEUED after a failed attempt with attempts left, claimable after the backoff.
-- Fenced; a pending cancel wins over the retry (no row: the caller finishes it).
WITH o AS (
    UPDATE tms_operations
    SET state = 'QUEUED', lease_owner = NULL, lease_expires_at = NULL,
        run_after = now() + make_interval(secs => %(delay_s)s), result = %(result)s,
        error = %(error)s, log_tail = %(log_tail)s, exit_code = %(exit_code)s
    WHERE id = %(id)s AND state = 'RUNNING' AND attempt = %(attempt)s
      AND lease_owner = %(owner)s AND attempt - handed_back < max_attempts
      AND NOT cancel_requested
    RETURNING id, attempt, run_after
)
SELECT o.id, tms_attempt_close(o.id, o.attempt, 'FAILED', %(error)s::text, %(result)s::jsonb,
                               %(log_tail)s::text, %(exit_code)s::integer, o.run_after)
           AS closed
FROM o;

-- name: operation_release
-- RUNNING -> QUEUED on an executor's graceful shutdown: back to the queue at once instead of
-- waiting for the lease to expire. Not a failure: the attempt is counted as handed back.
WITH o AS (
    UPDATE tms_operations
    SET state = 'QUEUED', lease_owner = NULL, lease_expires_at = NULL, run_after = now(),
        error = %(error)s, handed_back = handed_back + 1
    WHERE id = %(id)s AND state = 'RUNNING' AND attempt = %(attempt)s
      AND lease_owner = %(owner)s
    RETURNING id, attempt
)
SELECT o.id, tms_attempt_close(o.id, o.attempt, 'HANDED_BACK', %(error)s::text) AS closed
FROM o;

-- name: operation_reap_expired
-- The reaper: a RUNNING operation whose lease expired (its executor vanished) is cancelled
-- when a cancel was pending, goes back to the queue while attempts remain, and fails on its
-- last attempt. Either way its attempt ends as LOST.
WITH expired AS (
    SELECT id,
           CASE WHEN cancel_requested THEN 'CANCELLED'
                WHEN attempt - handed_back < max_attempts THEN 'QUEUED'
                ELSE 'FAILED' END AS next_state,
           CASE WHEN cancel_requested
                    THEN 'cancelled (executor lost before it stopped the job)'
                WHEN attempt - handed_back < max_attempts
                    THEN 'lease expired (executor lost) on attempt ' || attempt
                ELSE 'lease expired (executor lost) on the last attempt ' || attempt
           END AS error
    FROM tms_operations
    WHERE state = 'RUNNING' AND lease_expires_at < now()
    FOR UPDATE SKIP LOCKED
), o AS (
    UPDATE tms_operations t
    SET state = e.next_state::tms_operation_state,
        finished_at = CASE WHEN e.next_state = 'QUEUED' THEN NULL ELSE now() END,
        lease_owner = CASE WHEN e.next_state = 'QUEUED' THEN NULL ELSE t.lease_owner END,
        run_after = CASE WHEN e.next_state = 'QUEUED' THEN now() ELSE t.run_after END,
        lease_expires_at = NULL, error = e.error
    FROM expired e
    WHERE t.id = e.id AND t.state = 'RUNNING'
    RETURNING t.id, t.attempt, t.state, t.error
)
SELECT o.id, o.state::text AS state, tms_attempt_close(o.id, o.attempt, 'LOST', o.error)
           AS closed
FROM o;

-- name: operation_summary_by_day
-- Finished operations per UTC day of their end, from ``start`` (a UTC midnight) on, for one
-- table or all (table_pk NULL): counts by state, and for those whose job reported an outcome
-- the data files before (the decision's figure) and after (before - removed + added), and the
-- bytes rewritten.
SELECT to_char(date_trunc('day', o.finished_at, 'UTC'), 'YYYY-MM-DD') AS day,
       count(*) FILTER (WHERE o.state = 'SUCCEEDED') AS succeeded,
       count(*) FILTER (WHERE o.state = 'FAILED') AS failed,
       count(*) FILTER (WHERE o.state = 'SKIPPED') AS skipped,
       count(*) FILTER (WHERE o.state = 'CANCELLED') AS cancelled,
       coalesce(sum(x.before) FILTER (WHERE x.outcome IS NOT NULL), 0) AS data_files_before,
       coalesce(sum(x.before - x.removed + x.added) FILTER (WHERE x.outcome IS NOT NULL), 0)
           AS data_files_after,
       coalesce(sum(x.rewritten), 0) AS bytes_rewritten
FROM tms_operations o
CROSS JOIN LATERAL (
    SELECT o.result -> 'outcome' AS outcome,
           CASE WHEN jsonb_typeof(o.metrics -> 'data_files') = 'number'
                THEN (o.metrics ->> 'data_files')::numeric ELSE 0 END AS before,
           CASE WHEN jsonb_typeof(o.result -> 'outcome' -> 'data_files_removed') = 'number'
                THEN (o.result -> 'outcome' ->> 'data_files_removed')::numeric ELSE 0 END
               AS removed,
           CASE WHEN jsonb_typeof(o.result -> 'outcome' -> 'data_files_added') = 'number'
                THEN (o.result -> 'outcome' ->> 'data_files_added')::numeric ELSE 0 END
               AS added,
           CASE WHEN jsonb_typeof(o.result -> 'outcome' -> 'data_bytes_rewritten') = 'number'
                THEN (o.result -> 'outcome' ->> 'data_bytes_rewritten')::numeric ELSE 0 END
               AS rewritten
) x
WHERE o.finished_at >= %(start)s
  AND o.state IN ('SUCCEEDED', 'FAILED', 'SKIPPED', 'CANCELLED')
  AND (%(table_pk)s::bigint IS NULL OR o.table_pk = %(table_pk)s)
GROUP BY 1
ORDER BY 1;
