-- v14: when the scheduler last looked at a table.
--
-- A scheduler writes a decision only when it differs from the one it last wrote for that
-- table and action (an unchanged table's six equal decisions are not rewritten at every
-- check), so tms_decisions.decided_at is when the decision last changed. checked_at is set
-- for every table a batch decided, in the statement that sets its next check; ExplainTable
-- shows it. NULL: never checked since this column exists.

ALTER TABLE tms_tables ADD COLUMN checked_at timestamptz;
