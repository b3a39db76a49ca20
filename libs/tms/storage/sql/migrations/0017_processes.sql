-- v17: liveness. Every scheduler and executor upserts its row at its heartbeat cadence (the
-- database's clock stamps it, so hosts' clocks do not matter); GetFleetStatus reads them, a
-- row is alive while its heartbeat is newer than three of its intervals, and the leader
-- deletes rows whose heartbeat is older than the retention (an hour by default).

CREATE TABLE tms_processes (
    id text PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 200),
    kind text NOT NULL CHECK (kind IN ('scheduler', 'executor')),
    host text NOT NULL DEFAULT '' CHECK (length(host) <= 255),
    started_at timestamptz NOT NULL,
    heartbeat_at timestamptz NOT NULL DEFAULT now(),
    interval_s double precision NOT NULL CHECK (interval_s > 0),
    leader boolean NOT NULL DEFAULT false,
    shards integer[] NOT NULL DEFAULT '{}',
    running_operations text[] NOT NULL DEFAULT '{}'
);
CREATE INDEX tms_processes_heartbeat ON tms_processes (heartbeat_at);
