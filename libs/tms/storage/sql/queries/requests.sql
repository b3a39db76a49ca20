-- Request ids (AIP-155 idempotency of RegisterTable and TriggerOperation).

-- name: request_claim
-- The first caller inserts; a replay (or a concurrent twin, once the first commits) finds the
-- existing row.
INSERT INTO tms_requests (request_id, method, fingerprint, resource)
VALUES (%(request_id)s, %(method)s, %(fingerprint)s, '')
ON CONFLICT (request_id) DO NOTHING
RETURNING request_id;

-- name: request_get
SELECT * FROM tms_requests WHERE request_id = %(request_id)s;

-- name: request_set_resource
UPDATE tms_requests SET resource = %(resource)s WHERE request_id = %(request_id)s;

-- name: request_forget
-- The request failed after reserving its id: free the id so a corrected retry can use it.
DELETE FROM tms_requests WHERE request_id = %(request_id)s AND resource = '';
