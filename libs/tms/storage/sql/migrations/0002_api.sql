-- v2: the full API. Idempotent requests, cancellation, retries, manual triggers.

-- request_id idempotency (AIP-155): the first request's fingerprint and result, so a replay
-- returns the first result and a reuse with a different request is refused.
CREATE TABLE tms_requests (
    request_id   text PRIMARY KEY CHECK (length(request_id) BETWEEN 1 AND 128),
    method       text NOT NULL,
    fingerprint  text NOT NULL,
    resource     text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tms_requests_age ON tms_requests (created_at);

ALTER TABLE tms_operations
    ADD COLUMN cancel_requested boolean NOT NULL DEFAULT false,
    ADD COLUMN retry_of bigint REFERENCES tms_operations (id) ON DELETE SET NULL,
    DROP CONSTRAINT tms_operations_trigger_check,
    ADD CONSTRAINT tms_operations_trigger_check CHECK (trigger IN ('policy', 'manual', 'retry')),
    -- only active operations can have a pending cancel request
    ADD CONSTRAINT tms_operations_cancel_active
        CHECK (NOT cancel_requested OR state IN ('QUEUED', 'RUNNING', 'CANCELLED'));

CREATE INDEX tms_operations_created ON tms_operations (created_at DESC, id DESC);
CREATE INDEX tms_tables_owner ON tms_tables (owner, table_id);
