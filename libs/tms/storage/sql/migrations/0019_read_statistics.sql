-- v19: how each table is read, learnt from the engines' Iceberg scan reports.
--
-- Never the raw reports: per table, decayed weights (each observation adds 1, and a weight
-- halves every half-life, applied when it is next touched: weight * 0.5 ^ (age / half-life))
-- per (column, operator class), per set of columns filtered together, and of the scans
-- themselves with what the planner kept. The intake caps the rows per table (columns and
-- sets), so a hostile engine cannot grow a table's statistics without bound.

CREATE TABLE tms_read_predicates (
    table_pk bigint NOT NULL REFERENCES tms_tables (id) ON DELETE CASCADE,
    column_name text NOT NULL CHECK (length(column_name) BETWEEN 1 AND 256),
    -- eq, range, in, null, other (tms.reads.reports), or projected: read, not filtered
    operator text NOT NULL CHECK (operator IN ('eq', 'range', 'in', 'null', 'other',
                                               'projected')),
    weight double precision NOT NULL CHECK (weight >= 0),
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (table_pk, column_name, operator)
);

CREATE TABLE tms_read_column_sets (
    table_pk bigint NOT NULL REFERENCES tms_tables (id) ON DELETE CASCADE,
    columns text[] NOT NULL CHECK (cardinality(columns) BETWEEN 1 AND 4),
    weight double precision NOT NULL CHECK (weight >= 0),
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (table_pk, columns)
);

CREATE TABLE tms_read_scans (
    table_pk bigint PRIMARY KEY REFERENCES tms_tables (id) ON DELETE CASCADE,
    -- decayed: scans, scans with a filter, and the sums of what the planner kept and skipped
    scans double precision NOT NULL CHECK (scans >= 0),
    filtered_scans double precision NOT NULL CHECK (filtered_scans >= 0),
    result_files double precision NOT NULL CHECK (result_files >= 0),
    skipped_files double precision NOT NULL CHECK (skipped_files >= 0),
    result_bytes double precision NOT NULL CHECK (result_bytes >= 0),
    -- not decayed: every scan report accepted since the table's statistics began
    reports bigint NOT NULL DEFAULT 0 CHECK (reports >= 0),
    first_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);
