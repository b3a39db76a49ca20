-- Holds: an action that failed too often in a row is not queued again until released.

-- name: hold_streaks
-- For each (table, action) of a batch: the operations FAILED in a row (after its last
-- SUCCEEDED one and after its hold's last release; CANCELLED and SKIPPED ones neither count
-- nor break the run), the last of them and its error, the hold row if any, and the table's
-- latest commit event. Rows only where there is a failure or a hold.
WITH held AS (
    SELECT * FROM tms_action_holds WHERE table_pk = ANY(%(pks)s::bigint[])
), streak AS (
    SELECT o.table_pk, o.action, count(*) AS failures, max(o.id) AS last_failed_id
    FROM tms_operations o
    LEFT JOIN held h ON h.table_pk = o.table_pk AND h.action = o.action
    WHERE o.table_pk = ANY(%(pks)s::bigint[]) AND o.state = 'FAILED'
      AND o.id > COALESCE(h.released_after_id, 0)
      AND NOT EXISTS (SELECT 1 FROM tms_operations s
                      WHERE s.table_pk = o.table_pk AND s.action = o.action
                        AND s.state = 'SUCCEEDED' AND s.id > o.id)
    GROUP BY o.table_pk, o.action
)
SELECT COALESCE(s.table_pk, h.table_pk) AS table_pk, COALESCE(s.action, h.action) AS action,
       COALESCE(s.failures, 0) AS failures, s.last_failed_id,
       (SELECT o.error FROM tms_operations o WHERE o.id = s.last_failed_id) AS last_error,
       h.state AS hold_state, h.failures AS held_failures, h.last_operation_id, h.holds,
       h.reason AS hold_reason, h.held_at, h.held_until, h.commit_seq AS held_commit_seq,
       h.policy_digest, h.released_after_id, h.version,
       COALESCE((SELECT max(e.seq) FROM tms_commit_events e
                 WHERE e.table_pk = COALESCE(s.table_pk, h.table_pk)), 0) AS commit_seq
FROM streak s FULL JOIN held h ON h.table_pk = s.table_pk AND h.action = s.action;

-- name: hold_place
-- Hold an action (again), fenced: a new row only if there was none, an existing one only at
-- the version read. No row back: another scheduler's write came first.
INSERT INTO tms_action_holds AS h (table_pk, action, state, failures, last_operation_id, holds,
                                   reason, held_at, held_until, commit_seq, policy_digest)
VALUES (%(table_pk)s, %(action)s, 'HELD', %(failures)s, %(last_operation_id)s, %(holds)s,
        %(reason)s, %(now)s, %(held_until)s, %(commit_seq)s, %(policy_digest)s)
ON CONFLICT (table_pk, action) DO UPDATE
SET state = 'HELD', failures = EXCLUDED.failures, last_operation_id = EXCLUDED.last_operation_id,
    holds = EXCLUDED.holds, reason = EXCLUDED.reason, held_at = EXCLUDED.held_at,
    held_until = EXCLUDED.held_until, commit_seq = EXCLUDED.commit_seq,
    policy_digest = EXCLUDED.policy_digest, released_at = NULL, released_by = NULL,
    version = h.version + 1
WHERE h.version = %(version)s
RETURNING h.table_pk, h.action, h.version;

-- name: hold_release
-- HELD -> RELEASED, fenced by version: the failures so far no longer count.
UPDATE tms_action_holds
SET state = 'RELEASED', released_at = %(now)s, released_by = %(released_by)s,
    released_after_id = GREATEST(released_after_id, %(after_id)s), holds = 0,
    version = version + 1
WHERE table_pk = %(table_pk)s AND action = %(action)s AND state = 'HELD'
  AND version = %(version)s
RETURNING table_pk, action, version;

-- name: hold_release_table
-- ResumeTable: every held action of the table released; the failures so far no longer count.
UPDATE tms_action_holds h
SET state = 'RELEASED', released_at = now(), released_by = 'resume', holds = 0,
    released_after_id = GREATEST(h.released_after_id, h.last_operation_id,
                                 COALESCE((SELECT max(o.id) FROM tms_operations o
                                           WHERE o.table_pk = h.table_pk
                                             AND o.action = h.action
                                             AND o.state = 'FAILED'), 0)),
    version = h.version + 1
WHERE h.table_pk = %(table_pk)s AND h.state = 'HELD'
RETURNING h.action;

-- name: hold_of_table
-- The held actions of one table (ExplainTable).
SELECT h.*, t.table_id FROM tms_action_holds h JOIN tms_tables t ON t.id = h.table_pk
WHERE h.table_pk = %(table_pk)s AND h.state = 'HELD'
ORDER BY h.action;

-- name: hold_list
-- Held actions, by table id and action, one page after (after_table, after_action); of one
-- table and / or one action when given.
SELECT h.*, t.table_id FROM tms_action_holds h JOIN tms_tables t ON t.id = h.table_pk
WHERE h.state = 'HELD'
  AND (%(table_id)s::text IS NULL OR t.table_id = %(table_id)s)
  AND (%(action)s::text IS NULL OR h.action = %(action)s)
  AND (t.table_id, h.action) > (%(after_table)s, %(after_action)s)
ORDER BY t.table_id, h.action
LIMIT %(limit)s;

-- name: hold_counts
-- Held actions per action (the tms_actions_held gauge).
SELECT action, count(*) AS held FROM tms_action_holds WHERE state = 'HELD' GROUP BY action;
