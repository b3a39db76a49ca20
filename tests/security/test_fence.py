"""The deletion fence in a real Spark JVM: TMS's Hadoop file systems (``tms-fence.jar``, built
by ``scripts/setup``) refuse a delete or rename outside the armed table, however the path is
reached, at the moment of the change; the maintenance job arms it around every action.

The probe runs under the production spark-submit settings (``SparkSettings.from_env``), so the
file system it gets for ``file:`` paths is the one every TMS job gets. It tries what an
attacker would make Iceberg or Hudi do after the job's own checks passed: delete another
tenant's file by its path, through a directory inside the table swapped for a symlink, through
``..``, rename a table file out of the table and a foreign file into it, overwrite, append to
or plant a file outside; and, in a JVM nobody
armed, with the roots from the Hadoop conf (an executor of a one-table application).
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.security.job_harness import Lake, cold_engine, spark_settings
from tms.spark.provision_fence import FENCE_JAR, LOCAL_FS_CLASS

pytestmark = pytest.mark.integration

PROBE_TIMEOUT_S = 300

# What both probes share: the session, a way to record each attempt's outcome, the roots.
PROBE_HEAD = r'''
import json, sys
from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()
jvm, gw = spark.sparkContext._jvm, spark.sparkContext._gateway
conf = spark.sparkContext._jsc.hadoopConfiguration()
Path = jvm.org.apache.hadoop.fs.Path
out = {}


def attempt(name, fn):
    try:
        out[name] = {"ok": bool(fn())}
    except Exception as e:
        out[name] = {"error": str(getattr(e, "java_exception", e))}


roots = gw.new_array(gw.jvm.java.lang.String, 1)
'''

PROBE = PROBE_HEAD + r'''
table, outside = sys.argv[1], sys.argv[2]
fs = Path("file:///").getFileSystem(conf)
out.update({"class": fs.getClass().getName(),
            "required": spark.conf.get("spark.tms.fence.required")})
roots[0] = "file://" + table
Fence = jvm.tms.fence.Fence
attempt("unarmed_inside", lambda: fs.delete(Path(table + "/data/unarmed.parquet"), False))
Fence.arm(roots)
attempt("outside", lambda: fs.delete(Path(outside + "/victim.parquet"), False))
attempt("symlink", lambda: fs.delete(Path(table + "/link/victim.parquet"), False))
attempt("dotdot", lambda: fs.delete(Path(table + "/../outside/victim.parquet"), False))
attempt("recursive", lambda: fs.delete(Path(outside), True))
attempt("rename_out", lambda: fs.rename(Path(table + "/data/a.parquet"),
                                        Path(outside + "/stolen.parquet")))
attempt("rename_in", lambda: fs.rename(Path(outside + "/victim.parquet"),
                                       Path(table + "/data/planted.parquet")))
attempt("overwrite", lambda: fs.create(Path(outside + "/victim.parquet"), True).close()
        or True)
attempt("append", lambda: fs.append(Path(outside + "/victim.parquet")).close() or True)
attempt("create_out", lambda: fs.create(Path(outside + "/new/planted.parquet"), False).close()
        or True)
# the file system's other doors: copies in and out (and their source deletes), the builders
attempt("copy_in_over", lambda: fs.copyFromLocalFile(False, True, Path(table + "/data/a.parquet"),
                                                     Path(outside + "/victim.parquet")) or True)
sources = gw.new_array(jvm.org.apache.hadoop.fs.Path, 1)
sources[0] = Path(table + "/data/a.parquet")
attempt("copy_in_many", lambda: fs.copyFromLocalFile(False, True, sources, Path(outside))
        or True)
attempt("copy_in_delsrc", lambda: fs.copyFromLocalFile(True, True, Path(outside + "/bait"),
                                                       Path(table + "/data/bait")) or True)
attempt("copy_out_raw", lambda: fs.copyToLocalFile(False, Path(table + "/data/a.parquet"),
                                                   Path(outside + "/copied.parquet"), True)
        or True)
attempt("copy_out_delsrc", lambda: fs.copyToLocalFile(True, Path(outside + "/bait2"),
                                                      Path(table + "/data/bait2")) or True)
attempt("move_out", lambda: fs.moveToLocalFile(Path(outside + "/bait3"),
                                               Path(table + "/data/bait3")) or True)
# a link the owner planted inside the table: a write or a rename onto it would follow it
attempt("write_via_link", lambda: fs.create(Path(table + "/data/evil.parquet"), True).close()
        or True)
attempt("rename_via_link", lambda: fs.rename(Path(table + "/data/c.parquet"),
                                             Path(table + "/data/evil_dir")))
attempt("builder", lambda: fs.createFile(Path(outside + "/built.parquet")).build().close()
        or True)
attempt("inside", lambda: fs.delete(Path(table + "/data/b.parquet"), False))
attempt("write_inside", lambda: fs.create(Path(table + "/data/new.parquet"), False).close()
        or True)
attempt("copy_inside", lambda: fs.copyFromLocalFile(False, True, Path(table + "/data/a.parquet"),
                                                    Path(table + "/data/a2.parquet")) or True)
out["refused"] = Fence.refusedCount()
Fence.disarm()
# a JVM nobody armed, roots from the Hadoop conf: an executor of a one-table application
own = jvm.org.apache.hadoop.conf.Configuration(conf)
own.set("tms.fence.roots", "file://" + table)
own.setBoolean("fs.file.impl.disable.cache", True)
conf_fs = Path("file:///").getFileSystem(own)
attempt("conf_outside", lambda: conf_fs.delete(Path(outside + "/victim.parquet"), False))
attempt("conf_inside", lambda: conf_fs.delete(Path(table + "/data/c.parquet"), False))
# the operator's extra roots (a cluster's staging directory) join the table's, nothing else
extra = jvm.org.apache.hadoop.conf.Configuration(own)
extra.set("tms.fence.extra-roots", "file://" + sys.argv[3])
extra_fs = Path("file:///").getFileSystem(extra)
attempt("extra_inside", lambda: extra_fs.create(Path(sys.argv[3] + "/app.jar"), True).close()
        or True)
attempt("extra_outside", lambda: extra_fs.delete(Path(outside + "/victim.parquet"), False))
print("FENCE " + json.dumps(out))
spark.stop()
'''


def _probe(tmp_path: Path, text: str, args: list[str],
           env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run a probe script under the production spark-submit settings; what it recorded."""
    script = tmp_path / "probe.py"
    script.write_text(text)
    settings = spark_settings()
    assert any(Path(j).name == FENCE_JAR for j in settings.jars), settings.jars
    proc = subprocess.run(settings.submit_argv(str(script), args),
                          env={**settings.submit_env(os.environ), **(env or {})},
                          capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("FENCE "))
    return json.loads(line.removeprefix("FENCE "))  # type: ignore[no-any-return]


