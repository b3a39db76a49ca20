-- Commit intake: the one path by which commits enter TMS.

-- name: commits_notify
-- Single and batch notifications alike, inserts only: the events (idempotent on (table,
-- commit id); the caller has removed duplicates within the batch) and the tables' "new
-- commits" marks. Returns the known tables and the events not recorded (duplicates).
-- The events arrive as one JSON array of [table_id, commit_id, commit_time, files_added,
-- bytes_added, operation_type, traceparent, refused] arrays, ``refused`` the formats whose
-- plugin refuses the commit id (the API asked each one): an event whose table is of such a
-- format is not recorded and is answered with that format: the client encodes it in C
-- (json.dumps), where seven array parameters cost a Python loop per element in psycopg's
-- list dumper (half the API's CPU on a batch of 500). jsonb, not json: parsed once, where
-- each ->> on a json value parses that element's text again.
WITH input AS (
    SELECT e->>0 AS table_id, e->>1 AS commit_id, (e->>2)::timestamptz AS commit_time,
           (e->>3)::bigint AS files_added, (e->>4)::bigint AS bytes_added,
           e->>5 AS operation_type, e->>6 AS traceparent, coalesce(e->7, '[]') AS refused, ord
    FROM jsonb_array_elements(%(events)s::jsonb) WITH ORDINALITY AS i(e, ord)
), known AS (
    SELECT id, table_id, format FROM tms_tables
    WHERE table_id IN (SELECT DISTINCT table_id FROM input)
), ins AS (
    INSERT INTO tms_commit_events (table_pk, commit_id, commit_time, files_added, bytes_added,
                                   operation_type)
    SELECT k.id, i.commit_id, i.commit_time, i.files_added, i.bytes_added, i.operation_type
    FROM input i JOIN known k ON k.table_id = i.table_id
    WHERE NOT i.refused ? k.format
    ORDER BY i.ord  -- seq follows the writer's order: the last one is the latest commit
    ON CONFLICT (table_pk, commit_id) DO NOTHING
    RETURNING table_pk, commit_id
), dirty AS (
    -- a mark already waiting keeps the trace of the commit that set it
    INSERT INTO tms_dirty_tables (table_pk, traceparent)
    SELECT DISTINCT ON (ins.table_pk) ins.table_pk, nullif(i.traceparent, '')
    FROM ins JOIN known k ON k.id = ins.table_pk
    JOIN input i ON i.table_id = k.table_id AND i.commit_id = ins.commit_id
    ORDER BY ins.table_pk, i.ord
    ON CONFLICT (table_pk) DO NOTHING
)
-- The answer: one row per known table (commit_id NULL), and the events of known tables that
-- were not recorded (already stored) only when fewer were recorded than sent: the usual batch
-- of new commits answers with its known tables alone, not one row per event. (Counting the
-- events of known tables instead of taking the number sent cost a join: 20-100 us of PostgreSQL
-- CPU per statement of one event, measured.)
-- An event its table's format refused comes with that format (refused_by), one not recorded
-- because it was already stored without.
SELECT k.table_id, NULL::text AS commit_id, NULL::text AS refused_by FROM known k
UNION ALL
SELECT i.table_id, i.commit_id, k.format FROM input i JOIN known k ON k.table_id = i.table_id
WHERE i.refused ? k.format
UNION ALL
SELECT i.table_id, i.commit_id, NULL FROM input i JOIN known k ON k.table_id = i.table_id
WHERE (SELECT count(*) FROM ins) < %(sent)s  -- events sent; checked once, before any row
  AND NOT i.refused ? k.format
  AND NOT EXISTS (SELECT FROM ins WHERE ins.table_pk = k.id AND ins.commit_id = i.commit_id);

-- name: commits_notify_new
-- commits_notify for the usual batch, every event new: a plain INSERT, without ON CONFLICT's
-- speculative insertion (a conflict check before each row, a speculative lock, a second WAL
-- record to confirm the row): about a quarter less PostgreSQL CPU per commit, measured. An
-- event already stored fails the whole statement on the primary key (unique_violation,
-- nothing written) and the caller runs commits_notify instead, so idempotency is still the
-- primary key's. Returns the known tables, and the events their table's format refused
-- (as commits_notify does).
WITH input AS (
    SELECT e->>0 AS table_id, e->>1 AS commit_id, (e->>2)::timestamptz AS commit_time,
           (e->>3)::bigint AS files_added, (e->>4)::bigint AS bytes_added,
           e->>5 AS operation_type, e->>6 AS traceparent, coalesce(e->7, '[]') AS refused, ord
    FROM jsonb_array_elements(%(events)s::jsonb) WITH ORDINALITY AS i(e, ord)
), known AS (
    SELECT id, table_id, format FROM tms_tables
    WHERE table_id IN (SELECT DISTINCT table_id FROM input)
), ins AS (
    INSERT INTO tms_commit_events (table_pk, commit_id, commit_time, files_added, bytes_added,
                                   operation_type)
    SELECT k.id, i.commit_id, i.commit_time, i.files_added, i.bytes_added, i.operation_type
    FROM input i JOIN known k ON k.table_id = i.table_id
    WHERE NOT i.refused ? k.format
    ORDER BY i.ord  -- seq follows the writer's order: the last one is the latest commit
), dirty AS (
    -- every event of a known table its format accepts is inserted (or none is): the mark
    -- takes the first one's trace; a mark already waiting keeps the trace of the commit
    -- that set it
    INSERT INTO tms_dirty_tables (table_pk, traceparent)
    SELECT DISTINCT ON (k.id) k.id, nullif(i.traceparent, '')
    FROM input i JOIN known k ON k.table_id = i.table_id
    WHERE NOT i.refused ? k.format
    ORDER BY k.id, i.ord
    ON CONFLICT (table_pk) DO NOTHING
)
SELECT table_id, NULL::text AS commit_id, NULL::text AS refused_by FROM known
UNION ALL
SELECT i.table_id, i.commit_id, k.format FROM input i JOIN known k ON k.table_id = i.table_id
WHERE i.refused ? k.format;

-- name: commits_mark_dirty
-- Put a table's "new commits" mark back (a decision failed before it could see them).
INSERT INTO tms_dirty_tables (table_pk, traceparent) VALUES (%(pk)s, %(traceparent)s)
ON CONFLICT (table_pk) DO NOTHING;
