-- Tables name a catalog and an identifier; inline catalog properties go away. One physical
-- table, one registration.
--
-- Existing registrations become catalogs: one catalog per distinct (old catalog name,
-- catalog properties without their secrets). Secrets are never copied in clear: a property
-- whose name looks secret, and a password inside a URI (user:password@host or
-- ?password=...), become references env:TMS_SECRET_<CATALOG>_<KEY> that the operator sets
-- once in the TMS processes' environment (README, "Upgrading to catalogs"). The catalog's
-- allowed locations are the warehouse and the base paths its tables used. A migration that
-- finds the same table registered twice stops and lists them rather than choosing one.

CREATE TEMP TABLE tms_mig_props ON COMMIT DROP AS
WITH src AS (
    SELECT t.id AS table_pk, t.format, t.catalog AS old_name, t.base_path,
           p.key, p.value,
           p.key ~* ('pass(word|wd|phrase)?|secret|token|credential|private|access[-_.]?key|'
                     'api[-_.]?key|session[-_.]?key|sas|signature|auth') AS secret_key,
           -- a URI with a password in its authority (scheme://user:pw@host, jdbc:... too)
           p.value ~ '^(jdbc:)?[a-zA-Z][a-zA-Z0-9+.-]*://[^/?#@:]*:[^/?#]*@' AS userinfo_pw,
           -- a password in a URI's query string (?password=..., &pwd=...)
           p.value ~* '[?&;](password|passwd|pwd|secret|token)=' AS query_pw
    FROM tms_tables t
    CROSS JOIN LATERAL jsonb_each_text(t.catalog_properties) p
)
SELECT table_pk, key,
       CASE WHEN secret_key THEN NULL
            ELSE regexp_replace(
                     regexp_replace(value, '^((jdbc:)?[a-zA-Z][a-zA-Z0-9+.-]*://[^/?#@:]*):[^/?#]*@',
                                    '\1@'),
                     '([?&;])(password|passwd|pwd|secret|token)=[^&;#]*&?', '\1', 'gi')
       END AS clear_value,
       -- the secret property this entry's secret goes to (NULL: none)
       CASE WHEN secret_key THEN key
            WHEN userinfo_pw OR query_pw THEN
                CASE WHEN key = 'uri' THEN 'jdbc.password' ELSE key || '.password' END
       END AS secret_name
FROM src;

-- Each old registration's catalog: its name, type and cleaned properties.
CREATE TEMP TABLE tms_mig_tables ON COMMIT DROP AS
SELECT t.id AS table_pk, t.table_id, t.format, t.base_path,
       coalesce(nullif(t.catalog, ''),
                CASE WHEN t.format = 'hudi' OR t.base_path <> '' THEN 'hadoop'
                     ELSE 'catalog' END) AS old_name,
       coalesce((SELECT jsonb_object_agg(p.key, p.clear_value) FROM tms_mig_props p
                 WHERE p.table_pk = t.id AND p.clear_value IS NOT NULL AND p.key <> 'type'),
                '{}'::jsonb) AS clear_props,
       coalesce((SELECT array_agg(DISTINCT p.secret_name) FROM tms_mig_props p
                 WHERE p.table_pk = t.id AND p.secret_name IS NOT NULL),
                '{}'::text[]) AS secret_names,
       CASE
           WHEN lower(t.catalog_properties ->> 'type') IN ('sql', 'jdbc', 'rest', 'hive',
                                                            'glue', 'hadoop')
               THEN lower(t.catalog_properties ->> 'type')
           WHEN t.catalog_properties ->> 'uri' ~* '^https?://' THEN 'rest'
           WHEN t.catalog_properties ->> 'uri' ~* '^thrift://' THEN 'hive'
           WHEN t.catalog_properties ->> 'uri' ~* '^(jdbc:)?[a-z]' THEN 'sql'
           ELSE 'hadoop'
       END AS type
FROM tms_tables t;

-- One row per new catalog, numbered in order of its first table.
CREATE TEMP TABLE tms_mig_groups ON COMMIT DROP AS
SELECT row_number() OVER (ORDER BY min(table_pk)) AS n,
       old_name, type, clear_props,
       -- lower case, letters digits and _, starting with a letter, room for a suffix
       left(CASE WHEN regexp_replace(lower(old_name), '[^a-z0-9_]', '_', 'g') ~ '^[a-z]'
                 THEN regexp_replace(lower(old_name), '[^a-z0-9_]', '_', 'g')
                 ELSE 'c_' || regexp_replace(lower(old_name), '[^a-z0-9_]', '_', 'g') END,
            56) AS base_id,
       NULL::text AS catalog_id
FROM tms_mig_tables
GROUP BY old_name, type, clear_props;

DO $$
DECLARE
    g record;
    candidate text;
    k integer;
BEGIN
    FOR g IN SELECT * FROM tms_mig_groups ORDER BY n LOOP
        candidate := g.base_id;
        k := 1;
        WHILE EXISTS (SELECT 1 FROM tms_catalogs WHERE catalog_id = candidate)
              OR EXISTS (SELECT 1 FROM tms_mig_groups WHERE catalog_id = candidate) LOOP
            k := k + 1;
            candidate := g.base_id || '_' || k;
        END LOOP;
        UPDATE tms_mig_groups SET catalog_id = candidate WHERE n = g.n;
        IF candidate <> g.old_name AND g.type IN ('sql', 'jdbc') THEN
            -- Iceberg's JDBC catalog keys its rows by catalog name: tell the operator
            RAISE NOTICE 'catalog % became catalogs/% (an Iceberg SQL/JDBC catalog finds its '
                         'tables by name: check they are still found)', g.old_name, candidate;
        END IF;
    END LOOP;
END
$$;

INSERT INTO tms_catalogs (catalog_id, type, properties, secrets, storage_options,
                          allowed_locations)
SELECT g.catalog_id, g.type::tms_catalog_type,
       coalesce((SELECT jsonb_object_agg(e.key, e.value) FROM jsonb_each_text(g.clear_props) e
                 WHERE e.key !~ '^(fs|s3|gcs|adls|hadoop)\.'), '{}'::jsonb),
       coalesce((SELECT jsonb_object_agg(s.name, 'env:TMS_SECRET_' || left(upper(
                            regexp_replace(g.catalog_id || '_' || s.name, '[^A-Za-z0-9]+', '_',
                                           'g')), 100))
                 FROM (SELECT DISTINCT unnest(m.secret_names) AS name
                       FROM tms_mig_tables m
                       WHERE (m.old_name, m.type, m.clear_props)
                             = (g.old_name, g.type, g.clear_props)) s), '{}'::jsonb),
       coalesce((SELECT jsonb_object_agg(e.key, e.value) FROM jsonb_each_text(g.clear_props) e
                 WHERE e.key ~ '^(fs|s3|gcs|adls|hadoop)\.'), '{}'::jsonb),
       coalesce(ARRAY(SELECT DISTINCT loc FROM (
                    SELECT g.clear_props ->> 'warehouse' AS loc
                    UNION ALL
                    SELECT m.base_path FROM tms_mig_tables m
                    WHERE (m.old_name, m.type, m.clear_props)
                          = (g.old_name, g.type, g.clear_props)) l
                    WHERE loc IS NOT NULL AND loc <> '' ORDER BY loc), '{}'::text[])
FROM tms_mig_groups g
ORDER BY g.n;

UPDATE tms_tables t
SET catalog = g.catalog_id
FROM tms_mig_tables m
JOIN tms_mig_groups g ON (g.old_name, g.type, g.clear_props) = (m.old_name, m.type, m.clear_props)
WHERE m.table_pk = t.id;

-- One physical table, one registration: refuse to guess which duplicate to keep.
DO $$
DECLARE
    dups text;
BEGIN
    SELECT string_agg(what, '; ') INTO dups FROM (
        SELECT format('%s.%s in catalogs/%s: %s', namespace, table_name, catalog,
                      string_agg('tables/' || table_id, ', ' ORDER BY table_id)) AS what
        FROM tms_tables WHERE table_name <> '' AND base_path = ''
        GROUP BY catalog, namespace, table_name HAVING count(*) > 1
        UNION ALL
        SELECT format('base path %s: %s', rtrim(base_path, '/'),
                      string_agg('tables/' || table_id, ', ' ORDER BY table_id))
        FROM tms_tables WHERE base_path <> ''
        GROUP BY rtrim(base_path, '/') HAVING count(*) > 1
        UNION ALL
        SELECT format('location %s: %s', location,
                      string_agg('tables/' || table_id, ', ' ORDER BY table_id))
        FROM tms_tables WHERE location <> ''
        GROUP BY location HAVING count(*) > 1
    ) d;
    IF dups IS NOT NULL THEN
        RAISE EXCEPTION 'migration 0010: the same physical table is registered more than '
                        'once: %. Deregister all but one of each (with the previous TMS '
                        'release, or DELETE FROM tms_tables WHERE table_id = ...) and run '
                        'tms migrate again', dups;
    END IF;
END
$$;

ALTER TABLE tms_tables ALTER COLUMN catalog DROP DEFAULT;
ALTER TABLE tms_tables ADD CONSTRAINT tms_tables_catalog_fkey
    FOREIGN KEY (catalog) REFERENCES tms_catalogs (catalog_id) ON DELETE RESTRICT;
-- a table of a catalog is known by its identifier; path tables (Hudi) by their location
CREATE UNIQUE INDEX tms_tables_identifier ON tms_tables (catalog, namespace, table_name)
    WHERE table_name <> '' AND base_path = '';
CREATE UNIQUE INDEX tms_tables_location ON tms_tables (location) WHERE location <> '';

DROP VIEW tms_tables_view;
ALTER TABLE tms_tables DROP COLUMN catalog_properties;
CREATE VIEW tms_tables_view AS
SELECT t.*,
       t.pruned_commits + c.n AS commit_count,
       coalesce(l.commit_id, t.pruned_last_commit_id) AS last_commit_id,
       coalesce(l.at, t.pruned_last_commit_time) AS last_commit_time
FROM tms_tables t
CROSS JOIN LATERAL (SELECT count(*) AS n FROM tms_commit_events e WHERE e.table_pk = t.id) c
LEFT JOIN LATERAL (SELECT e.commit_id, coalesce(e.commit_time, e.received_at) AS at
                   FROM tms_commit_events e WHERE e.table_pk = t.id
                   ORDER BY e.seq DESC LIMIT 1) l ON true;