def test_the_fence_refuses_every_change_outside_the_armed_table(tmp_path: Path) -> None:
    table, outside = tmp_path / "lake" / "t", tmp_path / "lake" / "outside"
    (table / "data").mkdir(parents=True)
    outside.mkdir()
    victim = outside / "victim.parquet"
    victim.write_bytes(b"another tenant's data")
    baits = ("bait", "bait2", "bait3")
    for name in baits:
        (outside / name).write_bytes(b"another tenant's file")
    for name in ("a", "b", "c", "unarmed"):
        (table / "data" / f"{name}.parquet").write_bytes(name.encode())
    (table / "link").symlink_to(outside, target_is_directory=True)
    (table / "data" / "evil.parquet").symlink_to(victim)
    (table / "data" / "evil_dir").symlink_to(outside, target_is_directory=True)

    staging = tmp_path / "staging"
    staging.mkdir()
    out = _probe(tmp_path, PROBE, [str(table), str(outside), str(staging)])

    assert out["class"] == LOCAL_FS_CLASS and out["required"] == "true"
    attacks = ("outside", "symlink", "dotdot", "recursive", "rename_out", "rename_in",
               "overwrite", "append", "create_out", "copy_in_over", "copy_in_many",
               "copy_in_delsrc", "copy_out_raw", "copy_out_delsrc", "move_out",
               "write_via_link", "rename_via_link", "builder")
    for attack in (*attacks, "conf_outside", "extra_outside"):
        assert "TMS fence: " in out[attack].get("error", ""), (attack, out[attack])
    assert "resolves to" in out["symlink"]["error"]  # the real place is named
    assert out["refused"] == len(attacks)  # the armed attacks, counted for the job's report
    assert victim.read_bytes() == b"another tenant's data"
    assert sorted(p.name for p in outside.iterdir()) == sorted(  # nothing planted or taken
        ["victim.parquet", *baits])
    assert out["copy_inside"] == {"ok": True} and (table / "data" / "a2.parquet").exists()
    assert out["write_inside"] == {"ok": True} and (table / "data" / "new.parquet").exists()
    assert (table / "data" / "a.parquet").exists() and not (table / "data" / "planted.parquet"
                                                            ).exists()
    # inside the table the file system works as before, armed or not
    assert out["inside"] == {"ok": True} and out["conf_inside"] == {"ok": True}
    assert out["unarmed_inside"] == {"ok": True}
    assert out["extra_inside"] == {"ok": True} and (staging / "app.jar").exists()
    assert not (table / "data" / "b.parquet").exists()


