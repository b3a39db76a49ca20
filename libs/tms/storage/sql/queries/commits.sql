-- Commit intake: the one path by which commits enter TMS.

-- name: commits_notify
-- Single and batch notifications alike, inserts only: the events (idempotent on (table,
-- commit id); the caller has removed duplicates within the batch) and the tables' "new
-- commits" marks. Returns the known tables and the events newly recorded.
WITH input AS (
    SELECT * FROM unnest(%(table_ids)s::text[], %(commit_ids)s::text[],
                         %(commit_times)s::timestamptz[], %(files_added)s::bigint[],
                         %(bytes_added)s::bigint[], %(operation_types)s::text[],
                         %(traceparents)s::text[])
        WITH ORDINALITY AS i(table_id, commit_id, commit_time, files_added, bytes_added,
                             operation_type, traceparent, ord)
), known AS (
    SELECT id, table_id FROM tms_tables WHERE table_id = ANY(%(table_ids)s)
), ins AS (
    INSERT INTO tms_commit_events (table_pk, commit_id, commit_time, files_added, bytes_added,
                                   operation_type)
    SELECT k.id, i.commit_id, i.commit_time, i.files_added, i.bytes_added, i.operation_type
    FROM input i JOIN known k ON k.table_id = i.table_id
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
SELECT k.table_id, NULL::text AS commit_id FROM known k
UNION ALL
SELECT k.table_id, ins.commit_id FROM ins JOIN known k ON k.id = ins.table_pk;

-- name: commits_mark_dirty
-- Put a table's "new commits" mark back (a decision failed before it could see them).
INSERT INTO tms_dirty_tables (table_pk, traceparent) VALUES (%(pk)s, %(traceparent)s)
ON CONFLICT (table_pk) DO NOTHING;
