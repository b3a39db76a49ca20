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
-- Adds decayed weights per (table, column, operator) for every table of a batch in one
-- statement; a new key is taken only while its table holds fewer than %(cap)s keys (the
-- heaviest new keys first), an existing key is always updated.
WITH input AS (
    SELECT i.table_pk, i.column_name, i.operator, i.weight
    FROM unnest(%(table_pks)s::bigint[], %(columns)s::text[], %(operators)s::text[],
                %(weights)s::float8[]) AS i(table_pk, column_name, operator, weight)
), known AS (
    SELECT i.*, p.table_pk IS NOT NULL AS present
    FROM input i
    LEFT JOIN tms_read_predicates p ON p.table_pk = i.table_pk
        AND p.column_name = i.column_name AND p.operator = i.operator
), room AS (
    SELECT k.table_pk, greatest(%(cap)s - (SELECT count(*) FROM tms_read_predicates p
                                          WHERE p.table_pk = k.table_pk), 0) AS free
    FROM (SELECT DISTINCT table_pk FROM input) k
), ranked AS (
    SELECT k.*, row_number() OVER (PARTITION BY k.table_pk, k.present
                                   ORDER BY k.weight DESC, k.column_name, k.operator) AS n
    FROM known k
), accepted AS (
    SELECT r.table_pk, r.column_name, r.operator, r.weight
    FROM ranked r JOIN room USING (table_pk)
    WHERE r.present OR r.n <= room.free
)
INSERT INTO tms_read_predicates AS p (table_pk, column_name, operator, weight, updated_at)
SELECT table_pk, column_name, operator, weight, %(now)s FROM accepted
ORDER BY table_pk, column_name, operator  -- a fixed order: concurrent batches never deadlock
ON CONFLICT (table_pk, column_name, operator) DO UPDATE
SET weight = p.weight * power(0.5, greatest(extract(epoch FROM %(now)s - p.updated_at), 0)
                                   / %(half_life_s)s) + excluded.weight,
    updated_at = greatest(p.updated_at, excluded.updated_at);

-- name: read_add_column_sets
-- As read_add_predicates, for the sets of columns scans filter on together (joined by the
-- unit separator, chr(31)).
WITH input AS (
    SELECT i.table_pk, string_to_array(i.cols, chr(31)) AS columns, i.weight
    FROM unnest(%(table_pks)s::bigint[], %(sets)s::text[], %(weights)s::float8[])
         AS i(table_pk, cols, weight)
), known AS (
    SELECT i.*, s.table_pk IS NOT NULL AS present
    FROM input i
    LEFT JOIN tms_read_column_sets s ON s.table_pk = i.table_pk AND s.columns = i.columns
), room AS (
    SELECT k.table_pk, greatest(%(cap)s - (SELECT count(*) FROM tms_read_column_sets s
                                          WHERE s.table_pk = k.table_pk), 0) AS free
    FROM (SELECT DISTINCT table_pk FROM input) k
), ranked AS (
    SELECT k.*, row_number() OVER (PARTITION BY k.table_pk, k.present
                                   ORDER BY k.weight DESC, k.columns) AS n
    FROM known k
), accepted AS (
    SELECT r.table_pk, r.columns, r.weight
    FROM ranked r JOIN room USING (table_pk)
    WHERE r.present OR r.n <= room.free
)
INSERT INTO tms_read_column_sets AS s (table_pk, columns, weight, updated_at)
SELECT table_pk, columns, weight, %(now)s FROM accepted
ORDER BY table_pk, columns
ON CONFLICT (table_pk, columns) DO UPDATE
SET weight = s.weight * power(0.5, greatest(extract(epoch FROM %(now)s - s.updated_at), 0)
                                   / %(half_life_s)s) + excluded.weight,
    updated_at = greatest(s.updated_at, excluded.updated_at);

-- name: read_add_scans
-- Every table's scan totals of a batch in one statement (the decay applied to the stored
-- row, read in the SET: ON CONFLICT's DO UPDATE takes no FROM).
INSERT INTO tms_read_scans AS s (table_pk, scans, filtered_scans, result_files, skipped_files,
                                 result_bytes, reports, first_at, updated_at)
SELECT i.table_pk, i.scans, i.filtered, i.result_files, i.skipped_files, i.result_bytes,
       i.reports, %(now)s, %(now)s
FROM unnest(%(table_pks)s::bigint[], %(scans)s::float8[], %(filtered)s::float8[],
            %(result_files)s::float8[], %(skipped_files)s::float8[],
            %(result_bytes)s::float8[], %(reports)s::bigint[])
     AS i(table_pk, scans, filtered, result_files, skipped_files, result_bytes, reports)
ORDER BY i.table_pk
ON CONFLICT (table_pk) DO UPDATE
SET scans = s.scans * power(0.5, greatest(extract(epoch FROM %(now)s - s.updated_at), 0)
                                 / %(half_life_s)s) + excluded.scans,
    filtered_scans = s.filtered_scans
        * power(0.5, greatest(extract(epoch FROM %(now)s - s.updated_at), 0) / %(half_life_s)s)
        + excluded.filtered_scans,
    result_files = s.result_files
        * power(0.5, greatest(extract(epoch FROM %(now)s - s.updated_at), 0) / %(half_life_s)s)
        + excluded.result_files,
    skipped_files = s.skipped_files
        * power(0.5, greatest(extract(epoch FROM %(now)s - s.updated_at), 0) / %(half_life_s)s)
        + excluded.skipped_files,
    result_bytes = s.result_bytes
        * power(0.5, greatest(extract(epoch FROM %(now)s - s.updated_at), 0) / %(half_life_s)s)
        + excluded.result_bytes,
    reports = s.reports + excluded.reports,
    updated_at = greatest(s.updated_at, excluded.updated_at);

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
