"""The partitioned bench's writer: the same stream of small commits to two tables.

The table is partitioned by ``part`` (identity), like a day-partitioned event table: commit
``i`` of ``n`` appends one small file to the current partition ``i * P // n``; every
``late_every``-th commit appends instead to an older partition (late data); every
``delete_every``-th commit is a Spark SQL ``DELETE`` of about 2 % of one written partition's
rows, merge-on-read (position delete files). Appends go through pyiceberg, deletes through a
long-lived Spark session (``bench/table_health_sql.py`` under spark-submit). A commit that loses
a race with TMS is retried, as any writer would; each failure's message is kept for the report.
"""

from __future__ import annotations

import json
import logging
import os
import random
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa

from bench.common import TMS_HOME, BenchError
from tms.jobs.iceberg_maintenance import ICEBERG_EXTENSIONS, catalog_conf
from tms.spark.settings import SparkSettings

SQL_APP = Path(__file__).resolve().parent / "table_health_sql.py"
SQL_START_TIMEOUT_S = 300.0
SQL_TIMEOUT_S = 600.0
SQL_POLL_S = 0.05
DELETE_RETRIES = 5
PYICEBERG_COMMIT_LOGGER = "pyiceberg.table"  # logs "Commit failed due to a concurrent update"
DELETE_MODULUS = 50  # a DELETE removes the rows with id % 50 == k of one partition
TABLE_PROPERTIES = {
    "format-version": "2",
    "write.delete.mode": "merge-on-read",
    "write.update.mode": "merge-on-read",
    "write.merge.mode": "merge-on-read",
}
SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("part", pa.int32(), nullable=False),
    pa.field("kind", pa.string()),
    pa.field("amount", pa.float64()),
    pa.field("ts", pa.timestamp("us", tz="UTC")),
])


def create_table(catalog: Any, namespace: str, name: str) -> Any:
    """A merge-on-read v2 table partitioned by ``part`` (identity)."""
    catalog.create_namespace_if_not_exists(namespace)
    table = catalog.create_table(f"{namespace}.{name}", schema=SCHEMA,
                                 properties=TABLE_PROPERTIES)
    with table.update_spec() as spec:
        spec.add_identity("part")
    return table.refresh()


def batch(commit: int, part: int, rows: int) -> pa.Table:
    """``rows`` rows of partition ``part``; ids are unique across the stream."""
    base = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(days=part)
    ids = range(commit * rows, (commit + 1) * rows)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "part": pa.array([part] * rows, pa.int32()),
        "kind": [("click", "view", "buy")[i % 3] for i in ids],
        "amount": [float(i % 97) for i in ids],
        "ts": [base + timedelta(seconds=i % 86400) for i in ids],
    }, schema=SCHEMA)


@dataclass(frozen=True)
class Step:
    """What commit ``i`` does: ``append`` (current partition), ``late`` (older partition) or
    ``delete`` (of rows in ``part``, those with ``id % DELETE_MODULUS == residue``)."""

    kind: str
    part: int
    residue: int = 0


def plan(commits: int, partitions: int, late_every: int, delete_every: int,
         seed: int = 15) -> list[Step]:
    """The whole stream, deterministic for a seed (both tables get the same)."""
    rng = random.Random(seed)
    steps = []
    for i in range(commits):
        current = i * partitions // commits
        if delete_every and i and i % delete_every == 0:
            steps.append(Step("delete", rng.randrange(current + 1),
                              (i // delete_every) % DELETE_MODULUS))
        elif late_every and i and i % late_every == 0 and current:
            steps.append(Step("late", rng.randrange(current)))
        else:
            steps.append(Step("append", current))
    return steps


class SparkSql:
    """One long-lived Spark session (spark-submit of ``SQL_APP``) running statements in order."""

    def __init__(self, state_dir: Path, catalog: str, props: dict[str, str]) -> None:
        self.spool = state_dir / "sql-spool"
        self.spool.mkdir(parents=True)
        settings = SparkSettings.from_env(TMS_HOME)
        conf = {"spark.sql.extensions": ICEBERG_EXTENSIONS, **catalog_conf(catalog, props)}
        argv = settings.submit_argv(str(SQL_APP), [str(self.spool)], extra_conf=conf)
        self.log = (state_dir / "sql.log").open("wb")
        self.proc = subprocess.Popen(argv, env=settings.submit_env(os.environ),
                                     stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        self.n = 0
        self._wait_for(self.spool / "ready", SQL_START_TIMEOUT_S)

    def _wait_for(self, path: Path, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while not path.exists():
            if self.proc.poll() is not None:
                raise BenchError(f"the Spark SQL session exited; see {self.log.name}")
            if time.monotonic() > deadline:
                raise BenchError(f"no answer from the Spark SQL session in {timeout_s:.0f} s")
            time.sleep(SQL_POLL_S)

    def run(self, sql: str) -> dict[str, Any]:
        """``{"ok": True, "rows": [...]}`` or ``{"ok": False, "error": "..."}``."""
        tmp = self.spool / f"req-{self.n}.tmp"
        tmp.write_text(json.dumps({"sql": sql}))
        os.replace(tmp, self.spool / f"req-{self.n}.json")
        resp = self.spool / f"resp-{self.n}.json"
        self._wait_for(resp, SQL_TIMEOUT_S)
        self.n += 1
        out: dict[str, Any] = json.loads(resp.read_text())
        return out

    def close(self) -> None:
        (self.spool / "stop").write_text("1")
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self.log.close()


@dataclass
class Failures:
    """Commits that had to be retried (or gave up), by table, with the engine's message.

    pyiceberg retries a lost commit race itself and only logs it; ``capture_pyiceberg``
    counts those log records against ``current`` (the table being written)."""

    messages: list[tuple[str, str]] = field(default_factory=list)  # (table, message)
    current: str = ""

    def add(self, table: str, message: str) -> None:
        self.messages.append((table, message))

    @contextmanager
    def capture_pyiceberg(self) -> Iterator[None]:
        failures = self

        class Handler(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                failures.add(failures.current, f"pyiceberg append: {record.getMessage()}")

        handler = Handler(logging.WARNING)
        logger = logging.getLogger(PYICEBERG_COMMIT_LOGGER)
        logger.addHandler(handler)
        try:
            yield
        finally:
            logger.removeHandler(handler)


def delete_rows(sql: SparkSql, qualified: str, step: Step, label: str,
                failures: Failures) -> None:
    """The DELETE of ``step``, retried when it loses a race (e.g. with a compaction)."""
    stmt = (f"DELETE FROM {qualified} WHERE part = {step.part} "
            f"AND id % {DELETE_MODULUS} = {step.residue}")
    for _ in range(DELETE_RETRIES):
        out = sql.run(stmt)
        if out["ok"]:
            return
        failures.add(label, f"DELETE: {out['error']}")
        sql.run(f"REFRESH TABLE {qualified}")
    raise BenchError(f"DELETE on {label} kept failing: {failures.messages[-1][1][:500]}")


def checksum(sql: SparkSql, qualified: str) -> tuple[int, str]:
    """Rows and an order-independent checksum of every row (sum of 64-bit row hashes)."""
    out = sql.run(f"SELECT count(*) AS n, CAST(sum(CAST(xxhash64(id, part, kind, amount, ts) "
                  f"AS DECIMAL(38, 0))) AS STRING) AS h FROM {qualified}")
    if not out["ok"]:
        raise BenchError(f"checksum of {qualified} failed: {out['error'][:500]}")
    row = out["rows"][0]
    return int(row["n"]), str(row["h"])
