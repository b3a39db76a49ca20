-- Catalogs: operator-owned catalog connections (CatalogStore). Secrets are stored as
-- references only; the API never asks for anything else.

-- name: catalog_insert
INSERT INTO tms_catalogs (catalog_id, type, properties, secrets, storage_options,
                          allowed_locations, allowed_owners, allowed_tokens, default_policy,
                          discovery_enabled, discovery_include, discovery_exclude,
                          discovery_queue, discovery_owner, discovery_priority,
                          discovery_interval_s)
VALUES (%(catalog_id)s, %(type)s::tms_catalog_type, %(properties)s, %(secrets)s,
        %(storage_options)s, %(allowed_locations)s, %(allowed_owners)s, %(allowed_tokens)s,
        %(default_policy)s, %(discovery_enabled)s, %(discovery_include)s,
        %(discovery_exclude)s, %(discovery_queue)s, %(discovery_owner)s,
        %(discovery_priority)s, %(discovery_interval_s)s)
ON CONFLICT (catalog_id) DO NOTHING
RETURNING catalog_id;

-- name: catalog_get
SELECT c.*, (SELECT count(*) FROM tms_tables t WHERE t.catalog = c.catalog_id) AS table_count
FROM tms_catalogs c WHERE c.catalog_id = %(catalog_id)s;

-- name: catalog_list
SELECT c.*, (SELECT count(*) FROM tms_tables t WHERE t.catalog = c.catalog_id) AS table_count
FROM tms_catalogs c
WHERE c.catalog_id > %(after)s
ORDER BY c.catalog_id
LIMIT %(limit)s;

-- name: catalog_update
-- Field-mask update: only the fields whose set_* flag is true change. A changed discovery
-- setting makes the catalog due for a listing at once.
UPDATE tms_catalogs
SET properties = CASE WHEN %(set_properties)s THEN %(properties)s ELSE properties END,
    secrets = CASE WHEN %(set_secrets)s THEN %(secrets)s ELSE secrets END,
    storage_options = CASE WHEN %(set_storage_options)s THEN %(storage_options)s
                           ELSE storage_options END,
    allowed_locations = CASE WHEN %(set_allowed_locations)s THEN %(allowed_locations)s
                             ELSE allowed_locations END,
    allowed_owners = CASE WHEN %(set_allowed_owners)s THEN %(allowed_owners)s
                          ELSE allowed_owners END,
    allowed_tokens = CASE WHEN %(set_allowed_tokens)s THEN %(allowed_tokens)s
                          ELSE allowed_tokens END,
    default_policy = CASE WHEN %(set_default_policy)s THEN %(default_policy)s
                          ELSE default_policy END,
    discovery_enabled = CASE WHEN %(set_discovery)s THEN %(discovery_enabled)s
                             ELSE discovery_enabled END,
    discovery_include = CASE WHEN %(set_discovery)s THEN %(discovery_include)s
                             ELSE discovery_include END,
    discovery_exclude = CASE WHEN %(set_discovery)s THEN %(discovery_exclude)s
                             ELSE discovery_exclude END,
    discovery_queue = CASE WHEN %(set_discovery)s THEN %(discovery_queue)s
                           ELSE discovery_queue END,
    discovery_owner = CASE WHEN %(set_discovery)s THEN %(discovery_owner)s
                           ELSE discovery_owner END,
    discovery_priority = CASE WHEN %(set_discovery)s THEN %(discovery_priority)s
                              ELSE discovery_priority END,
    discovery_interval_s = CASE WHEN %(set_discovery)s THEN %(discovery_interval_s)s
                                ELSE discovery_interval_s END,
    discovery_next_at = CASE WHEN %(set_discovery)s THEN now() ELSE discovery_next_at END,
    updated_at = now()
WHERE catalog_id = %(catalog_id)s
RETURNING catalog_id;

-- name: catalog_delete
-- Refused (no row) while a table is registered in the catalog.
DELETE FROM tms_catalogs c
WHERE c.catalog_id = %(catalog_id)s
  AND NOT EXISTS (SELECT 1 FROM tms_tables t WHERE t.catalog = c.catalog_id)
RETURNING catalog_id;

-- name: catalog_claim_discovery
-- The catalogs due for a listing, each made due again one interval later in the same
-- statement: the claim is the fence, so two leaders in a handover never list one catalog at
-- once (the second finds it not due). ``now`` is the discovery clock.
UPDATE tms_catalogs c
SET discovery_next_at = %(now)s + make_interval(secs => c.discovery_interval_s)
WHERE c.id IN (SELECT id FROM tms_catalogs
               WHERE discovery_enabled AND discovery_next_at <= %(now)s
               ORDER BY discovery_next_at
               LIMIT %(limit)s
               FOR UPDATE SKIP LOCKED)
  AND c.discovery_enabled AND c.discovery_next_at <= %(now)s
RETURNING c.*;

-- name: catalog_finish_discovery
-- What a listing found (or why it failed), for GetCatalog's discovery status.
UPDATE tms_catalogs
SET discovery_last_at = %(at)s, discovery_last_error = %(error)s,
    discovery_last_registered = %(registered)s, discovery_last_missing = %(missing)s
WHERE catalog_id = %(catalog_id)s
RETURNING catalog_id;
