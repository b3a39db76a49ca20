-- TMS schema v1: tables, commit events, operations, scheduler decisions.
-- The invariants live here, not only in code: enums, CHECKs and partial unique indexes.

CREATE TYPE tms_operation_state AS ENUM ('QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED');
CREATE TYPE tms_table_state AS ENUM ('ACTIVE', 'PAUSED');

CREATE TABLE tms_tables (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    table_id            text NOT NULL UNIQUE CHECK (table_id ~ '^[a-z][a-z0-9_.-]{0,62}$'),
    format              text NOT NULL CHECK (format ~ '^[a-z][a-z0-9_-]{0,31}$'),
    catalog             text NOT NULL DEFAULT '',
    namespace           text NOT NULL DEFAULT '',
    table_name          text NOT NULL DEFAULT '',
    base_path           text NOT NULL DEFAULT '',
    catalog_properties  jsonb NOT NULL DEFAULT '{}'::jsonb,
    owner               text NOT NULL DEFAULT '',
    queue               text NOT NULL DEFAULT 'default',
    priority            integer NOT NULL DEFAULT 0 CHECK (priority BETWEEN -1000 AND 1000),
    policy              jsonb NOT NULL DEFAULT '{}'::jsonb,
    state               tms_table_state NOT NULL DEFAULT 'ACTIVE',
    -- commit_seq counts accepted commit events; decided_seq is the value the scheduler last
    -- decided on. commit_seq > decided_seq means "new commits, decide again": no signal is lost
    -- even when a commit lands while a decision is being taken.
    commit_seq          bigint NOT NULL DEFAULT 0,
    decided_seq         bigint NOT NULL DEFAULT 0 CHECK (decided_seq <= commit_seq),
    last_commit_id      text,
    last_commit_time    timestamptz,
    next_check_at       timestamptz NOT NULL DEFAULT now(),
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    CHECK (base_path <> '' OR table_name <> '')
);

CREATE INDEX tms_tables_due ON tms_tables (next_check_at) WHERE state = 'ACTIVE';
CREATE INDEX tms_tables_dirty ON tms_tables (id) WHERE commit_seq > decided_seq AND state = 'ACTIVE';

CREATE TABLE tms_commit_events (
    table_pk        bigint NOT NULL REFERENCES tms_tables (id) ON DELETE CASCADE,
    commit_id       text NOT NULL,
    commit_time     timestamptz,
    received_at     timestamptz NOT NULL DEFAULT now(),
    files_added     bigint CHECK (files_added >= 0),
    bytes_added     bigint CHECK (bytes_added >= 0),
    operation_type  text NOT NULL DEFAULT '',
    PRIMARY KEY (table_pk, commit_id)
);

CREATE TABLE tms_operations (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    table_pk          bigint NOT NULL REFERENCES tms_tables (id) ON DELETE CASCADE,
    action            text NOT NULL CHECK (action ~ '^[a-z][a-z0-9_-]{0,31}$'),
    state             tms_operation_state NOT NULL DEFAULT 'QUEUED',
    attempt           integer NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    max_attempts      integer NOT NULL DEFAULT 3 CHECK (max_attempts >= 1),
    priority          integer NOT NULL DEFAULT 0,
    trigger           text NOT NULL DEFAULT 'policy' CHECK (trigger IN ('policy', 'manual')),
    reason            text NOT NULL,
    params            jsonb NOT NULL DEFAULT '{}'::jsonb,
    metrics           jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at        timestamptz NOT NULL DEFAULT now(),
    started_at        timestamptz,
    finished_at       timestamptz,
    lease_owner       text,
    lease_expires_at  timestamptz,
    engine_handle     text,
    exit_code         integer,
    result            jsonb,
    error             text,
    log_tail          text,
    -- terminal states, and only they, have a finish time
    CHECK ((state IN ('SUCCEEDED', 'FAILED', 'CANCELLED')) = (finished_at IS NOT NULL)),
    -- a RUNNING operation always has a lease holder
    CHECK (state <> 'RUNNING' OR (lease_owner IS NOT NULL AND lease_expires_at IS NOT NULL
                                  AND attempt >= 1))
);

-- at most one active operation per (table, action)
CREATE UNIQUE INDEX tms_operations_one_active
    ON tms_operations (table_pk, action) WHERE state IN ('QUEUED', 'RUNNING');
-- at most one RUNNING operation per table
CREATE UNIQUE INDEX tms_operations_one_running
    ON tms_operations (table_pk) WHERE state = 'RUNNING';
CREATE INDEX tms_operations_queue ON tms_operations (priority DESC, id) WHERE state = 'QUEUED';
CREATE INDEX tms_operations_by_table ON tms_operations (table_pk, id DESC);
CREATE INDEX tms_operations_leases ON tms_operations (lease_expires_at) WHERE state = 'RUNNING';

-- The last decision per (table, action), for "why / why not" (ExplainTable).
CREATE TABLE tms_decisions (
    table_pk      bigint NOT NULL REFERENCES tms_tables (id) ON DELETE CASCADE,
    action        text NOT NULL,
    decided_at    timestamptz NOT NULL DEFAULT now(),
    should_run    boolean NOT NULL,
    reason        text NOT NULL,
    metrics       jsonb NOT NULL DEFAULT '{}'::jsonb,
    operation_id  bigint REFERENCES tms_operations (id) ON DELETE SET NULL,
    scheduler_id  text NOT NULL,
    PRIMARY KEY (table_pk, action)
);
