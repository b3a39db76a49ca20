-- Health: each table's score with its parts and worst partitions (from its last inspection).

-- name: health_record_batch
-- A batch's inspections in one statement: the parts and partitions replaced, the score on
-- the table's row written only when it changed (no row version for an unchanged table), and
-- a history point added when the figures changed and the table's last point is older than
-- min_spacing_s, or the last point is older than keepalive_s (an unchanged table still gets
-- a point that often, so its trend reaches today). A table deregistered meanwhile is skipped.
WITH u AS (
    SELECT * FROM unnest(%(pks)s::bigint[], %(scores)s::smallint[], %(parts)s::jsonb[],
                         %(partitions)s::jsonb[], %(data_files)s::bigint[],
                         %(small_files)s::bigint[], %(mean_file_bytes)s::bigint[],
                         %(total_bytes)s::bigint[], %(delete_files)s::integer[],
                         %(snapshots)s::integer[], %(manifests)s::integer[])
        AS u(pk, score, parts, partitions, data_files, small_files, mean_file_bytes,
             total_bytes, delete_files, snapshots, manifests)
    WHERE EXISTS (SELECT 1 FROM tms_tables t WHERE t.id = u.pk)
), h AS (
    INSERT INTO tms_table_health (table_pk, inspected_at, score, parts, partitions)
    SELECT pk, now(), score, parts, partitions FROM u
    ON CONFLICT (table_pk) DO UPDATE
    SET inspected_at = excluded.inspected_at, score = excluded.score, parts = excluded.parts,
        partitions = excluded.partitions
), s AS (
    UPDATE tms_tables t SET health_score = u.score
    FROM u WHERE t.id = u.pk AND t.health_score IS DISTINCT FROM u.score
)
INSERT INTO tms_table_history (table_pk, at, data_files, small_files, mean_file_bytes,
                               total_bytes, delete_files, snapshots, manifests, health_score)
SELECT u.pk, now(), u.data_files, u.small_files, u.mean_file_bytes, u.total_bytes,
       u.delete_files, u.snapshots, u.manifests, u.score
FROM u
LEFT JOIN LATERAL (SELECT * FROM tms_table_history p WHERE p.table_pk = u.pk
                   ORDER BY p.at DESC LIMIT 1) p ON true
WHERE p.at IS NULL
   OR p.at < now() - make_interval(secs => %(keepalive_s)s)
   OR (p.at < now() - make_interval(secs => %(min_spacing_s)s)
       AND (p.data_files, p.small_files, p.mean_file_bytes, p.total_bytes, p.delete_files,
            p.snapshots, p.manifests, p.health_score)
           IS DISTINCT FROM (u.data_files, u.small_files, u.mean_file_bytes, u.total_bytes,
                             u.delete_files, u.snapshots, u.manifests, u.score))
ON CONFLICT (table_pk, at) DO NOTHING;

-- name: health_get
SELECT inspected_at, score, parts, partitions FROM tms_table_health WHERE table_pk = %(pk)s;

-- name: health_bands
-- Tables per band of docs/health.md (NULL: never inspected), from the score's index.
SELECT CASE WHEN health_score IS NULL THEN 'unknown'
            WHEN health_score >= 80 THEN 'healthy'
            WHEN health_score >= 50 THEN 'fair'
            ELSE 'poor' END AS band,
       count(*) AS n
FROM tms_tables GROUP BY 1;

-- name: health_scores_histogram
-- The fleet's scores as a cumulative histogram: tables scoring at most ``le``, for le = 10,
-- 20, ..., 100 (tables never inspected are not counted).
SELECT b.le, count(t.health_score) AS n
FROM generate_series(10, 100, 10) AS b(le)
LEFT JOIN tms_tables t ON t.health_score <= b.le
GROUP BY b.le
ORDER BY b.le;

-- name: health_scores_by_table
-- Per-table scores for the opt-in per-table metric, lowest first, at most ``limit``.
SELECT table_id, health_score FROM tms_tables
WHERE health_score IS NOT NULL
ORDER BY coalesce(health_score, 101), table_id
LIMIT %(limit)s;
