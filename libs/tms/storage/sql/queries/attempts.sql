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
