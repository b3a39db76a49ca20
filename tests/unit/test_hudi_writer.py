"""The Hudi writers' configuration: where it comes from, and every way to smuggle something in.

The configuration is the operator's (catalog properties, a file under TMS_HUDI_WRITER_DIR, a
catalog secret reference); each test is one attack or one source, asserting what is refused
and that nothing refused (or secret) comes back.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path

import pytest

from tests.unit.fakes import make_access, make_table
from tms.catalogs import CatalogAccess
from tms.domain import Table
from tms.formats.hudi.writer import (
    ENV_WRITER_DIR,
    FILE_PROPERTY,
    WriterConfigError,
    is_writer_key,
    property_problems,
    unknown_reason,
    writer_config,
    writer_properties,
    writer_zone,
)
from tms.formats.hudi.writer_keys import LOCK_PROVIDER_ZOOKEEPER, WRITER_KEYS

TABLE = make_table(table_id="trips", format="hudi", base_path="/lake/trips")
ZK = {"hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL",
      "hoodie.write.lock.provider": LOCK_PROVIDER_ZOOKEEPER,
      "hoodie.write.lock.zookeeper.url": "zk1:2181,zk2:2181",
      "hoodie.write.lock.zookeeper.base_path": "/hudi/locks",
      "hoodie.write.lock.zookeeper.lock_key": "trips"}


def catalog(props: dict[str, str] | None = None, secrets: dict[str, str] | None = None,
            resolved: dict[str, str] | None = None) -> CatalogAccess:
    """An opened catalog: ``secrets`` are references, ``resolved`` their values (as
    ``catalogs.access`` merges them into the properties)."""
    base = make_access("/lake")
    merged = {f"hudi.writer.{k}" if not k.startswith("hudi.") else k: v
              for k, v in (props or {}).items()}
    merged.update(resolved or {})
    return replace(base, properties=merged, secret_refs=dict(secrets or {}),
                   secret_values=tuple((resolved or {}).values()))


def writer_dir(tmp_path: Path, files: dict[str, str], mode: int = 0o644) -> dict[str, str]:
    root = tmp_path / "writers"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(mode)
    root.mkdir(exist_ok=True)
    return {ENV_WRITER_DIR: str(root)}


def config_from_file(tmp_path: Path, text: str, table: Table = TABLE, mode: int = 0o644,
                     name: str = "lake/{table_id}.properties") -> object:
    env = writer_dir(tmp_path, {name.replace("{table_id}", table.table_id): text}, mode)
    return writer_config(table, catalog({FILE_PROPERTY: name}), env)


# sources -----------------------------------------------------------------------------------------
def test_no_configuration_is_unknown_and_says_what_to_set() -> None:
    assert writer_config(TABLE, catalog(), {}) is None
    assert writer_properties(TABLE, catalog()) is None
    assert "hudi.writer.hoodie.cleaner.commits.retained" in unknown_reason(TABLE, catalog())


def test_catalog_properties_are_the_configuration() -> None:
    props = {"hoodie.cleaner.policy": "KEEP_LATEST_COMMITS",
             "hoodie.cleaner.commits.retained": "30", "hoodie.keep.min.commits": "40",
             "hoodie.keep.max.commits": "50", "tms.hudi.version": "1.0.2",
             "tms.hudi.writer-timezone": "Asia/Kolkata", **ZK}
    found = writer_config(TABLE, catalog(props), {})
    assert found is not None
    assert found.properties == {k: v for k, v in props.items() if not k.startswith("tms.")}
    assert found.hudi_version == "1.0.2"  # TMS's own keys never reach Hudi
    assert found.writer_zone == "Asia/Kolkata"
    assert writer_zone(TABLE, catalog(props)) == "Asia/Kolkata"
    assert writer_properties(TABLE, catalog(props)) == found.properties
    assert unknown_reason(TABLE, catalog(props)) == ""


def test_a_file_per_table_overrides_the_catalog(tmp_path: Path) -> None:
    env = writer_dir(tmp_path, {"lake/trips.properties":
                                "# retention of the trips writers\n"
                                "hoodie.cleaner.commits.retained=30\n\n"
                                "hoodie.keep.min.commits=40\r\n"})
    cat = catalog({"hoodie.cleaner.commits.retained": "10",
                   FILE_PROPERTY: "lake/{table_id}.properties"})
    found = writer_config(TABLE, cat, env)
    assert found is not None and found.properties == {
        "hoodie.cleaner.commits.retained": "30", "hoodie.keep.min.commits": "40"}
    assert found.sources == ("catalogs/c properties",
                             f"{ENV_WRITER_DIR}/lake/trips.properties")
    other = replace(TABLE, table_id="other")  # the operator wrote no file for it: refused
    with pytest.raises(WriterConfigError, match="no such file"):
        writer_config(other, cat, env)
    assert writer_properties(other, cat) is None


def test_a_file_reference_needs_the_operators_directory() -> None:
    with pytest.raises(WriterConfigError, match=ENV_WRITER_DIR):
        writer_config(TABLE, catalog({FILE_PROPERTY: "x.properties"}), {})


# attacks: keys and values ------------------------------------------------------------------------
@pytest.mark.parametrize("key,value,words", [
    ("hoodie.base.path", "/lake/victim", "base path"),
    ("hoodie.table.name", "victim", "table name"),
    ("hoodie.datasource.write.recordkey.field", "id", "datasource"),
    ("hoodie.write.commit.callback.http.url", "http://evil", "callback"),
    ("hoodie.metrics.reporter.class", "com.evil.Reporter", "metrics"),
    ("hoodie.index.class", "com.evil.Index", "class"),
    ("hoodie.write.lock.provider", "com.evil.Lock", "must be one of"),
    ("hoodie.write.lock.provider",
     "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider", "must be one of"),
    ("hoodie.compaction.strategy", "com.evil.Strategy", "must be one of"),
    ("hoodie.clustering.plan.strategy.class", "java.lang.Runtime", "must be one of"),
    ("hoodie.cleaner.commits.retained", "0", "integer"),
    ("hoodie.cleaner.commits.retained", "30\nhoodie.base.path=/x", "integer"),
    ("hoodie.cleaner.commits.retained", " 30", "integer"),
    ("hoodie.write.lock.zookeeper.url", "zk:2181\ninclude=/etc/passwd", "ZooKeeper hosts"),
    ("hoodie.write.lock.zookeeper.base_path", "/hudi/../x", "znode"),
    ("hoodie.clustering.plan.strategy.sort.columns", "a, b", "column names"),
    ("hoodie.cleaner.policy", "keep_latest_commits", "must be one of"),
    ("include", "/etc/passwd", "include"),
    ("hoodie.unknown.key", "1", "unknown key"),
    ("tms.hudi.writer-timezone", "Mars/Olympus_Mons", "IANA time zone"),
    ("tms.hudi.writer-timezone", "UTC\nhoodie.base.path=/x", "IANA time zone"),
    ("tms.hudi.writer-timezone", "../../etc/localtime", "IANA time zone"),
])
def test_every_key_and_value_is_checked(key: str, value: str, words: str) -> None:
    with pytest.raises(WriterConfigError, match=words) as e:
        writer_config(TABLE, catalog({key: value}), {})
    if key not in WRITER_KEYS:  # the value of an unknown key is never echoed
        assert value not in str(e.value)
    assert writer_properties(TABLE, catalog({key: value})) is None  # never half-read


def test_the_api_names_each_bad_catalog_property() -> None:
    props = {"hudi.writer.hoodie.base.path": "/x", "hudi.writer.hoodie.cleaner.policy": "NOPE",
             "hudi.writer.hoodie.cleaner.commits.retained": "30",
             FILE_PROPERTY: "../etc/passwd", "warehouse": "/w"}
    problems = dict(property_problems(props, {"hudi.writer.hoodie.keep.min.commits": "env:X",
                                              FILE_PROPERTY: "env:Y"}, "catalog"))
    assert set(problems) == {"catalog.properties[hudi.writer.hoodie.base.path]",
                             "catalog.properties[hudi.writer.hoodie.cleaner.policy]",
                             f"catalog.properties[{FILE_PROPERTY}]",
                             f"catalog.secrets[{FILE_PROPERTY}]"}
    assert is_writer_key("hudi.writer.hoodie.write.lock.zookeeper.lock_key")
    assert not is_writer_key("hudi.writer.hoodie.base.path") and not is_writer_key("x.lock_key")


def test_concurrent_writers_need_the_whole_lock() -> None:
    for missing in ("hoodie.write.lock.provider", "hoodie.write.lock.zookeeper.url",
                    "hoodie.write.lock.zookeeper.base_path",
                    "hoodie.write.lock.zookeeper.lock_key"):
        props = {k: v for k, v in ZK.items() if k != missing}
        with pytest.raises(WriterConfigError, match=missing):
            writer_config(TABLE, catalog(props), {})
    with pytest.raises(WriterConfigError, match="LAZY"):
        writer_config(TABLE, catalog({**ZK, "hoodie.cleaner.policy.failed.writes": "EAGER"}),
                      {})
    assert writer_config(TABLE, catalog(ZK), {}) is not None


# attacks: the file -------------------------------------------------------------------------------
@pytest.mark.parametrize("text,words", [
    ("include=/etc/hudi.properties\n", "include"),
    ("hoodie.cleaner.commits.retained 30\n", "key=value"),
    ("hoodie.cleaner.commits.retained = 30\n", "blanks"),
    ("hoodie.cleaner.commits.retained=30\nhoodie.cleaner.commits.retained=5\n", "twice"),
    ("hoodie.cleaner.commits.retained=30\x00\n", "control"),
    ("hoodie.cleaner.commits.retained=30\thoodie.base.path=/x\n", "control"),
    ("hoodie.base.path=/lake/victim\n", "base path"),
    ("hoodie.cleaner.commits.retained=3\u0660\n", "ASCII"),
])
def test_a_bad_line_refuses_the_whole_file(tmp_path: Path, text: str, words: str) -> None:
    with pytest.raises(WriterConfigError, match=words):
        config_from_file(tmp_path, text)


@pytest.mark.parametrize("reference", [
    "../outside.properties", "/etc/passwd", "lake/../../outside.properties", "",
    "lake/.hidden", "lake//x", "lake/x y.properties", "./lake/trips.properties",
])
def test_a_file_reference_stays_inside_the_directory(tmp_path: Path, reference: str) -> None:
    (tmp_path / "outside.properties").write_text("hoodie.cleaner.commits.retained=1\n")
    env = writer_dir(tmp_path, {"lake/trips.properties": "hoodie.cleaner.commits.retained=9\n"})
    with pytest.raises(WriterConfigError):
        writer_config(TABLE, catalog({FILE_PROPERTY: reference}), env)
    assert property_problems({FILE_PROPERTY: reference}, {}, "c")  # refused at the API too


def test_a_table_id_cannot_walk_out_of_the_directory(tmp_path: Path) -> None:
    env = writer_dir(tmp_path, {"lake/x.properties": "hoodie.cleaner.commits.retained=9\n"})
    for table_id in ("../../outside", "a/b", ".hidden"):
        with pytest.raises(WriterConfigError):
            writer_config(replace(TABLE, table_id=table_id),
                          catalog({FILE_PROPERTY: "lake/{table_id}.properties"}), env)


def test_symlinks_are_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside.properties"
    outside.write_text("hoodie.cleaner.commits.retained=1\n")
    env = writer_dir(tmp_path, {"real/trips.properties": "hoodie.cleaner.commits.retained=9\n"})
    root = Path(env[ENV_WRITER_DIR])
    (root / "lake").mkdir()
    (root / "lake" / "trips.properties").symlink_to(outside)  # the file itself
    (root / "linked").symlink_to(root / "real")  # a directory on the way
    for name in ("lake/trips.properties", "linked/trips.properties"):
        with pytest.raises(WriterConfigError, match="symlink"):
            writer_config(TABLE, catalog({FILE_PROPERTY: name}), env)
    found = writer_config(TABLE, catalog({FILE_PROPERTY: "real/trips.properties"}), env)
    assert found is not None and found.properties["hoodie.cleaner.commits.retained"] == "9"


def test_a_file_others_may_write_is_refused(tmp_path: Path) -> None:
    for mode in (0o664, 0o646):
        with pytest.raises(WriterConfigError, match="writable by group or others"):
            config_from_file(tmp_path / oct(mode), "hoodie.cleaner.commits.retained=9\n",
                             mode=mode)


def test_only_regular_small_files(tmp_path: Path) -> None:
    env = writer_dir(tmp_path, {})
    root = Path(env[ENV_WRITER_DIR])
    (root / "dir.properties").mkdir()
    os.mkfifo(root / "fifo.properties")
    (root / "big.properties").write_text("# x\n" * 20_000)
    for name, words in (("dir.properties", "regular"), ("fifo.properties", "regular"),
                        ("big.properties", "larger")):
        with pytest.raises(WriterConfigError, match=words):
            writer_config(TABLE, catalog({FILE_PROPERTY: name}), env)


# secrets -----------------------------------------------------------------------------------------
def test_a_secret_is_a_reference_never_a_returned_value() -> None:
    cat = catalog({**ZK, "hoodie.cleaner.commits.retained": "30"},
                  secrets={"hudi.writer.hoodie.write.lock.zookeeper.url": "env:TMS_SECRET_ZK"},
                  resolved={"hudi.writer.hoodie.write.lock.zookeeper.url": "zk-secret:2181"})
    found = writer_config(TABLE, cat, {})
    assert found is not None
    assert found.secret_refs == {"hoodie.write.lock.zookeeper.url": "env:TMS_SECRET_ZK"}
    assert "zk-secret:2181" not in repr(found) and "zk-secret" not in str(
        writer_properties(TABLE, cat))
    bad = catalog(secrets={"hudi.writer.hoodie.base.path": "env:TMS_SECRET_X"},
                  resolved={"hudi.writer.hoodie.base.path": "/lake/victim"})
    with pytest.raises(WriterConfigError) as e:
        writer_config(TABLE, bad, {})
    assert "/lake/victim" not in str(e.value)


def test_the_catalog_api_checks_hudi_properties_when_stored() -> None:
    """CreateCatalog/UpdateCatalog: the writer settings are checked against the schema (a
    known ``...lock_key`` is not mistaken for a secret), the jars are single absolute paths
    or URLs, and any other ``hudi.*`` key is unknown."""
    from tms.api.catalog_maps import check_maps
    from tms.domain import CatalogSpec, CatalogType
    from tms.formats.registry import load_formats

    good = {"hudi.writer.hoodie.write.lock.zookeeper.lock_key": "trips",
            "hudi.writer.hoodie.cleaner.commits.retained": "30",
            "hudi.utilities-jar": "/opt/hudi/hudi-utilities-slim-bundle_2.12-1.0.2.jar",
            "hudi.spark-bundle": "s3a://jars/hudi-spark3.5-bundle_2.12-1.0.2.jar"}
    problems: list[tuple[str, str]] = []
    check_maps(problems, "catalog", CatalogSpec("c", CatalogType.HADOOP, properties=good),
               load_formats())
    assert problems == []
    bad = {"hudi.writer.hoodie.write.lock.provider": "com.evil.Lock",
           "hudi.utilities-jar": "/a.jar,/b.jar", "hudi.spark-bundle": "relative.jar",
           "hudi.anything": "x", "hudi.writer.some_key": "x"}
    check_maps(problems, "catalog", CatalogSpec("c", CatalogType.HADOOP, properties=bad),
               load_formats())
    assert sorted(f for f, _ in problems) == sorted(f"catalog.properties[{k}]" for k in bad)


def test_docs_name_every_accepted_key_and_setting() -> None:
    """docs/hudi.md lists what the schema accepts: a key added here must be documented."""
    from tms.formats.hudi.writer import JAR_PROPERTIES
    from tms.formats.hudi.writer_keys import (
        CLUSTERING_EXECUTION_STRATEGIES,
        CLUSTERING_PLAN_STRATEGIES,
        COMPACTION_STRATEGIES,
    )

    root = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
    doc = (root / "docs" / "hudi.md").read_text()
    documented = set(re.findall(r"`([a-z][a-z0-9._-]+)`", doc))
    assert set(WRITER_KEYS) <= documented, sorted(set(WRITER_KEYS) - documented)
    for name in (*JAR_PROPERTIES, FILE_PROPERTY, ENV_WRITER_DIR, "TMS_HUDI_UTILITIES_JAR",
                 "TMS_HUDI_SPARK_BUNDLE", "hudi_utilities_jar", "hudi_spark_bundle"):
        assert f"`{name}`" in doc, name
    for cls in (*COMPACTION_STRATEGIES, *CLUSTERING_PLAN_STRATEGIES,
                *CLUSTERING_EXECUTION_STRATEGIES):
        assert cls.rsplit(".", 1)[-1] in doc, cls


def test_a_secret_value_is_checked_and_never_echoed() -> None:
    cat = catalog(secrets={"hudi.writer.hoodie.write.lock.zookeeper.url": "env:TMS_SECRET_ZK"},
                  resolved={"hudi.writer.hoodie.write.lock.zookeeper.url":
                            "hunter2\ninclude=/etc/passwd"})
    with pytest.raises(WriterConfigError, match="does not fit") as e:
        writer_config(TABLE, cat, {})
    assert "hunter2" not in str(e.value) and "passwd" not in str(e.value)
