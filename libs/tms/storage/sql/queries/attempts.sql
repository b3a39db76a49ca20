-- Attempts: one record per try of an operation, kept after the operation moves on. They are
-- opened by operation_claim and ended by tms_attempt_close (see operations.sql).

-- name: attempt_list
SELECT * FROM tms_attempts WHERE operation_id = ANY(%(ids)s::bigint[])
ORDER BY operation_id, attempt;

-- name: attempt_set_engine_handle
-- The engine's handle (Spark application id) of the running attempt, on the operation and on
-- the attempt's record. Fenced like every write of a running attempt.
WITH o AS (
    UPDATE tms_operations SET engine_handle = %(engine_handle)s
    WHERE id = %(id)s AND state = 'RUNNING' AND attempt = %(attempt)s
      AND lease_owner = %(owner)s
    RETURNING id, attempt
), a AS (
    UPDATE tms_attempts a SET engine_handle = %(engine_handle)s
    FROM o WHERE a.operation_id = o.id AND a.attempt = o.attempt
)
SELECT id FROM o;

-- name: attempt_set_progress
-- The latest progress the engine reported for the running attempt (replacing the last),
-- fenced like attempt_set_engine_handle. The attempt's own state is checked too: a finish that
-- commits while this waits for the attempt row makes it write nothing.
UPDATE tms_attempts a SET progress = %(progress)s
FROM tms_operations o
WHERE o.id = %(id)s AND o.state = 'RUNNING' AND o.attempt = %(attempt)s
  AND o.lease_owner = %(owner)s
  AND a.operation_id = o.id AND a.attempt = o.attempt AND a.state = 'RUNNING'
RETURNING a.operation_id AS id;

-- name: attempt_set_report_token
-- The digest of the token the running attempt's job reports its result with; fenced like
-- attempt_set_engine_handle (a lost attempt gets no token).
UPDATE tms_attempts a SET report_token_sha256 = %(digest)s
FROM tms_operations o
WHERE o.id = %(id)s AND o.state = 'RUNNING' AND o.attempt = %(attempt)s
  AND o.lease_owner = %(owner)s
  AND a.operation_id = o.id AND a.attempt = o.attempt AND a.state = 'RUNNING'
RETURNING a.operation_id AS id;

-- name: attempt_report_lookup
-- What ReportJobResult checks before it writes: the attempt's token digest and whether it
-- still runs (an attempt of another table's operation is not found).
SELECT a.report_token_sha256, a.state = 'RUNNING' AND o.state = 'RUNNING'
           AND o.attempt = a.attempt AS running,
       a.reported_result
FROM tms_attempts a
JOIN tms_operations o ON o.id = a.operation_id
JOIN tms_tables t ON t.id = o.table_pk
WHERE a.operation_id = %(id)s AND a.attempt = %(attempt)s AND t.table_id = %(table_id)s;

-- name: attempt_report_result
-- The job's result, fenced: this operation, this attempt, still RUNNING, the token's digest,
-- and nothing reported yet (a replay of the same result writes nothing and is acknowledged).
UPDATE tms_attempts a SET reported_result = %(result)s, reported_at = now()
FROM tms_operations o
WHERE a.operation_id = %(id)s AND a.attempt = %(attempt)s AND a.state = 'RUNNING'
  AND a.report_token_sha256 = %(digest)s AND a.reported_result IS NULL
  AND o.id = a.operation_id AND o.state = 'RUNNING' AND o.attempt = a.attempt
RETURNING a.operation_id AS id;

-- name: attempt_reported_result
-- What the attempt's job reported (null: nothing yet), read by its executor.
SELECT reported_result FROM tms_attempts
WHERE operation_id = %(id)s AND attempt = %(attempt)s;
