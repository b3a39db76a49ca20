-- v11: the Spark job reports its result through the API (ReportJobResult), not through a file
-- on the executor's disk, so a driver may run anywhere (cluster deploy mode). Each attempt gets
-- a token of its own; only its SHA-256 is kept. A report is accepted once per attempt, only
-- while the attempt runs and only with the attempt's token.

ALTER TABLE tms_attempts
    ADD COLUMN report_token_sha256 bytea
        CHECK (report_token_sha256 IS NULL OR octet_length(report_token_sha256) = 32),
    ADD COLUMN reported_result jsonb
        CHECK (reported_result IS NULL OR jsonb_typeof(reported_result) = 'object'),
    ADD COLUMN reported_at timestamptz,
    ADD CONSTRAINT tms_attempts_reported_check
        CHECK ((reported_result IS NULL) = (reported_at IS NULL));
