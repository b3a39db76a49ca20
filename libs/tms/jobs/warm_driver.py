"""A long-lived PySpark driver that runs Iceberg maintenance specs one after another.

A cold ``spark-submit`` pays a JVM and SparkContext start (about ten seconds here) for every
operation, which dwarfs the work on a small table. This driver starts one SparkSession and then
serves requests, so each small operation costs only its own Spark jobs.

Protocol (one JSON object per line):

- the driver writes ``{"ready": true, "spark_app_id": ..., "pid": ...}`` once the session is up,
  or ``{"fatal": "..."}`` if it cannot start;
- the engine writes ``{"id": N, "spec": {...}, "result": "/path/result.json"}``: the spec
  itself, secrets resolved, through the pipe, so they never touch a disk (a spec file would,
  and a crash between writing and removing it would leave them there);
- while the request runs, the driver writes ``{"id": N, "progress": {"stages": [...],
  "sampled_at": ...}}`` whenever Spark's stage progress changed, at most once per
  ``TMS_PROGRESS_INTERVAL_S`` (``spark_progress.py``);
- the driver writes the result file (exactly the format ``iceberg_maintenance.py`` writes) and
  answers ``{"id": N, "done": true}``;
- EOF on stdin stops the session and exits 0.

Requests come on stdin and messages go to the ORIGINAL stdout descriptor only: at start fd 1 is
duplicated for the protocol and then pointed at stderr, so stray prints, pyspark and the JVM it
launches (which inherits fd 1) cannot corrupt the protocol. stderr is the driver log.

The engine starts this file with the Python interpreter, not with ``spark-submit FILE``: pyspark
then launches the JVM through spark-submit with the same arguments (``PYSPARK_SUBMIT_ARGS``).
spark-submit's Python runner would give the driver a stdin nothing writes to and merge its
stdout into stderr, so no stdin/stdout protocol can pass through it.

Right after it says it is ready, before it reads the first request, the driver warms its data
path (``warmup.py``: a compaction of a realistic table of its own, so the JIT has compiled
what the first real compaction runs); the catalog name it uses for that is reserved.

Imports only pyspark, the standard library, ``iceberg_maintenance``, ``spark_progress`` and
``warmup`` (from the ``tms.jobs`` package: the job's zip is first on its path); the
warm-up writes its files with pyarrow when the driver's Python has it.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import IO, Any

from tms.jobs import iceberg_maintenance as im
from tms.jobs import spark_progress, warmup

APP_NAME = "tms-warm-driver"
EXIT_OK = 0
EXIT_START_FAILED = 1
EXIT_WRONG_LAUNCHER = 2
EXIT_SESSION_LOST = 3  # the JVM went away: exit without answering so the engine falls back
_SPARK_SUBMIT_ENV = "PYSPARK_GATEWAY_PORT"  # set when spark-submit's Python runner started us

Send = Callable[[dict[str, Any]], None]


class RequestError(ValueError):
    """A request line that is not a valid request."""


def parse_request(line: str) -> tuple[int, dict[str, Any], Path]:
    """``(id, spec, result path)`` from one request line."""
    try:
        data = json.loads(line)
    except ValueError as e:
        raise RequestError(f"not JSON: {e}") from None
    if not isinstance(data, dict):
        raise RequestError("a request must be a JSON object")
    req_id, spec, result = data.get("id"), data.get("spec"), data.get("result")
    if not isinstance(req_id, int) or isinstance(req_id, bool):
        raise RequestError("'id' must be an integer")
    if not isinstance(spec, dict):
        raise RequestError("'spec' must be a JSON object")
    if not isinstance(result, str) or not result:
        raise RequestError("'result' must be a non-empty path")
    return req_id, spec, Path(result)


def describe_request(spec: Mapping[str, Any]) -> str:
    """What a request is, for the log and Spark's job group: its action and table only (the
    spec holds the catalog's secrets)."""
    action, table = spec.get("action"), spec.get("table")
    name = ".".join(str(p) for p in table) if isinstance(table, list) else str(table)
    return f"{str(action)[:64]} on {name[:256]}"


def _log(message: str) -> None:
    print(f"[tms-warm] {message}", file=sys.stderr, flush=True)


def register_catalog(spark: Any, spec: im.MaintenanceRequest,
                     registered: dict[str, Mapping[str, str]]) -> None:
    """Register the spec's catalog in the running session (Spark loads catalogs lazily by
    name, so runtime conf works for a name not used yet). Iceberg's JDBC catalog keys its rows
    by catalog name, and a loaded catalog never rereads its conf: a name already registered
    with other properties would silently reach the wrong catalog, so it is refused (the engine
    restarts the driver before sending such a spec). So is a catalog whose storage identity
    (endpoint, credentials: ``spark_catalogs.storage_identity``) differs from one this session
    serves: Hadoop would share one cached file system between them for a same-named bucket."""
    props = spec.resolved_properties()  # the engine resolved references already: a no-op
    if spec.catalog_name == warmup.WARMUP_CATALOG:
        raise RuntimeError(f"catalog name {spec.catalog_name!r} is reserved by the warm "
                           "driver's warm-up; name the catalog otherwise")
    known = registered.get(spec.catalog_name)
    if known is not None:
        if dict(known) != props:
            raise RuntimeError(f"catalog {spec.catalog_name!r} is registered in this session "
                               "with other properties; a new driver is needed")
        return
    conf = im.catalog_conf(spec.catalog_name, props)  # SpecError for a bad property first
    identity = im.spark_catalogs.storage_identity(props)
    for name, other in registered.items():
        if im.spark_catalogs.storage_identity(other) != identity:
            # Hadoop's FileSystem cache (scheme + bucket + user) would hand this catalog the
            # other's file system, endpoint and keys included, for a bucket of the same name
            raise RuntimeError(f"catalog {spec.catalog_name!r} reaches its storage with another "
                               f"endpoint or other credentials than catalog {name!r}, served "
                               "by this session; a new driver is needed")
    for key, value in conf.items():
        spark.conf.set(key, value)
    registered[spec.catalog_name] = props


