-- Tables: registration, reads with their statistics, owner changes, pause/resume, removal.
-- A table's statistics (commit count, last commit) come from tms_tables_view, so the intake
-- path never has to update a table's row.

-- name: table_lock_locations
-- Serialises the writes that compare a table with every other one (registration, a location
-- the scheduler read anew): taken first in their transaction, so the comparison that
-- follows sees every registration committed before it.
SELECT pg_advisory_xact_lock(%(key)s);

-- name: table_insert
-- One physical table, one registration: refused (clash_table names the other) when another
-- table has the same catalog and identifier, or a location equal to, inside or containing
-- this one (orphan-file removal of one would delete the other's files). Run after
-- table_lock_locations in the same transaction; the unique indexes are the last guard.
-- Candidates come from indexes only (see migration 0013): the same location; locations in
-- [L/, L0) in byte order, i.e. starting with L/ ('0' follows '/'); the location's prefixes
-- that end before one of its slashes. The full comparison then runs on those few rows.
-- (The prefixes stay inline, here and in table_set_location: behind a SQL function the
-- planner no longer probes the index per prefix, 0.3 ms became 50 ms at 100,000 tables.)
WITH ancestors AS (
    SELECT substr(%(location)s, 1, i - 1) AS p
    FROM generate_series(1, length(%(location)s)) AS i
    WHERE substr(%(location)s, i, 1) = '/'
), near AS (
    SELECT t.id FROM tms_tables t
    WHERE %(base_path)s = '' AND %(table_name)s <> '' AND t.base_path = ''
      AND t.table_name <> '' AND t.catalog = %(catalog)s AND t.namespace = %(namespace)s
      AND t.table_name = %(table_name)s
    UNION
    SELECT t.id FROM tms_tables t
    WHERE %(location)s <> '' AND t.location <> '' AND t.location = %(location)s
    UNION
    SELECT t.id FROM tms_tables t
    WHERE %(location)s <> '' AND t.location <> ''
      AND (t.location COLLATE "C") >= (rtrim(%(location)s, '/') || '/')
      AND (t.location COLLATE "C") < (rtrim(%(location)s, '/') || '0')
    UNION
    SELECT t.id FROM tms_tables t
    WHERE %(location)s <> '' AND t.location <> ''
      AND rtrim(t.location, '/') IN (SELECT p FROM ancestors)
), clash AS (
    SELECT t.table_id,
           CASE WHEN t.location <> '' AND %(location)s <> ''
                     AND (t.location = %(location)s
                          OR starts_with(t.location, rtrim(%(location)s, '/') || '/')
                          OR starts_with(%(location)s, rtrim(t.location, '/') || '/'))
                THEN 'location' ELSE 'identifier' END AS what
    FROM tms_tables t
    WHERE t.id IN (SELECT id FROM near)
      AND ((%(base_path)s = '' AND %(table_name)s <> '' AND t.base_path = ''
            AND t.catalog = %(catalog)s AND t.namespace = %(namespace)s
            AND t.table_name = %(table_name)s)
           OR (t.location <> '' AND %(location)s <> ''
               AND (t.location = %(location)s
                    OR starts_with(t.location, rtrim(%(location)s, '/') || '/')
                    OR starts_with(%(location)s, rtrim(t.location, '/') || '/'))))
    ORDER BY t.table_id
    LIMIT 1
), ins AS (
    INSERT INTO tms_tables (table_id, format, catalog, namespace, table_name, base_path,
                            owner, queue, priority, policy, location, discovered)
    SELECT %(table_id)s, %(format)s, %(catalog)s, %(namespace)s, %(table_name)s,
           %(base_path)s, %(owner)s, %(queue)s, %(priority)s, %(policy)s, %(location)s,
           %(discovered)s
    WHERE NOT EXISTS (SELECT 1 FROM clash)
    ON CONFLICT (table_id) DO NOTHING
    RETURNING id
)
SELECT (SELECT id FROM ins) AS id, (SELECT table_id FROM clash) AS clash_table,
       (SELECT what FROM clash) AS clash_what;

-- name: table_set_location
-- The location the scheduler read anew from the table's catalog (and checked); refused, with
-- the other table named, when it overlaps another table's. After table_lock_locations.
-- Candidates through indexes only, as in table_insert.
WITH ancestors AS (
    SELECT substr(%(location)s, 1, i - 1) AS p
    FROM generate_series(1, length(%(location)s)) AS i
    WHERE substr(%(location)s, i, 1) = '/'
), near AS (
    SELECT t.id FROM tms_tables t
    WHERE t.location <> '' AND t.location = %(location)s
    UNION
    SELECT t.id FROM tms_tables t
    WHERE t.location <> ''
      AND (t.location COLLATE "C") >= (rtrim(%(location)s, '/') || '/')
      AND (t.location COLLATE "C") < (rtrim(%(location)s, '/') || '0')
    UNION
    SELECT t.id FROM tms_tables t
    WHERE t.location <> '' AND rtrim(t.location, '/') IN (SELECT p FROM ancestors)
), clash AS (
    SELECT t.table_id FROM tms_tables t
    WHERE t.id IN (SELECT id FROM near) AND t.id <> %(pk)s AND t.location <> ''
      AND (t.location = %(location)s
           OR starts_with(t.location, rtrim(%(location)s, '/') || '/')
           OR starts_with(%(location)s, rtrim(t.location, '/') || '/'))
    ORDER BY t.table_id
    LIMIT 1
), upd AS (
    UPDATE tms_tables SET location = %(location)s, updated_at = now()
    WHERE id = %(pk)s AND NOT EXISTS (SELECT 1 FROM clash)
    RETURNING id
)
SELECT (SELECT id FROM upd) AS id, (SELECT table_id FROM clash) AS clash_table;

-- name: table_set_locations
-- A batch's locations read anew from their catalogs (and checked), in one statement: each
-- one refused, with the other table named, when it overlaps another table's stored location
-- or an earlier one of the same batch (by its position in the arrays; refused even when that
-- earlier one is refused itself: the next decision tries again alone). After
-- table_lock_locations. Candidates through indexes only, as in table_insert, per location
-- (the subqueries are correlated, so each probes the indexes with its own location).
WITH new AS (
    SELECT n.pk, n.location, n.ord
    FROM unnest(%(pks)s::bigint[], %(locations)s::text[]) WITH ORDINALITY AS n(pk, location, ord)
), checked AS (
    SELECT new.pk, new.location,
           (SELECT c.table_id FROM (
                SELECT t.id, t.table_id, t.location FROM tms_tables t
                WHERE t.location <> '' AND t.location = new.location
                UNION ALL
                SELECT t.id, t.table_id, t.location FROM tms_tables t
                WHERE t.location <> ''
                  AND (t.location COLLATE "C") >= (rtrim(new.location, '/') || '/')
                  AND (t.location COLLATE "C") < (rtrim(new.location, '/') || '0')
                UNION ALL
                SELECT t.id, t.table_id, t.location FROM tms_tables t
                WHERE t.location <> '' AND rtrim(t.location, '/') IN (
                    SELECT substr(new.location, 1, i - 1)
                    FROM generate_series(1, length(new.location)) AS i
                    WHERE substr(new.location, i, 1) = '/')
            ) c
            WHERE c.id <> new.pk
              AND (c.location = new.location
                   OR starts_with(c.location, rtrim(new.location, '/') || '/')
                   OR starts_with(new.location, rtrim(c.location, '/') || '/'))
            ORDER BY c.table_id
            LIMIT 1) AS stored_clash,
           (SELECT t.table_id FROM new e JOIN tms_tables t ON t.id = e.pk
            WHERE e.ord < new.ord
              AND (e.location = new.location
                   OR starts_with(e.location, rtrim(new.location, '/') || '/')
                   OR starts_with(new.location, rtrim(e.location, '/') || '/'))
            ORDER BY e.ord
            LIMIT 1) AS batch_clash
    FROM new
    WHERE new.location <> ''
), upd AS (
    UPDATE tms_tables t SET location = c.location, updated_at = now()
    FROM checked c
    WHERE t.id = c.pk AND c.stored_clash IS NULL AND c.batch_clash IS NULL
    RETURNING t.id
)
SELECT c.pk, coalesce(c.stored_clash, c.batch_clash) AS clash_table
FROM checked c
WHERE c.stored_clash IS NOT NULL OR c.batch_clash IS NOT NULL;

-- name: table_get
SELECT * FROM tms_tables_view WHERE table_id = %(table_id)s;

-- name: table_get_by_pk
SELECT * FROM tms_tables_view WHERE id = %(pk)s;

-- name: table_get_settings_by_pk
-- What the executor needs to build a job: the owner's settings, not the statistics.
SELECT * FROM tms_tables WHERE id = %(pk)s;

-- name: table_list
-- Filters shared by every table_list* query: exact format, state, owner, queue, catalog and
-- namespace; ``search`` a LIKE pattern (its wildcards escaped by the caller) over the id,
-- namespace and name; health bounds (a table never inspected has no score: filtered out by
-- either bound). Ordered by table_id, keyset on it.
SELECT * FROM tms_tables_view
WHERE table_id > %(after_id)s
  AND (%(format)s::text IS NULL OR format = %(format)s)
  AND (%(state)s::tms_table_state IS NULL OR state = %(state)s::tms_table_state)
  AND (%(owner)s::text IS NULL OR owner = %(owner)s)
  AND (%(queue)s::text IS NULL OR queue = %(queue)s)
  AND (%(catalog)s::text IS NULL OR catalog = %(catalog)s)
  AND (%(namespace)s::text IS NULL OR namespace = %(namespace)s)
  AND (%(search)s::text IS NULL OR table_id ILIKE %(search)s OR namespace ILIKE %(search)s
       OR table_name ILIKE %(search)s)
  AND (%(max_health)s::int IS NULL OR health_score <= %(max_health)s)
  AND (%(min_health)s::int IS NULL OR health_score >= %(min_health)s)
ORDER BY table_id
LIMIT %(limit)s;

-- name: table_list_by_health
-- Least healthy first (never inspected last), keyset on (score, table_id) through
-- tms_tables_health_asc.
SELECT * FROM tms_tables_view
WHERE (coalesce(health_score, 101), table_id) > (%(after_key)s::int, %(after_id)s)
  AND (%(format)s::text IS NULL OR format = %(format)s)
  AND (%(state)s::tms_table_state IS NULL OR state = %(state)s::tms_table_state)
  AND (%(owner)s::text IS NULL OR owner = %(owner)s)
  AND (%(queue)s::text IS NULL OR queue = %(queue)s)
  AND (%(catalog)s::text IS NULL OR catalog = %(catalog)s)
  AND (%(namespace)s::text IS NULL OR namespace = %(namespace)s)
  AND (%(search)s::text IS NULL OR table_id ILIKE %(search)s OR namespace ILIKE %(search)s
       OR table_name ILIKE %(search)s)
  AND (%(max_health)s::int IS NULL OR health_score <= %(max_health)s)
  AND (%(min_health)s::int IS NULL OR health_score >= %(min_health)s)
ORDER BY coalesce(health_score, 101), table_id
LIMIT %(limit)s;

-- name: table_list_by_health_desc
-- Healthiest first (never inspected last), keyset on (score, table_id) through
-- tms_tables_health_desc read backwards.
SELECT * FROM tms_tables_view
WHERE (coalesce(health_score, -1), table_id) < (%(after_key)s::int, %(after_id)s)
  AND (%(format)s::text IS NULL OR format = %(format)s)
  AND (%(state)s::tms_table_state IS NULL OR state = %(state)s::tms_table_state)
  AND (%(owner)s::text IS NULL OR owner = %(owner)s)
  AND (%(queue)s::text IS NULL OR queue = %(queue)s)
  AND (%(catalog)s::text IS NULL OR catalog = %(catalog)s)
  AND (%(namespace)s::text IS NULL OR namespace = %(namespace)s)
  AND (%(search)s::text IS NULL OR table_id ILIKE %(search)s OR namespace ILIKE %(search)s
       OR table_name ILIKE %(search)s)
  AND (%(max_health)s::int IS NULL OR health_score <= %(max_health)s)
  AND (%(min_health)s::int IS NULL OR health_score >= %(min_health)s)
ORDER BY coalesce(health_score, -1) DESC, table_id DESC
LIMIT %(limit)s;

-- name: table_list_by_commit
-- Oldest last commit first (never committed first), keyset on (time, table_id). The last
-- commit is computed per table by the view: this order reads every table that passes the
-- filters.
SELECT * FROM tms_tables_view
WHERE (coalesce(last_commit_time, '-infinity'), table_id)
      > (%(after_time)s::timestamptz, %(after_id)s)
  AND (%(format)s::text IS NULL OR format = %(format)s)
  AND (%(state)s::tms_table_state IS NULL OR state = %(state)s::tms_table_state)
  AND (%(owner)s::text IS NULL OR owner = %(owner)s)
  AND (%(queue)s::text IS NULL OR queue = %(queue)s)
  AND (%(catalog)s::text IS NULL OR catalog = %(catalog)s)
  AND (%(namespace)s::text IS NULL OR namespace = %(namespace)s)
  AND (%(search)s::text IS NULL OR table_id ILIKE %(search)s OR namespace ILIKE %(search)s
       OR table_name ILIKE %(search)s)
  AND (%(max_health)s::int IS NULL OR health_score <= %(max_health)s)
  AND (%(min_health)s::int IS NULL OR health_score >= %(min_health)s)
ORDER BY coalesce(last_commit_time, '-infinity'), table_id
LIMIT %(limit)s;

-- name: table_list_by_commit_desc
-- Newest last commit first (never committed last), keyset on (time, table_id).
SELECT * FROM tms_tables_view
WHERE (coalesce(last_commit_time, '-infinity'), table_id)
      < (%(after_time)s::timestamptz, %(after_id)s)
  AND (%(format)s::text IS NULL OR format = %(format)s)
  AND (%(state)s::tms_table_state IS NULL OR state = %(state)s::tms_table_state)
  AND (%(owner)s::text IS NULL OR owner = %(owner)s)
  AND (%(queue)s::text IS NULL OR queue = %(queue)s)
  AND (%(catalog)s::text IS NULL OR catalog = %(catalog)s)
  AND (%(namespace)s::text IS NULL OR namespace = %(namespace)s)
  AND (%(search)s::text IS NULL OR table_id ILIKE %(search)s OR namespace ILIKE %(search)s
       OR table_name ILIKE %(search)s)
  AND (%(max_health)s::int IS NULL OR health_score <= %(max_health)s)
  AND (%(min_health)s::int IS NULL OR health_score >= %(min_health)s)
ORDER BY coalesce(last_commit_time, '-infinity') DESC, table_id DESC
LIMIT %(limit)s;

-- name: table_owners
SELECT table_id, owner FROM tms_tables WHERE table_id = ANY(%(table_ids)s);

-- name: table_update
-- Field-mask update: only the fields whose set_* flag is true change.
UPDATE tms_tables
SET owner = CASE WHEN %(set_owner)s THEN %(owner)s ELSE owner END,
    queue = CASE WHEN %(set_queue)s THEN %(queue)s ELSE queue END,
    priority = CASE WHEN %(set_priority)s THEN %(priority)s ELSE priority END,
    policy = CASE WHEN %(set_policy)s THEN %(policy)s ELSE policy END,
    -- a new policy deserves a fresh decision
    next_check_at = CASE WHEN %(set_policy)s THEN now() ELSE next_check_at END,
    updated_at = now()
WHERE table_id = %(table_id)s
RETURNING id;

-- name: table_set_state
-- Pause or resume, with the reason. A MISSING table is left alone: only discovery, finding
-- it in its catalog again at a checked location, makes it ACTIVE (table_mark_found).
UPDATE tms_tables
SET state = %(state)s::tms_table_state, state_reason = %(reason)s,
    next_check_at = CASE WHEN %(state)s = 'ACTIVE' THEN now() ELSE next_check_at END,
    updated_at = now()
WHERE table_id = %(table_id)s AND state <> 'MISSING'
RETURNING id;

-- name: table_pause_outside
-- ACTIVE tables of a catalog whose checked location its allowed locations no longer hold
-- (an UpdateCatalog shrank them): PAUSED with the reason, and their QUEUED operations
-- cancelled with it, in one statement. A table whose location changed since it was checked
-- (a scheduler recorded a new one meanwhile) is left to the scheduler's own checks.
WITH outside AS (
    SELECT * FROM unnest(%(pks)s::bigint[], %(locations)s::text[], %(reasons)s::text[])
        AS x(pk, location, reason)
), paused AS (
    UPDATE tms_tables t
    SET state = 'PAUSED', state_reason = o.reason, updated_at = now()
    FROM outside o
    WHERE t.id = o.pk AND t.location = o.location AND t.catalog = %(catalog_id)s
      AND t.state = 'ACTIVE'
    RETURNING t.id, t.table_id, t.state_reason
), cancelled AS (
    UPDATE tms_operations op
    SET state = 'CANCELLED', finished_at = now(), error = p.state_reason
    FROM paused p
    WHERE op.table_pk = p.id AND op.state = 'QUEUED'
    RETURNING op.id
)
SELECT table_id FROM paused ORDER BY table_id;

-- name: table_delete
-- The table with its events and mark; its operations and decisions go by ON DELETE CASCADE.
WITH gone AS (
    DELETE FROM tms_tables t
    WHERE t.table_id = %(table_id)s
      AND (%(force)s OR NOT EXISTS (SELECT 1 FROM tms_operations o
                                    WHERE o.table_pk = t.id AND o.state = 'RUNNING'))
    RETURNING id
), events AS (
    DELETE FROM tms_commit_events WHERE table_pk IN (SELECT id FROM gone)
), marks AS (
    DELETE FROM tms_dirty_tables WHERE table_pk IN (SELECT id FROM gone)
)
SELECT id FROM gone;

-- name: table_count_overdue
-- Metrics: active tables the schedulers have not looked at in time (a pull check or a commit
-- mark waiting longer than the grace).
SELECT count(*) AS n FROM tms_tables t
WHERE t.state = 'ACTIVE'
  AND (t.next_check_at < now() - make_interval(secs => %(grace_s)s)
       OR EXISTS (SELECT 1 FROM tms_dirty_tables d
                  WHERE d.table_pk = t.id
                    AND d.since < now() - make_interval(secs => %(grace_s)s)));

-- name: table_list_by_catalog
-- Every table registered in a catalog, for discovery to compare with the catalog's listing.
SELECT * FROM tms_tables WHERE catalog = %(catalog_id)s ORDER BY id;

-- name: table_find_overlapping
-- A table whose checked location is the given one or contains it or lies inside it (two
-- registrations must never share files); ``except_pk`` is the table asking.
SELECT table_id FROM tms_tables
WHERE location <> ''
  AND (location = %(location)s
       OR starts_with(location, %(location)s || '/')
       OR starts_with(%(location)s, location || '/'))
  AND id <> %(except_pk)s
ORDER BY table_id
LIMIT 1;

-- name: table_insert_discovered
-- A table discovery found: no policy of its own (its catalog's default policy applies).
-- Nothing on any conflict (id taken, already registered, location taken).
INSERT INTO tms_tables (table_id, format, catalog, namespace, table_name, base_path, location,
                        owner, queue, priority, discovered)
VALUES (%(table_id)s, %(format)s, %(catalog)s, %(namespace)s, %(table_name)s, %(base_path)s,
        %(location)s, %(owner)s, %(queue)s, %(priority)s, true)
ON CONFLICT DO NOTHING
RETURNING id;

-- name: table_mark_missing
-- Tables their catalog no longer holds: ACTIVE -> MISSING, and their QUEUED operations
-- cancelled with the reason, in one statement. A paused table stays paused.
WITH gone AS (
    UPDATE tms_tables
    SET state = 'MISSING', updated_at = now()
    WHERE id = ANY(%(pks)s::bigint[]) AND catalog = %(catalog_id)s AND state = 'ACTIVE'
    RETURNING id
), cancelled AS (
    UPDATE tms_operations o
    SET state = 'CANCELLED', finished_at = now(), error = %(reason)s
    FROM gone
    WHERE o.table_pk = gone.id AND o.state = 'QUEUED'
    RETURNING o.id
)
SELECT (SELECT count(*) FROM gone) AS tables, (SELECT count(*) FROM cancelled) AS cancelled;

-- name: table_mark_found
-- A MISSING table its catalog holds again, at a checked location: ACTIVE, decided soon.
UPDATE tms_tables
SET state = 'ACTIVE', location = %(location)s, next_check_at = now(), updated_at = now()
WHERE id = %(pk)s AND state = 'MISSING'
RETURNING id;

-- name: table_pause_refused
-- A table whose new location the scheduler refused (it reaches beyond the table: a
-- warehouse root, a namespace, another table's files): PAUSED, so nothing is queued or
-- claimed for it until its location is fixed and it is resumed. Only an ACTIVE table.
UPDATE tms_tables
SET state = 'PAUSED', updated_at = now()
WHERE id = %(pk)s AND state = 'ACTIVE'
RETURNING id;