def test_every_job_acts_with_the_fence_armed_on_its_own_table(pg: Any, tmp_path: Path
                                                              ) -> None:
    """The production job, under spark-submit: the result says the fence was armed on the
    table's own location, with the fenced file system serving it, and nothing refused."""
    lake = Lake(pg.dsn, tmp_path / "lake")
    table = lake.table("t", commits=3)
    job = lake.job("t", "expire_snapshots", {"retain-last": "1"}, allowed=[str(lake.allowed)])

    result = cold_engine().run(job, tmp_path / "work", threading.Event(), lambda _h: None)

    assert result.succeeded, result.error
    fence = result.result["fence"]
    location = table.location().removeprefix("file:").removeprefix("//")
    assert fence == {"required": True, "state": "armed", "refused": 0,
                     "roots": [Path(location).resolve().as_uri()],
                     "file_system": LOCAL_FS_CLASS}, fence


PROBE_S3 = PROBE_HEAD + r'''
endpoint, bucket = sys.argv[1], sys.argv[2]
for key, value in {"fs.s3a.endpoint": endpoint, "fs.s3a.path.style.access": "true",
                   "fs.s3a.connection.ssl.enabled": "false", "fs.s3a.access.key": "k",
                   "fs.s3a.secret.key": "s", "fs.s3a.endpoint.region": "us-east-1"}.items():
    conf.set(key, value)
if sys.argv[3] == "filter":  # the filter every other store gets, wrapping S3A here
    conf.set("fs.s3a.impl", "tms.fence.FencedFilterFileSystem")
    conf.set("tms.fence.inner.s3a.impl", "org.apache.hadoop.fs.s3a.S3AFileSystem")
    conf.setBoolean("fs.s3a.impl.disable.cache", True)
base = "s3a://" + bucket + "/lake"
fs = Path(base + "/").getFileSystem(conf)
out["class"] = fs.getClass().getName()
roots[0] = "s3://" + bucket + "/lake/t"  # s3 and s3a are one store
jvm.tms.fence.Fence.arm(roots)
attempt("outside", lambda: fs.delete(Path(base + "/other/victim.parquet"), False))
attempt("prefix", lambda: fs.delete(Path(base + "/t2/victim.parquet"), False))
attempt("dotdot", lambda: fs.delete(Path(base + "/t/../other/victim.parquet"), False))
attempt("recursive", lambda: fs.delete(Path(base + "/other"), True))
attempt("rename_out", lambda: fs.rename(Path(base + "/t/data/a.parquet"),
                                        Path(base + "/other/stolen.parquet")))
attempt("overwrite", lambda: fs.create(Path(base + "/other/victim.parquet"), True).close()
        or True)
import tempfile
local = tempfile.NamedTemporaryFile(suffix=".parquet", delete=False)
local.write(b"planted")
local.close()
attempt("copy_in_over", lambda: fs.copyFromLocalFile(False, True, Path("file://" + local.name),
                                                     Path(base + "/other/victim.parquet"))
        or True)
attempt("multipart", lambda: fs.createMultipartUploader(Path(base + "/other")).build()
        is not None)
attempt("inside", lambda: fs.delete(Path(base + "/t/data/b.parquet"), False))
attempt("write_inside", lambda: fs.create(Path(base + "/t/data/new.parquet"), False).close()
        or True)
out["refused"] = jvm.tms.fence.Fence.refusedCount()
jvm.tms.fence.Fence.disarm()
print("FENCE " + json.dumps(out))
spark.stop()
'''


