-- Retention: the leader prunes old rows in small batches, oldest first.

-- name: retention_prune_commit_events
-- What goes is folded into the tables' counters, so commit counts stay exact.
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

-- name: retention_prune_operations
-- Finished operations past their retention (their attempts go by ON DELETE CASCADE):
-- every state but the active ones (SUCCEEDED, FAILED, CANCELLED, SKIPPED).
WITH gone AS (
    DELETE FROM tms_operations
    WHERE id IN (SELECT id FROM tms_operations
                 WHERE state NOT IN ('QUEUED', 'RUNNING')
                   AND finished_at < now() - make_interval(secs => %(retention_s)s)
                 ORDER BY finished_at
                 LIMIT %(batch)s)
    RETURNING id
)
SELECT count(*) AS pruned FROM gone;

-- name: retention_prune_requests
WITH gone AS (
    DELETE FROM tms_requests
    WHERE request_id IN (SELECT request_id FROM tms_requests
                         WHERE created_at < now() - make_interval(secs => %(retention_s)s)
                         LIMIT %(batch)s)
    RETURNING request_id
)
SELECT count(*) AS pruned FROM gone;

-- name: retention_prune_processes
-- Heartbeat rows of processes gone for longer than the retention (a crashed process never
-- removes its own).
WITH gone AS (
    DELETE FROM tms_processes
    WHERE id IN (SELECT id FROM tms_processes
                 WHERE heartbeat_at < now() - make_interval(secs => %(retention_s)s)
                 ORDER BY heartbeat_at
                 LIMIT %(batch)s)
    RETURNING id
)
SELECT count(*) AS pruned FROM gone;
