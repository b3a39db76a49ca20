-- Catalogs: operator-owned connections to the catalogs tables live in. A catalog holds its
-- connection properties, secret *references* (never secret values), storage options, the
-- locations its tables may live in, who may register tables in it, and how it is discovered.

CREATE TYPE tms_catalog_type AS ENUM ('sql', 'jdbc', 'rest', 'hive', 'glue', 'hadoop');
-- a table discovery no longer finds in its catalog
ALTER TYPE tms_table_state ADD VALUE IF NOT EXISTS 'MISSING';

CREATE TABLE tms_catalogs (
    id                          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- also the catalog's name inside the engines (pyiceberg, Spark): letters, digits, _
    catalog_id                  text NOT NULL UNIQUE CHECK (catalog_id ~ '^[a-z][a-z0-9_]{0,62}$'),
    type                        tms_catalog_type NOT NULL,
    properties                  jsonb NOT NULL DEFAULT '{}'::jsonb
                                CHECK (jsonb_typeof(properties) = 'object'),
    -- property name -> reference ("env:TMS_SECRET_X" or "file:name"); never a value
    secrets                     jsonb NOT NULL DEFAULT '{}'::jsonb
                                CHECK (jsonb_typeof(secrets) = 'object'),
    storage_options             jsonb NOT NULL DEFAULT '{}'::jsonb
                                CHECK (jsonb_typeof(storage_options) = 'object'),
    -- empty: no location is allowed (tables of the catalog are refused where they are used)
    allowed_locations           text[] NOT NULL DEFAULT '{}',
    allowed_owners              text[] NOT NULL DEFAULT '{}',
    allowed_tokens              text[] NOT NULL DEFAULT '{}',
    default_policy              jsonb NOT NULL DEFAULT '{}'::jsonb
                                CHECK (jsonb_typeof(default_policy) = 'object'),
    discovery_enabled           boolean NOT NULL DEFAULT false,
    discovery_include           text[] NOT NULL DEFAULT '{}',
    discovery_exclude           text[] NOT NULL DEFAULT '{}',
    discovery_queue             text NOT NULL DEFAULT 'default',
    discovery_owner             text NOT NULL DEFAULT '',
    discovery_priority          integer NOT NULL DEFAULT 0
                                CHECK (discovery_priority BETWEEN -1000 AND 1000),
    discovery_interval_s        integer NOT NULL DEFAULT 300
                                CHECK (discovery_interval_s BETWEEN 10 AND 86400),
    discovery_next_at           timestamptz NOT NULL DEFAULT now(),
    discovery_last_at           timestamptz,
    discovery_last_error        text,
    discovery_last_registered   integer,
    discovery_last_missing      integer,
    created_at                  timestamptz NOT NULL DEFAULT now(),
    updated_at                  timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX tms_catalogs_discovery_due ON tms_catalogs (discovery_next_at)
    WHERE discovery_enabled;

-- The table's real location as its catalog resolved it and the checks accepted it ('' until
-- first resolved), and whether discovery registered it.
ALTER TABLE tms_tables ADD COLUMN location text NOT NULL DEFAULT '';
ALTER TABLE tms_tables ADD COLUMN discovered boolean NOT NULL DEFAULT false;
