-- Heartbeats: schedulers' and executors' heartbeats (liveness).

-- name: heartbeat_record
-- A process's heartbeat: its row created or refreshed, stamped by the database's clock.
INSERT INTO tms_processes (id, kind, host, started_at, heartbeat_at, interval_s, leader,
                           shards, running_operations)
VALUES (%(id)s, %(kind)s, %(host)s, %(started_at)s, now(), %(interval_s)s, %(leader)s,
        %(shards)s::integer[], %(running)s::text[])
ON CONFLICT (id) DO UPDATE
SET kind = excluded.kind, host = excluded.host, started_at = excluded.started_at,
    heartbeat_at = excluded.heartbeat_at, interval_s = excluded.interval_s,
    leader = excluded.leader, shards = excluded.shards,
    running_operations = excluded.running_operations;

-- name: heartbeat_forget
-- A process that stops cleanly removes its row (a crashed one ages out).
DELETE FROM tms_processes WHERE id = %(id)s;

-- name: heartbeat_list
-- Processes whose heartbeat is newer than ``within_s``, with whether each is alive (a
-- heartbeat within three of its intervals), schedulers first.
SELECT id, kind, host, started_at, heartbeat_at, leader, shards, running_operations,
       heartbeat_at >= now() - make_interval(secs => 3 * interval_s) AS alive
FROM tms_processes
WHERE heartbeat_at >= now() - make_interval(secs => %(within_s)s)
ORDER BY kind DESC, id
LIMIT %(limit)s;
