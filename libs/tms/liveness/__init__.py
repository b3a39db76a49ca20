"""Liveness: schedulers and executors record heartbeats in PostgreSQL (``heartbeat``) that
the API reads for GetFleetStatus."""

from tms.liveness.heartbeat import HEARTBEAT_INTERVAL_S, Heartbeat

__all__ = ["HEARTBEAT_INTERVAL_S", "Heartbeat"]
