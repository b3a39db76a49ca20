"""A hostile table owner against the executor and the Spark job.

The owner controls the table's metadata (its location, its properties, what lies in its
directories) but not the catalog's allowed locations nor the executor. The job must check the
location storage will really use, refuse to delete anything outside it, and no other local user
may read the catalog's credentials: not in a spec file, not on a command line.

Spark tests are heavy (a cold spark-submit each): tables are tiny and each test runs one job.
"""

from __future__ import annotations

import base64
import os
import stat
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tests.helpers import wait_for
from tests.security.job_harness import Lake, Runner, cold_engine
from tests.unit.fakes import make_op, make_table
from tms import locations
from tms.catalogs import CatalogAccess
from tms.domain import CatalogType, JobSpec, OperationState
from tms.engines.workdir import SPEC_FILE_NAME
from tms.formats.hudi.plugin import HudiFormat, resolve_base_path
from tms.jobs import ICEBERG_MAINTENANCE_APP, table_guard
from tms.local import iceberg_data
from tms.storage.postgres import PostgresStore

pytestmark = pytest.mark.integration

ORPHAN_AGE_S = 3 * 24 * 3600  # older than the 24 h Iceberg insists on
PROC_SCAN_STEP_S = 0.05


def _files(root: Path) -> dict[str, float]:
    return {str(p): p.stat().st_mtime for p in root.rglob("*") if p.is_file()}


def _run(job: JobSpec, tmp_path: Path) -> Any:
    return cold_engine().run(job, tmp_path / "work", threading.Event(), lambda _h: None)


# --- the normaliser, as the job uses it ---------------------------------------------------------

def test_double_encoding_is_refused_and_localhost_accepted() -> None:
    with pytest.raises(locations.LocationError, match="more than once"):
        locations.check("file:///lake/t/%252e%252e/%252e%252e/etc", ["/lake"])
    assert locations.check("file://localhost/lake/t", ["/lake"]).path == "/lake/t"
    with pytest.raises(locations.LocationError, match="this machine"):
        locations.parse("file://evil.example/lake/t")


def test_storage_paths_are_checked_as_storage_reads_them() -> None:
    # Hadoop and FileIO do not decode: /lak%65 is a directory of that name, outside /lake
    with pytest.raises(locations.LocationError, match="outside"):
        locations.check("file:/lak%65/t", ["/lake"], literal=True)
    assert locations.check("s3a://Bucket/lake/t", ["s3://bucket/lake"], literal=True)


def test_table_paths_are_all_checked(tmp_path: Path) -> None:
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    allowed.mkdir()
    outside.mkdir()
    (allowed / "link").symlink_to(outside)
    ok = {"table location": f"file:{allowed}/t", "metadata file": f"{allowed}/t/m.json"}
    assert table_guard.check_paths(ok, [str(allowed)]).path == f"{allowed}/t"
    bad = [
        {"table location": f"file:{outside}/t"},
        {"table location": f"file:{allowed}/t", "table property write.data.path": str(outside)},
        # inside the allowed locations, but another table's (registered locations are disjoint)
        {"table location": f"file:{allowed}/t", "table property write.data.path": f"{allowed}/u"},
        {"table location": f"file:{allowed}/t", "previous metadata file 0": f"{allowed}/u/m.json"},
        {"table location": f"file:{allowed}/t",
         "statistics file 0 (snapshot 1)": f"{allowed}/t2/data/x.parquet"},
        {"table location": f"file:{allowed}/t", "previous metadata file 0": f"{outside}/m.json"},
        {"table location": f"file:{allowed}/t",
         "statistics file 0 (snapshot 1)": f"{allowed}/link/stats.puffin"},
        {"table location": f"file:{allowed}/../outside/t"},
    ]
    for paths in bad:
        with pytest.raises(table_guard.LocationRefused):
            table_guard.check_paths(paths, [str(allowed)])
    # a symlinked table location is refused even without allowed locations (older specs)
    with pytest.raises(table_guard.LocationRefused, match="symlink"):
        table_guard.check_paths({"table location": f"{allowed}/link/t"}, None)


