-- v15: an action that keeps failing is held.
--
-- After `execution.hold-after-failures` operations of one (table, action) failed in a row
-- (counted from the operations themselves: FAILED ones after the last SUCCEEDED one and after
-- the last release), the scheduler holds the action: no operation is queued for it until
-- held_until (the hold doubles each time it is placed again in a row), and then one try. A
-- new commit also allows one try (a busy writer's commits must not undo the hold); a policy
-- change, ResumeTable or a success releases it. One row per (table, action) ever held;
-- every write is fenced by `version`.

CREATE TABLE tms_action_holds (
    table_pk bigint NOT NULL REFERENCES tms_tables(id) ON DELETE CASCADE,
    action text NOT NULL,
    state text NOT NULL CHECK (state IN ('HELD', 'RELEASED')),
    -- failed operations in a row when last held, and the last of them
    failures integer NOT NULL CHECK (failures >= 0),
    last_operation_id bigint NOT NULL,
    -- holds placed in a row without a release: the exponent of the hold's length
    holds integer NOT NULL CHECK (holds >= 0),
    reason text NOT NULL,
    held_at timestamptz NOT NULL,
    held_until timestamptz NOT NULL,
    -- the table's latest commit event (tms_commit_events.seq) when held: a later one allows
    -- one try
    commit_seq bigint NOT NULL DEFAULT 0,
    -- a digest of the policy in force when held: another policy releases the hold
    policy_digest text NOT NULL,
    released_at timestamptz,
    released_by text CHECK (released_by IN ('commit', 'policy', 'resume', 'success')),
    -- operations up to this one no longer count as failures in a row
    released_after_id bigint NOT NULL DEFAULT 0,
    version bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (table_pk, action)
);

CREATE INDEX tms_action_holds_held ON tms_action_holds (held_at, table_pk) WHERE state = 'HELD';
