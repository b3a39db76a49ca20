-- Read statistics from the engines' scan reports (tms.reads; migration 0020).

-- name: read_resolve_tables
-- The TMS tables of one catalog named by (namespace, table name) pairs, as the engines' catalog
-- names them; with owner for the token's scope check.
SELECT t.id, t.table_id, t.owner, t.namespace, t.table_name
FROM tms_tables t
JOIN unnest(%(namespaces)s::text[], %(names)s::text[]) AS k(namespace, table_name)
  ON t.namespace = k.namespace AND t.table_name = k.table_name
WHERE t.catalog = %(catalog)s AND t.base_path = '' AND t.table_name <> '';

-- name: read_add_predicates
-- Adds decayed weights per (column, operator); a new key is taken only while the table holds
-- fewer than %(cap)s keys (an existing key is always updated).
WITH input AS (
    SELECT i.column_name, i.operator, i.weight
    FROM unnest(%(columns)s::text[], %(operators)s::text[], %(weights)s::float8[])
         AS i(column_name, operator, weight)
), room AS (
    SELECT greatest(%(cap)s - count(*), 0) AS free FROM tms_read_predicates
    WHERE table_pk = %(table_pk)s
), fresh AS (
    SELECT i.* FROM input i
    WHERE NOT EXISTS (SELECT 1 FROM tms_read_predicates p WHERE p.table_pk = %(table_pk)s
                      AND p.column_name = i.column_name AND p.operator = i.operator)
    ORDER BY i.weight DESC, i.column_name
    LIMIT (SELECT free FROM room)
), accepted AS (
    SELECT i.* FROM input i
    WHERE EXISTS (SELECT 1 FROM tms_read_predicates p WHERE p.table_pk = %(table_pk)s
                  AND p.column_name = i.column_name AND p.operator = i.operator)
    UNION ALL SELECT * FROM fresh
)
INSERT INTO tms_read_predicates AS p (table_pk, column_name, operator, weight, updated_at)
SELECT %(table_pk)s, column_name, operator, weight, %(now)s FROM accepted
ON CONFLICT (table_pk, column_name, operator) DO UPDATE
SET weight = p.weight * power(0.5, greatest(extract(epoch FROM %(now)s - p.updated_at), 0)
                                   / %(half_life_s)s) + excluded.weight,
    updated_at = greatest(p.updated_at, excluded.updated_at)
RETURNING column_name;

-- name: read_add_column_sets
WITH input AS (
    SELECT string_to_array(i.cols, chr(31)) AS columns, i.weight
    FROM unnest(%(sets)s::text[], %(weights)s::float8[]) AS i(cols, weight)
), room AS (
    SELECT greatest(%(cap)s - count(*), 0) AS free FROM tms_read_column_sets
    WHERE table_pk = %(table_pk)s
), fresh AS (
    SELECT i.* FROM input i
    WHERE NOT EXISTS (SELECT 1 FROM tms_read_column_sets s WHERE s.table_pk = %(table_pk)s
                      AND s.columns = i.columns)
    ORDER BY i.weight DESC
    LIMIT (SELECT free FROM room)
), accepted AS (
    SELECT i.* FROM input i
    WHERE EXISTS (SELECT 1 FROM tms_read_column_sets s WHERE s.table_pk = %(table_pk)s
                  AND s.columns = i.columns)
    UNION ALL SELECT * FROM fresh
)
INSERT INTO tms_read_column_sets AS s (table_pk, columns, weight, updated_at)
SELECT %(table_pk)s, columns, weight, %(now)s FROM accepted
ON CONFLICT (table_pk, columns) DO UPDATE
SET weight = s.weight * power(0.5, greatest(extract(epoch FROM %(now)s - s.updated_at), 0)
                                   / %(half_life_s)s) + excluded.weight,
    updated_at = greatest(s.updated_at, excluded.updated_at)
RETURNING columns;

-- name: read_add_scans
WITH d AS (
    SELECT power(0.5, greatest(extract(epoch FROM %(now)s - updated_at), 0)
                      / %(half_life_s)s) AS f
    FROM tms_read_scans WHERE table_pk = %(table_pk)s
)
INSERT INTO tms_read_scans AS s (table_pk, scans, filtered_scans, result_files, skipped_files,
                                 result_bytes, reports, first_at, updated_at)
VALUES (%(table_pk)s, %(scans)s, %(filtered)s, %(result_files)s, %(skipped_files)s,
        %(result_bytes)s, %(reports)s, %(now)s, %(now)s)
ON CONFLICT (table_pk) DO UPDATE
SET scans = s.scans * (SELECT f FROM d) + excluded.scans,
    filtered_scans = s.filtered_scans * (SELECT f FROM d) + excluded.filtered_scans,
    result_files = s.result_files * (SELECT f FROM d) + excluded.result_files,
    skipped_files = s.skipped_files * (SELECT f FROM d) + excluded.skipped_files,
    result_bytes = s.result_bytes * (SELECT f FROM d) + excluded.result_bytes,
    reports = s.reports + excluded.reports,
    updated_at = greatest(s.updated_at, excluded.updated_at)
RETURNING s.table_pk;

-- name: read_profile_scans
-- A table's scan totals, decayed to %(now)s.
SELECT scans * f AS scans, filtered_scans * f AS filtered_scans,
       result_files * f AS result_files, skipped_files * f AS skipped_files,
       result_bytes * f AS result_bytes, reports, first_at, updated_at
FROM tms_read_scans,
     LATERAL (SELECT power(0.5, greatest(extract(epoch FROM %(now)s - updated_at), 0)
                                / %(half_life_s)s) AS f) d
WHERE table_pk = %(table_pk)s;

-- name: read_profile_predicates
SELECT column_name, operator,
       weight * power(0.5, greatest(extract(epoch FROM %(now)s - updated_at), 0)
                           / %(half_life_s)s) AS weight
FROM tms_read_predicates WHERE table_pk = %(table_pk)s
ORDER BY weight DESC, column_name, operator;

-- name: read_profile_column_sets
SELECT columns,
       weight * power(0.5, greatest(extract(epoch FROM %(now)s - updated_at), 0)
                           / %(half_life_s)s) AS weight
FROM tms_read_column_sets WHERE table_pk = %(table_pk)s
ORDER BY weight DESC, columns;