def test_orphan_deletion_never_follows_a_swapped_directory(tmp_path: Path) -> None:
    table, outside = tmp_path / "t", tmp_path / "outside"
    (table / "data").mkdir(parents=True)
    outside.mkdir()
    victim = outside / "victim.parquet"
    victim.write_bytes(b"another tenant's data")
    # checked while data/ was a directory, swapped for a symlink before the deletion
    (table / "data").rmdir()
    (table / "data").symlink_to(outside)
    assert table_guard.unlink_no_follow(f"{table}/data/victim.parquet") is False
    assert victim.exists()


# --- the job, under a real spark-submit -----------------------------------------------------

def _assert_refused(result: Any, *words: str) -> None:
    assert not result.succeeded and result.retryable is False, result.error
    assert "location refused" in (result.error or "")
    for word in words:
        assert word in (result.error or ""), result.error


def test_job_refuses_a_table_whose_real_location_is_outside(pg: Any, tmp_path: Path) -> None:
    lake = Lake(pg.dsn, tmp_path / "lake")
    lake.table("t", location=lake.outside / "t")  # the metadata says: outside
    before = _files(lake.outside)

    result = _run(lake.job("t", allowed=[lake.allowed.as_uri()]), tmp_path)

    _assert_refused(result, str(lake.outside / "t"), str(lake.allowed))
    assert _files(lake.outside) == before  # nothing compacted, nothing written


def test_job_refuses_a_table_reached_through_a_symlink(pg: Any, tmp_path: Path) -> None:
    lake = Lake(pg.dsn, tmp_path / "lake")
    (lake.allowed / "link").symlink_to(lake.outside)  # inside the prefix, pointing outside
    lake.table("t", location=lake.allowed / "link" / "t")
    before = _files(lake.outside)

    result = _run(lake.job("t", allowed=[str(lake.allowed)]), tmp_path)

    _assert_refused(result, "symlink")
    assert _files(lake.outside) == before


def test_remove_orphan_files_never_deletes_outside_the_table(pg: Any, tmp_path: Path) -> None:
    lake = Lake(pg.dsn, tmp_path / "lake")
    table = lake.table("t")
    data = Path(table.location().removeprefix("file://")) / "data"
    victim_dir = lake.outside / "tenant-b"
    victim_dir.mkdir()
    victim = victim_dir / "00000-live.parquet"
    victim.write_bytes(b"another tenant's live data")
    (data / "spill").symlink_to(victim_dir)  # listed as data/spill/00000-live.parquet
    orphan = data / f"orphan-{uuid.uuid4().hex}.parquet"
    orphan.write_bytes(b"a real orphan")
    old = time.time() - ORPHAN_AGE_S
    for path in (victim, orphan):
        os.utime(path, (old, old))
    older_than = (datetime.now(UTC) - timedelta(hours=25)).isoformat()

    result = _run(lake.job("t", "remove_orphan_files", {"older-than": older_than},
                                 allowed=[str(lake.allowed)]), tmp_path)

    _assert_refused(result, "spill", "nothing deleted")
    assert victim.exists() and orphan.exists()  # refused as a whole: not even the real orphan


def _neighbours_file(lake: Lake) -> Path:
    """A live data file of another tenant's table in the same warehouse: inside the
    catalog's allowed locations, outside the owner's table."""
    other = lake.table("tenant_b", commits=1)
    (path,) = other.inspect.files()["file_path"].to_pylist()
    victim = Path(path.removeprefix("file:").removeprefix("//"))
    assert victim.is_relative_to(lake.allowed) and victim.exists(), victim
    return victim


def _victim(lake: Lake, where: str) -> Path:
    if where == "neighbour":
        return _neighbours_file(lake)
    victim = lake.outside / "tenant-b.parquet"
    pq.write_table(iceberg_data.batch(1000, 5), victim)
    return victim


