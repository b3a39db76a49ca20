-- Fleet: the counts of GetFleetStatus.

-- name: fleet_counts
-- Tables by state, operations queued and running, operations that ended in the last 24 h by
-- state, and commits received in the last hour, in one round trip.
SELECT
    (SELECT coalesce(jsonb_object_agg(state, n), '{}')
     FROM (SELECT state::text AS state, count(*) AS n FROM tms_tables GROUP BY 1) s)
        AS tables_by_state,
    (SELECT count(*) FROM tms_operations WHERE state = 'QUEUED') AS queued,
    (SELECT count(*) FROM tms_operations WHERE state = 'RUNNING') AS running,
    (SELECT coalesce(jsonb_object_agg(state, n), '{}')
     FROM (SELECT state::text AS state, count(*) AS n FROM tms_operations
           WHERE finished_at >= now() - interval '24 hours'
             AND state NOT IN ('QUEUED', 'RUNNING')
           GROUP BY 1) e) AS ended_24h,
    (SELECT count(*) FROM tms_commit_events
     WHERE received_at >= now() - interval '1 hour') AS commits_1h,
    now() AS db_now;
