-- v7: the latest Spark progress of a running attempt (active stages and their task counts, as
-- the warm engine samples them), so an operator sees how far a long operation has come. Null
-- when the engine cannot observe its job (cold spark-submit) or nothing was sampled yet.

ALTER TABLE tms_attempts ADD COLUMN progress jsonb;