@pytest.mark.parametrize("where", ["outside", "neighbour"])
def test_expire_snapshots_never_deletes_a_file_a_snapshot_borrowed(pg: Any, tmp_path: Path,
                                                                   where: str) -> None:
    lake = Lake(pg.dsn, tmp_path / "lake")
    table = lake.table("t")
    victim = _victim(lake, where)  # another tenant's file, added to this table
    table.add_files([str(victim)])
    table.overwrite(iceberg_data.batch(0, 5))  # now only older snapshots reference it
    snapshots = len(table.metadata.snapshots)
    older_than = (datetime.now(UTC) + timedelta(minutes=1)).isoformat()

    result = _run(lake.job("t", "expire_snapshots", {"older-than": older_than,
                                                      "retain-last": "1"},
                           allowed=[str(lake.allowed)]), tmp_path)

    _assert_refused(result, str(victim))
    assert victim.exists()
    assert len(lake.catalog.load_table(f"{lake.namespace}.t").metadata.snapshots) == snapshots


def _set_statistics(table: Any, snapshot_id: int, path: Path) -> None:
    """What any owner can commit with pyiceberg: a statistics file for a snapshot, at a path
    of the owner's choosing."""
    from pyiceberg.table.statistics import StatisticsFile

    with table.update_statistics() as update:
        update.set_statistics(StatisticsFile(
            snapshot_id=snapshot_id, statistics_path=str(path),
            file_size_in_bytes=path.stat().st_size if path.exists() else 1,
            file_footer_size_in_bytes=1, blob_metadata=[]))


@pytest.mark.parametrize("where", ["outside", "symlink", "neighbour"])
def test_expire_snapshots_never_deletes_a_statistics_file_named_outside(
        pg: Any, tmp_path: Path, where: str) -> None:
    """The owner names another tenant's file as the statistics file of a snapshot that is
    about to expire (directly, through a symlink inside the table, or a file of another
    table in the same warehouse): Iceberg's expiration deletes the statistics files of the
    snapshots it expires, so the job must refuse."""
    lake = Lake(pg.dsn, tmp_path / "lake")
    table = lake.table("t", commits=3)
    victim = _victim(lake, "outside" if where == "symlink" else where)
    named = victim
    if where == "symlink":
        named = Path(table.location().removeprefix("file:").removeprefix("//")) / "stats"
        named.symlink_to(lake.outside, target_is_directory=True)
        named = named / victim.name
    oldest = table.metadata.snapshots[0].snapshot_id
    _set_statistics(table, oldest, named)
    snapshots = len(table.metadata.snapshots)
    older_than = (datetime.now(UTC) + timedelta(minutes=1)).isoformat()

    result = _run(lake.job("t", "expire_snapshots", {"older-than": older_than,
                                                      "retain-last": "1"},
                           allowed=[str(lake.allowed)]), tmp_path)

    _assert_refused(result, "statistics file")
    assert victim.exists()
    assert len(lake.catalog.load_table(f"{lake.namespace}.t").metadata.snapshots) == snapshots


# --- credentials on the way to Spark --------------------------------------------------------

class ProcWatch:
    """Scans every process's command line (world-readable) and, where readable, environment
    for a secret while a job runs, in clear and inside an inline spec (``--spec-b64``); also
    records the Spark JVMs it saw."""

    def __init__(self, secret: str) -> None:
        self.secret = secret.encode()
        self.leaks: list[str] = []
        self.spark_jvms = 0
        self.inline_specs = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._scan, daemon=True)

    def __enter__(self) -> ProcWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _inline_spec(self, cmdline: bytes) -> bytes:
        args = cmdline.split(b"\0")
        if b"--spec-b64" not in args or args.index(b"--spec-b64") + 1 >= len(args):
            return b""
        self.inline_specs += 1
        try:
            return base64.b64decode(args[args.index(b"--spec-b64") + 1])
        except ValueError:
            return b""

    def _scan(self) -> None:
        seen: set[int] = set()
        while not self._stop.wait(PROC_SCAN_STEP_S):
            for entry in Path("/proc").iterdir():
                if not entry.name.isdigit() or int(entry.name) == os.getpid():
                    continue
                for part in ("cmdline", "environ"):
                    try:
                        data = (entry / part).read_bytes()
                    except OSError:
                        continue
                    if part == "cmdline":
                        data += b"\0" + self._inline_spec(data)
                    if self.secret in data:
                        self.leaks.append(f"{entry.name}/{part}")
                    if (part == "cmdline" and b"org.apache.spark.deploy.SparkSubmit" in data
                            and int(entry.name) not in seen):
                        seen.add(int(entry.name))
                        self.spark_jvms += 1


