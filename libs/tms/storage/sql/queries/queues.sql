-- Queues: per-queue concurrency limits, which every executor's claim obeys.

-- name: queue_upsert
INSERT INTO tms_queues (name, max_running) VALUES (%(name)s, %(max_running)s)
ON CONFLICT (name) DO UPDATE SET max_running = EXCLUDED.max_running, updated_at = now()
RETURNING name;

-- name: queue_list
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

-- name: queue_stats
-- Metrics: what waits in each queue, per action, and for how long.
SELECT queue, action, count(*) AS queued,
       extract(epoch FROM now() - min(created_at))::float8 AS oldest_age_s
FROM tms_operations WHERE state = 'QUEUED'
GROUP BY queue, action;