PROBE_SUBMIT_ONLY = PROBE_HEAD + r'''
table, outside = sys.argv[1], sys.argv[2]
own = jvm.org.apache.hadoop.conf.Configuration(conf)
own.set("tms.fence.roots", "file://" + table)
own.setBoolean("fs.file.impl.disable.cache", True)
fs = Path("file:///").getFileSystem(own)
out["class"] = fs.getClass().getName()
attempt("outside", lambda: fs.create(Path(outside + "/staged.jar"), True).close() or True)
print("FENCE " + json.dumps(out))
spark.stop()
'''


def test_a_jvm_that_only_submits_holds_no_table_roots(tmp_path: Path) -> None:
    """spark-submit in cluster mode gets the job's ``spark.hadoop.*`` conf (a Hudi job's
    roots among it) and uploads the application to the cluster's staging directory: TMS
    marks that JVM (``SPARK_SUBMIT_OPTS``) and the fence does not hold there. The driver and
    executors, which change the table, never get the mark."""
    from tms.spark.settings import ENV_SUBMIT_OPTS, SUBMIT_ONLY_OPT

    table, outside = tmp_path / "t", tmp_path / "staging"
    table.mkdir()
    outside.mkdir()
    out = _probe(tmp_path, PROBE_SUBMIT_ONLY, [str(table), str(outside)],
                 {ENV_SUBMIT_OPTS: SUBMIT_ONLY_OPT})
    assert out["class"] == LOCAL_FS_CLASS and out["outside"] == {"ok": True}
    assert (outside / "staged.jar").exists()
    # without the mark, the same JVM holds the roots from the conf
    (outside / "staged.jar").unlink()
    out = _probe(tmp_path, PROBE_SUBMIT_ONLY, [str(table), str(outside)])
    assert "TMS fence: " in out["outside"].get("error", "")
    assert not (outside / "staged.jar").exists()


@pytest.mark.parametrize("mode", ["s3a", "filter"])
def test_the_fence_holds_on_s3_too(tmp_path: Path, mode: str) -> None:
    """The same on S3 (moto on loopback, S3A as every job gets it): another table's prefix,
    a prefix that merely starts with the table's name, ``..``, a recursive delete, a rename
    out, a copy in, a multipart upload; inside the table S3A works as before. ``filter``:
    the same attacks through the filter that fences every other store (HDFS, GCS, Azure,
    OSS, none of which can run here), wrapping S3A: what it holds does not depend on the
    connector inside it."""
    from tests.servers.moto import moto_server
    from tms.spark.provision_fence import FILTER_FS_CLASS, S3A_FS_CLASS

    with moto_server(tmp_path / "moto") as moto:
        moto.create_bucket("fence")
        s3 = moto.boto3_client("s3")
        keys = ["lake/other/victim.parquet", "lake/t2/victim.parquet", "lake/t/data/a.parquet",
                "lake/t/data/b.parquet"]
        for key in keys:
            s3.put_object(Bucket="fence", Key=key, Body=b"x")  # type: ignore[attr-defined]
        out = _probe(tmp_path, PROBE_S3, [moto.endpoint, "fence", mode])
        left = sorted(o["Key"] for o in s3.list_objects_v2(  # type: ignore[attr-defined]
            Bucket="fence")["Contents"])
        victim_body = s3.get_object(  # type: ignore[attr-defined]
            Bucket="fence", Key="lake/other/victim.parquet")["Body"].read()

    assert out["class"] == (S3A_FS_CLASS if mode == "s3a" else FILTER_FS_CLASS)
    attacks = ("outside", "prefix", "dotdot", "recursive", "rename_out", "overwrite",
               "copy_in_over", "multipart")
    for attack in attacks:
        assert "TMS fence: " in out[attack].get("error", ""), (attack, out[attack])
    assert out["refused"] == len(attacks)
    assert out["inside"] == {"ok": True} and out["write_inside"] == {"ok": True}
    assert left == ["lake/other/victim.parquet", "lake/t/data/a.parquet",
                    "lake/t/data/new.parquet", "lake/t2/victim.parquet"]
    assert victim_body == b"x"