def session_alive(spark: Any) -> bool:
    try:
        return not spark.sparkContext._jsc.sc().isStopped()
    except Exception:  # Py4J cannot reach the JVM
        return False


def run_request(spark: Any, raw_spec: Mapping[str, Any],
                registered: dict[str, Mapping[str, str]]) -> dict[str, Any]:
    """The result payload for one spec; failures become failure payloads."""
    try:
        spec = im.parse_spec(dict(raw_spec))
        register_catalog(spark, spec, registered)
        return im.run_in_session(spark, spec)
    except Exception as exc:
        payload = im.failure_payload(exc)
        error_type, message = im.describe_error(exc)  # the whole wrapper, for the log
        _log(f"{error_type}: {message}")
        if payload.get("wrapped_in"):
            _log(f"root cause: {payload['error_type']}: {payload['error']}")
        return payload
    finally:
        try:
            spark.catalog.clearCache()  # nothing an operation cached may pile up across them
        except Exception:
            pass


def _progress_sender(send: Send, req_id: int) -> Callable[[dict[str, Any]], None]:
    def send_progress(progress: dict[str, Any]) -> None:
        send({"id": req_id, "progress": progress})

    return send_progress


def serve(spark: Any, requests: Iterable[str], send: Send,
          progress_interval_s: float = spark_progress.PROGRESS_INTERVAL_S) -> int:
    """Answer requests until EOF, sending Spark's progress while each runs; returns the exit
    status."""
    registered: dict[str, Mapping[str, str]] = {}
    for line in requests:
        if not line.strip():
            continue
        try:
            req_id, raw_spec, result_path = parse_request(line)
        except RequestError as e:
            _log(f"bad request ignored: {e}")
            send({"error": f"bad request: {e}"})
            continue
        what = describe_request(raw_spec)
        _log(f"request {req_id} started: {what}")
        if not session_alive(spark):
            _log(f"request {req_id}: the Spark session is gone; exiting without an answer")
            return EXIT_SESSION_LOST
        spark.sparkContext.setJobGroup(f"tms-request-{req_id}", what)
        with spark_progress.ProgressSampler(lambda: spark.sparkContext.statusTracker(),
                                            _progress_sender(send, req_id),
                                            progress_interval_s):
            payload = run_request(spark, raw_spec, registered)
        if not payload["ok"] and not session_alive(spark):
            _log(f"request {req_id}: the Spark session is gone; exiting without an answer")
            return EXIT_SESSION_LOST
        im.write_result(result_path, payload)
        _log(f"request {req_id} finished: ok={payload['ok']}")
        send({"id": req_id, "done": True})
    return EXIT_OK


def _protocol_stream() -> IO[str]:
    """A private copy of the original stdout for protocol messages; fd 1 and ``sys.stdout``
    then point at stderr, so neither Python prints nor the JVM can write into the protocol."""
    proto = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    sys.stdout.flush()
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return proto


def main() -> int:
    if os.environ.get(_SPARK_SUBMIT_ENV):
        print("warm_driver.py must be started with python (pyspark launches spark-submit): "
              "spark-submit's Python runner does not pass stdin through", file=sys.stderr)
        return EXIT_WRONG_LAUNCHER
    proto = _protocol_stream()
    lock = threading.Lock()  # the progress sampler sends from its own thread

    def send(message: dict[str, Any]) -> None:
        with lock:
            proto.write(json.dumps(message) + "\n")
            proto.flush()

    try:
        spark = im.session_builder(APP_NAME).getOrCreate()
    except Exception as exc:
        error_type, message = im.describe_error(exc)
        _log(f"session failed to start: {error_type}: {message}")
        send({"fatal": f"{error_type}: {message[:im.MAX_ERROR_CHARS]}"})
        return EXIT_START_FAILED
    try:
        send({"ready": True, "spark_app_id": spark.sparkContext.applicationId,
              "pid": os.getpid()})
        # after "ready", so a slow warm-up on a busy machine never counts against the start's
        # timeout; a request sent meanwhile waits in the pipe until it is done
        # the warm-up's compaction runs the code a request's does (write format, manifest
        # merge, the procedure), on a table in the warm-up's own catalog
        took = warmup.run_from_env(
            spark, compact=lambda spec: im.run_in_session(spark, im.parse_spec(spec)))
        if took is not None:
            _log(f"warm-up done in {took:.1f} s")
        return serve(spark, sys.stdin, send, spark_progress.interval_from_env(os.environ))
    except BrokenPipeError:  # the engine is gone
        return EXIT_OK
    finally:
        try:
            spark.stop()
        except Exception:
            pass


if __name__ == "__main__":
    sys.exit(main())
