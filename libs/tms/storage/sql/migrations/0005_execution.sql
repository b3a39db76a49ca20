-- v5: dependable execution. Every attempt keeps its own record, failed attempts come back after
-- a backoff (run_after), and queues can cap how many of their operations run at once.

CREATE TYPE tms_attempt_state AS ENUM
    ('RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'LOST', 'HANDED_BACK');

ALTER TABLE tms_operations
    -- the table's queue when the operation was queued: what per-queue limits count
    ADD COLUMN queue text NOT NULL DEFAULT 'default',
    -- a QUEUED operation is not claimed before this (retry backoff)
    ADD COLUMN run_after timestamptz NOT NULL DEFAULT now();

UPDATE tms_operations o SET queue = t.queue FROM tms_tables t WHERE t.id = o.table_pk;

CREATE INDEX tms_operations_running_queue ON tms_operations (queue) WHERE state = 'RUNNING';

-- One row per attempt: who ran it, when, with which engine handle, and how it ended.
CREATE TABLE tms_attempts (
    operation_id   bigint NOT NULL REFERENCES tms_operations (id) ON DELETE CASCADE,
    attempt        integer NOT NULL CHECK (attempt >= 1),
    executor_id    text NOT NULL,
    state          tms_attempt_state NOT NULL DEFAULT 'RUNNING',
    started_at     timestamptz NOT NULL DEFAULT now(),
    finished_at    timestamptz,
    engine_handle  text,
    exit_code      integer,
    error          text,
    log_tail       text,
    result         jsonb,
    -- a retry of this attempt is not claimed before this
    retry_at       timestamptz,
    PRIMARY KEY (operation_id, attempt),
    CHECK ((state = 'RUNNING') = (finished_at IS NULL))
);

-- Attempts already under way or finished before this version keep a record of their last try.
INSERT INTO tms_attempts (operation_id, attempt, executor_id, state, started_at, finished_at,
                          engine_handle, exit_code, error, log_tail, result)
SELECT id, attempt, coalesce(lease_owner, ''),
       CASE WHEN state = 'RUNNING' THEN 'RUNNING'
            WHEN state = 'QUEUED' THEN 'LOST'
            ELSE state::text END::tms_attempt_state,
       coalesce(started_at, created_at),
       CASE WHEN state = 'RUNNING' THEN NULL ELSE coalesce(finished_at, now()) END,
       engine_handle, exit_code, error, log_tail, result
FROM tms_operations WHERE attempt >= 1;

-- Per-queue concurrency limits across every executor (no row or NULL: no limit).
CREATE TABLE tms_queues (
    name         text PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9_-]{0,62}$'),
    max_running  integer CHECK (max_running >= 0),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
