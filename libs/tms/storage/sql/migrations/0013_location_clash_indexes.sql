-- v13: the overlap check of a table's location (registration, a location the scheduler read
-- anew) finds its candidates through indexes instead of comparing with every table: with
-- 100,000 tables a pass over all of them, under the one location lock, serialised the
-- scheduler's first look at every table. Tables inside a location are a range of the
-- location in byte order ("C" collation); tables containing it are the location's own
-- prefixes, looked up by the location without its trailing slashes.

CREATE INDEX tms_tables_location_bytes ON tms_tables ((location COLLATE "C"))
    WHERE location <> '';
CREATE INDEX tms_tables_location_trimmed ON tms_tables ((rtrim(location, '/')))
    WHERE location <> '';
