-- v8: each state transition written once. Closing an attempt's record (how it ended, when, with
-- what result) was repeated by every query that moves an operation out of RUNNING; it is now
-- one function those queries call. Attempts handed back on an executor's shutdown are counted
-- apart: they are not failures, so they do not use up the operation's attempts.

ALTER TABLE tms_operations ADD COLUMN handed_back integer NOT NULL DEFAULT 0;
UPDATE tms_operations o
SET handed_back = (SELECT count(*) FROM tms_attempts a
                   WHERE a.operation_id = o.id AND a.state = 'HANDED_BACK');
ALTER TABLE tms_operations ADD CONSTRAINT tms_operations_handed_back_range
    CHECK (handed_back >= 0 AND handed_back <= attempt);

-- Ends the RUNNING record of (operation, attempt). A record already ended is left alone, so a
-- late or repeated call changes nothing. Returns whether a record was ended.
CREATE FUNCTION tms_attempt_close(p_operation_id bigint, p_attempt integer,
                                  p_state tms_attempt_state, p_error text,
                                  p_result jsonb DEFAULT NULL, p_log_tail text DEFAULT NULL,
                                  p_exit_code integer DEFAULT NULL,
                                  p_retry_at timestamptz DEFAULT NULL)
RETURNS boolean
LANGUAGE sql VOLATILE
AS $$
    WITH closed AS (
        UPDATE tms_attempts
        SET state = p_state, finished_at = now(), error = p_error, result = p_result,
            log_tail = p_log_tail, exit_code = p_exit_code, retry_at = p_retry_at
        WHERE operation_id = p_operation_id AND attempt = p_attempt AND state = 'RUNNING'
        RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM closed)
$$;
