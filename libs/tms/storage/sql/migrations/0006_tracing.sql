-- v6: a trace follows a commit through the decision to the executor's attempt. The W3C
-- traceparent of the commit that set a table's mark, and of the decision that queued an
-- operation, travel with the rows.

ALTER TABLE tms_dirty_tables ADD COLUMN traceparent text;
ALTER TABLE tms_operations ADD COLUMN traceparent text;
