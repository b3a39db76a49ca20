-- Decisions: which tables are due, what the scheduler decided for each action and why.

-- name: decision_begin_batch
-- One round trip for a whole batch: the due tables of the shards this scheduler holds
-- (undecided commits first, then due pull checks), their marks consumed. The shards are
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
SELECT t.*, m.table_pk IS NOT NULL AS had_commits, m.traceparent
FROM tms_tables t JOIN due ON due.id = t.id
LEFT JOIN mark m ON m.table_pk = t.id
ORDER BY t.id;

-- name: decision_finish_batch
-- The decisions of a batch that changed since the scheduler last wrote them (the others are
-- not passed: decided_at is when a decision last changed), and every decided table's next
-- check and check time, in one statement. The arrays
-- travel in binary (the b placeholders): as text, every quote of every JSON document and
-- reason is escaped in Python, most of the scheduler's CPU per decision at six decisions a
-- table.
WITH d AS (
    INSERT INTO tms_decisions (table_pk, action, decided_at, should_run, reason, metrics,
                               operation_id, scheduler_id, benefit)
    SELECT u.table_pk, u.action, now(), u.should_run, u.reason, u.metrics, u.operation_id,
           %(scheduler_id)s, u.benefit
    FROM unnest(%(table_pks)b::bigint[], %(actions)b::text[], %(should_run)b::boolean[],
                %(reasons)b::text[], %(metrics)b::jsonb[], %(operation_ids)b::bigint[],
                %(benefits)b::float8[])
         AS u(table_pk, action, should_run, reason, metrics, operation_id, benefit)
    -- a table deregistered meanwhile has no row to point at any more
    WHERE EXISTS (SELECT 1 FROM tms_tables t WHERE t.id = u.table_pk)
    ON CONFLICT (table_pk, action) DO UPDATE
    SET decided_at = excluded.decided_at, should_run = excluded.should_run,
        reason = excluded.reason, metrics = excluded.metrics,
        operation_id = excluded.operation_id, scheduler_id = excluded.scheduler_id,
        benefit = excluded.benefit
)
-- clamped: no value can push a check out of the calendar and fail the whole batch
UPDATE tms_tables t
SET next_check_at = now() + make_interval(
        secs => LEAST(GREATEST(n.next_check_s, 0), %(max_next_check_s)s::float8)),
    checked_at = now()
FROM unnest(%(check_pks)b::bigint[], %(next_check_s)b::float8[]) AS n(pk, next_check_s)
WHERE t.id = n.pk;

-- name: decision_explain
-- The last decision per action, with the operation active for it now (if any), and when the
-- scheduler last looked at the table (the same on every row).
SELECT a.action, d.decided_at, d.should_run, d.reason, d.metrics, d.operation_id,
       d.scheduler_id, o.id AS active_id, o.state::text AS active_state, d.benefit,
       (SELECT t.checked_at FROM tms_tables t WHERE t.id = %(table_pk)s) AS checked_at
FROM unnest(%(actions)s::text[]) WITH ORDINALITY AS a(action, pos)
LEFT JOIN tms_decisions d ON d.table_pk = %(table_pk)s AND d.action = a.action
LEFT JOIN tms_operations o ON o.table_pk = %(table_pk)s AND o.action = a.action
                          AND o.state IN ('QUEUED', 'RUNNING')
ORDER BY a.pos;
