-- v12: no stale work, benefit-ordered work.
--
-- SKIPPED: an operation whose decision no longer holds when an executor is about to run it
-- (re-checked against the table's current snapshot) ends without running, with the reason.
-- It is terminal like SUCCEEDED, FAILED and CANCELLED. A new enum value cannot be used in the
-- transaction that adds it, so the checks and indexes below name the active states instead
-- of the terminal ones.
--
-- benefit: a decision's expected benefit per cost (None when the plugin does not estimate
-- it); among operations of equal priority the claim serves the higher benefit first.
--
-- waits_for: actions of the same table this operation waits for while one of them is QUEUED
-- or RUNNING (a manifest rewrite waits for a compaction, which rewrites manifests itself).

ALTER TYPE tms_operation_state ADD VALUE IF NOT EXISTS 'SKIPPED';
ALTER TYPE tms_attempt_state ADD VALUE IF NOT EXISTS 'SKIPPED';

ALTER TABLE tms_operations
    ADD COLUMN benefit double precision
        CHECK (benefit IS NULL OR (benefit >= 0 AND benefit < 'Infinity'::float8)),
    ADD COLUMN waits_for text[] NOT NULL DEFAULT '{}'
        CHECK (cardinality(waits_for) <= 16),
    DROP CONSTRAINT tms_operations_check,
    -- terminal states, and only they, have a finish time
    ADD CONSTRAINT tms_operations_finished_check
        CHECK ((state NOT IN ('QUEUED', 'RUNNING')) = (finished_at IS NOT NULL));

ALTER TABLE tms_decisions
    ADD COLUMN benefit double precision
        CHECK (benefit IS NULL OR (benefit >= 0 AND benefit < 'Infinity'::float8));

DROP INDEX tms_operations_finished;
CREATE INDEX tms_operations_finished ON tms_operations (finished_at)
    WHERE state NOT IN ('QUEUED', 'RUNNING');

-- The claim's order: priority, then benefit (unknown last), then age.
DROP INDEX tms_operations_queue;
CREATE INDEX tms_operations_queue ON tms_operations (priority DESC, benefit DESC NULLS LAST, id)
    WHERE state = 'QUEUED';