def test_the_watch_sees_a_secret_in_argv_and_environment() -> None:
    secret = f"pw-{uuid.uuid4().hex}"
    script = "import sys; sys.stdin.read()"
    with ProcWatch(secret) as procs:
        for argv, env in (([sys.executable, "-c", script, secret], None),
                          ([sys.executable, "-c", script], {**os.environ, "PW": secret})):
            child = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE)
            wait_for(lambda c=child: any(str(c.pid) in leak for leak in procs.leaks),
                     "the watch to see the secret", step_s=PROC_SCAN_STEP_S)
            child.communicate(b"")
    assert {leak.split("/")[1] for leak in procs.leaks} == {"cmdline", "environ"}


def _spec_files(root: Path) -> list[Path]:
    return list(root.rglob(SPEC_FILE_NAME))


def test_work_dirs_are_private_no_spec_file_and_secrets_never_in_argv(
        db_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cold engine's spec is inline (no file) and carries a secret *reference*: the
    driver resolves it from the secret directory. Neither the value nor the executor's own
    (unreferenced) TMS_SECRET_* variable reaches a command line or Spark's environment."""
    secret = f"pw-{uuid.uuid4().hex}"
    secrets = tmp_path / "secrets"
    secrets.mkdir(mode=0o700)
    (secrets / "lake_pg").write_text(secret)
    monkeypatch.setenv("TMS_SECRET_DIR", str(secrets))
    monkeypatch.setenv("TMS_SECRET_LAKE_PG", secret)  # held by the executor, not referenced
    lake = Lake(db_dsn, tmp_path / "lake")
    lake.table("ok", commits=3)
    store = PostgresStore(db_dsn)
    runner = Runner(store, tmp_path / "work")
    modes: dict[str, int] = {}
    spec_files: list[Path] = []

    def by_reference(job: JobSpec) -> JobSpec:
        return replace(job, spec={**job.spec, "catalog_secrets": {"jdbc.password":
                                                                   "file:lake_pg"}})

    def watch_modes() -> None:  # while a job runs, its work dir must be private
        while not done.is_set():
            spec_files.extend(_spec_files(runner.workdir))
            for attempt in runner.workdir.glob("op-*"):
                try:
                    modes["attempt dir"] = stat.S_IMODE(attempt.stat().st_mode)
                    modes["root"] = stat.S_IMODE(runner.workdir.stat().st_mode)
                except FileNotFoundError:
                    pass
            done.wait(PROC_SCAN_STEP_S)

    done = threading.Event()
    watcher = threading.Thread(target=watch_modes, daemon=True)
    watcher.start()
    try:
        with ProcWatch(secret) as procs:
            failed = runner.run("missing", by_reference(lake.job("no_such_table")))
            succeeded = runner.run("ok", by_reference(lake.job("ok",
                                                               allowed=[str(lake.allowed)])))
    finally:
        done.set()
        watcher.join()
        store.close()

    assert failed.state is OperationState.FAILED and failed.lease.attempts_used == 1
    assert succeeded.state is OperationState.SUCCEEDED, succeeded.outcome.error
    assert modes == {"attempt dir": 0o700, "root": 0o700}
    assert spec_files == [] and _spec_files(runner.workdir) == []
    kept = runner.workdir / f"op-{failed.id}-attempt-1"  # the failure's log stays, private
    assert (kept / "driver.log").exists() and stat.S_IMODE(kept.stat().st_mode) == 0o700
    assert secret not in (kept / "driver.log").read_text(errors="replace")
    assert procs.spark_jvms >= 2, "the scan never saw spark-submit's JVM"
    assert procs.inline_specs >= 2, "the scan never saw an inline spec"
    assert procs.leaks == []


# --- a Hudi base path -----------------------------------------------------------------------

def test_hudi_base_path_is_resolved_and_checked(tmp_path: Path) -> None:
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    (allowed / "real").mkdir(parents=True)
    outside.mkdir()
    (allowed / "link").symlink_to(outside)
    (allowed / "alias").symlink_to(allowed / "real")

    def base(raw: str, prefix: str = str(allowed)) -> str:
        return resolve_base_path(raw, [prefix])[0]

    with pytest.raises(locations.LocationError, match="outside"):
        base(f"{allowed}/link/trips")
    with pytest.raises(locations.LocationError, match="outside"):
        base(f"file://{outside}/trips")
    with pytest.raises(locations.LocationError):
        base(f"file://{allowed}/%252e%252e/outside")
    with pytest.raises(locations.LocationError, match="'%'"):
        base(f"{allowed}/a%41")
    # what is used afterwards is the real path, in the form it was given; s3a stays s3a
    assert base(f"{allowed}/alias/trips") == f"{allowed}/real/trips"
    assert base(f"file://localhost{allowed}/alias/t") == f"file://{allowed}/real/t"
    assert base("s3a://lake/t", "s3://lake") == "s3a://lake/t"
    with pytest.raises(locations.LocationError, match="outside"):
        base("s3a://lake/lak%65/t", "s3://lake/lake")


def test_hudi_jobs_use_the_real_base_path(tmp_path: Path) -> None:
    real, link = tmp_path / "real", tmp_path / "link"
    (real / "trips").mkdir(parents=True)
    link.symlink_to(real)
    retention = {"hudi.writer.hoodie.cleaner.commits.retained": "10"}  # clean needs it
    access = CatalogAccess("lake", CatalogType.HADOOP, retention, {}, (str(tmp_path),))
    table = make_table(table_id="t", format="hudi", table_name="trips",
                       base_path=f"file://{link}/trips", location=str(real / "trips"))
    job = HudiFormat().build_job(table, access, make_op(action="clean"))
    assert job.args == ("--target-base-path", f"file://{real}/trips")
    moved = replace(table, location=str(tmp_path / "elsewhere"))  # swapped since registration
    with pytest.raises(ValueError, match="where the table was checked"):
        HudiFormat().build_job(moved, access, make_op(action="clean"))


def test_a_catalog_entry_pointed_at_another_table_is_refused(pg: Any, tmp_path: Path) -> None:
    """Between the decision and the job the owner points its catalog entry at another
    tenant's metadata file (in the same warehouse): the job would load that table under this
    one's name, and every path check would pass. The location the scheduler checked when it
    decided travels in the spec, and the job refuses a table that is no longer there."""
    import psycopg

    lake = Lake(pg.dsn, tmp_path / "lake")
    lake.table("owner", commits=3)
    victim = lake.table("tenant_b", commits=3)
    victim_dir = Path(victim.location().removeprefix("file:").removeprefix("//"))
    owner_dir = Path(lake.catalog.load_table(f"{lake.namespace}.owner").location()
                     .removeprefix("file:").removeprefix("//"))
    spec = lake.spec("owner", allowed=[str(lake.allowed)])
    spec["location"] = str(owner_dir.resolve())  # as IcebergFormat.build_job sends it
    with psycopg.connect(pg.dsn, autocommit=True) as conn:
        conn.execute("UPDATE iceberg_tables SET metadata_location = %s "
                     "WHERE table_namespace = %s AND table_name = 'owner'",
                     (victim.metadata_location, lake.namespace))
    before = _files(victim_dir)

    result = _run(JobSpec("pyspark", str(ICEBERG_MAINTENANCE_APP), spec), tmp_path)

    _assert_refused(result, "as checked when this operation was decided", str(victim_dir))
    assert _files(victim_dir) == before  # the other table untouched
    assert len(victim.refresh().metadata.snapshots) == 3
