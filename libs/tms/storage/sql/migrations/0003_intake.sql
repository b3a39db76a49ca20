-- v3: a commit notification writes only inserts. Measured on v2: every NotifyCommit updated its
-- table's row (a counter), so notifications of one table queued on that row lock, every update
-- was a non-HOT update (commit_seq was in a partial index) and batches serialised on their
-- tables' rows. Now an event is one insert, and "this table has new commits" is an
-- INSERT ... ON CONFLICT DO NOTHING into a small set the scheduler consumes.

-- Events outlive nothing important: deregistration deletes them explicitly, and an event that
-- races a deregistration is an orphan the pruning removes. Dropping the foreign key saves its
-- per-row check (a row lock on the parent) on the hottest path.
ALTER TABLE tms_commit_events DROP CONSTRAINT tms_commit_events_table_pk_fkey;
ALTER TABLE tms_commit_events ADD COLUMN seq bigint GENERATED ALWAYS AS IDENTITY;
CREATE INDEX tms_commit_events_latest ON tms_commit_events (table_pk, seq DESC);

-- Tables with commits no decision has seen yet. The scheduler deletes a table's row when it
-- starts deciding; a commit arriving during the decision inserts it again.
CREATE TABLE tms_dirty_tables (
    table_pk  bigint PRIMARY KEY,
    since     timestamptz NOT NULL DEFAULT now()
);
INSERT INTO tms_dirty_tables (table_pk)
    SELECT id FROM tms_tables WHERE commit_seq > decided_seq;

DROP INDEX tms_tables_dirty;
ALTER TABLE tms_tables
    DROP COLUMN decided_seq,
    DROP COLUMN commit_seq,
    DROP COLUMN last_commit_id,
    DROP COLUMN last_commit_time;
