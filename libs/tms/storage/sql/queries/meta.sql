-- The schema's own bookkeeping: migrations, their lock, and the health check.

-- name: meta_ping
SELECT 1;

-- name: meta_advisory_lock
SELECT pg_advisory_lock(%(key)s);

-- name: meta_advisory_unlock
SELECT pg_advisory_unlock(%(key)s);

-- name: meta_create_migrations_table
CREATE TABLE IF NOT EXISTS tms_schema_migrations (
    version     integer PRIMARY KEY,
    name        text NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
);

-- name: meta_applied_migrations
SELECT version FROM tms_schema_migrations ORDER BY version;

-- name: meta_record_migration
INSERT INTO tms_schema_migrations (version, name) VALUES (%(version)s, %(name)s);

-- name: meta_database_exists
-- Local stacks and tests: whether a database of that name exists yet.
SELECT 1 FROM pg_database WHERE datname = %(name)s;

-- name: meta_create_database
-- A template: the name is filled in as a quoted identifier (psycopg.sql.Identifier).
CREATE DATABASE {name};

-- name: meta_create_database_from_template
-- Tests: a copy of a database migrated once (file-level copy, no migration run per database).
-- Both names are filled in as quoted identifiers; the template must have no open connection.
CREATE DATABASE {name} TEMPLATE {template};
