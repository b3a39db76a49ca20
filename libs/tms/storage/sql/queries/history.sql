-- History: a table's inspection figures over time, downsampled by the leader.

-- name: history_list
-- A table's points in [start, end), oldest first, at most ``limit``.
SELECT at, resolution, data_files, small_files, mean_file_bytes, total_bytes, delete_files,
       snapshots, manifests, health_score
FROM tms_table_history
WHERE table_pk = %(pk)s AND at >= %(start)s AND at < %(end)s
ORDER BY at
LIMIT %(limit)s;

-- name: history_markers
-- Operations of a table that ended in [start, end), oldest first, at most ``limit``.
SELECT o.id, o.action, o.state::text AS state, o.finished_at
FROM tms_operations o
WHERE o.table_pk = %(pk)s AND o.finished_at >= %(start)s AND o.finished_at < %(end)s
ORDER BY o.finished_at
LIMIT %(limit)s;

-- name: history_downsample
-- One step of downsampling over the tables after ``after_pk`` (at most ``tables`` of them,
-- through the primary key): points older than the raw window keep only the last of their
-- hour (resolution 1), points older than the hourly window only the last of their UTC day
-- (resolution 2), points older than keep_s go. The windows' edges are whole hours and days,
-- so a bucket is never split between two passes. Returns the last table pk looked at (NULL:
-- past the last table, start again) and the rows changed.
WITH tabs AS (
    SELECT id FROM tms_tables WHERE id > %(after_pk)s ORDER BY id LIMIT %(tables)s
), cut AS (
    SELECT date_trunc('hour', now() - make_interval(secs => %(raw_s)s), 'UTC') AS hour_cut,
           date_trunc('day', now() - make_interval(secs => %(hourly_s)s), 'UTC') AS day_cut,
           now() - make_interval(secs => %(keep_s)s) AS keep_cut
), old AS (
    SELECT h.table_pk, h.at, h.resolution,
           CASE WHEN h.at < cut.day_cut THEN 2 ELSE 1 END AS new_resolution,
           h.at < cut.keep_cut AS expired,
           row_number() OVER (
               PARTITION BY h.table_pk,
                            CASE WHEN h.at < cut.day_cut THEN date_trunc('day', h.at, 'UTC')
                                 ELSE date_trunc('hour', h.at, 'UTC') END
               ORDER BY h.at DESC) AS rn
    FROM tms_table_history h CROSS JOIN cut
    WHERE h.table_pk IN (SELECT id FROM tabs) AND h.at < cut.hour_cut
), gone AS (
    DELETE FROM tms_table_history h USING old
    WHERE h.table_pk = old.table_pk AND h.at = old.at AND (old.rn > 1 OR old.expired)
    RETURNING 1
), kept AS (
    UPDATE tms_table_history h SET resolution = old.new_resolution FROM old
    WHERE h.table_pk = old.table_pk AND h.at = old.at AND old.rn = 1 AND NOT old.expired
      AND h.resolution < old.new_resolution
    RETURNING 1
)
SELECT (SELECT max(id) FROM tabs) AS last_pk, (SELECT count(*) FROM gone) AS deleted,
       (SELECT count(*) FROM kept) AS downsampled;
