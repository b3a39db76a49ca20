"""Where a writer's many small manifests are merged before a rewrite (tms.jobs.manifest_prep):
in the driver through Iceberg's core API when they fit in one manifest and the classpath can
make the constant cluster key, else with the Spark procedure. Fakes stand in for Py4J."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from tms.jobs import manifest_prep as mp

SMALL = 4096


class Package:
    """What Py4J gives for a name that is no class: more packages, none callable."""

    def __getattr__(self, name: str) -> Package:
        return Package()


def jvm_with_guava() -> Any:
    functions = SimpleNamespace(constant=lambda value: ("constant", value))
    root: Any = functions
    for part in reversed(mp.CONSTANT_FUNCTIONS.split(".")):
        root = SimpleNamespace(**{part: root})
    return root


class Manifest:
    def __init__(self, length: int) -> None:
        self._length = length

    def length(self) -> int:
        return self._length


class Snapshot:
    def __init__(self, lengths: list[int], summary: dict[str, str]) -> None:
        self.lengths, self._summary = lengths, summary

    def allManifests(self, io: object) -> list[Manifest]:  # noqa: N802 (Java's name)
        return [Manifest(n) for n in self.lengths]

    def summary(self) -> dict[str, str]:
        return self._summary


class Table:
    """Records the core API's manifest rewrite; after its commit, one merged manifest."""

    def __init__(self, lengths: list[int], props: dict[str, str] | None = None) -> None:
        self.snap = Snapshot(lengths, {})
        self.props = props or {}
        self.cluster_keys: list[Any] = []
        self.commits = 0

    def currentSnapshot(self) -> Snapshot:  # noqa: N802
        return self.snap

    def properties(self) -> dict[str, str]:
        return self.props

    def io(self) -> None:
        return None

    def refresh(self) -> None:
        pass

    def rewriteManifests(self) -> Table:  # noqa: N802
        return self

    def clusterBy(self, key: Any) -> Table:  # noqa: N802
        self.cluster_keys.append(key)
        return self

    def commit(self) -> None:
        self.commits += 1
        self.snap = Snapshot([sum(self.snap.lengths)], {
            mp.REPLACED_KEY: str(len(self.snap.lengths)), mp.CREATED_KEY: "1"})


class Spark:
    def __init__(self, jvm: Any) -> None:
        self.sparkContext = SimpleNamespace(_jvm=jvm)
        self.sql_run: list[str] = []

    def sql(self, text: str) -> Any:
        self.sql_run.append(text)
        row = SimpleNamespace(asDict=lambda: {"rewritten_manifests_count": 150,
                                              "added_manifests_count": 1})
        return SimpleNamespace(collect=lambda: [row])


def test_the_constant_key_comes_from_the_classpaths_guava_or_not_at_all() -> None:
    assert mp.constant_key(jvm_with_guava()) == ("constant", mp.CLUSTER_KEY)
    assert mp.constant_key(Package()) is None  # no such class: the procedure runs instead


def test_small_manifests_that_fit_one_are_merged_in_the_driver() -> None:
    table, spark = Table([SMALL] * 150), Spark(jvm_with_guava())
    info = mp.consolidate(spark, "table => 't'", "cat", table)
    assert spark.sql_run == []  # no Spark job
    assert table.cluster_keys == [("constant", mp.CLUSTER_KEY)] and table.commits == 1
    assert info == {"manifests": 150, "small_manifests": 150, "rewritten": 150, "added": 1,
                    "merged_in": "driver"}


def test_the_procedure_merges_when_the_driver_cannot_or_should_not() -> None:
    # no Guava on the classpath
    table, spark = Table([SMALL] * 150), Spark(Package())
    info = mp.consolidate(spark, "table => 't'", "cat", table)
    assert spark.sql_run == ["CALL cat.system.rewrite_manifests(table => 't')"]
    assert table.commits == 0 and info["merged_in"] == "spark" and info["rewritten"] == 150
    # more than one manifest's worth (the table's own target): the procedure clusters them
    table = Table([SMALL] * 150, {mp.TARGET_PROPERTY: str(SMALL * 120)})
    table_small = SMALL * 120 * mp.SMALL_RATIO
    assert SMALL < table_small  # still small manifests, so still merged first
    spark = Spark(jvm_with_guava())
    assert mp.consolidate(spark, "table => 't'", "cat", table)["merged_in"] == "spark"
    assert table.commits == 0 and len(spark.sql_run) == 1


def test_few_small_manifests_or_turned_off_are_left_alone() -> None:
    for table, enabled in ((Table([SMALL] * (mp.MIN_SMALL_MANIFESTS - 1)), True),
                           (Table([SMALL] * 150), False)):
        spark = Spark(jvm_with_guava())
        info = mp.consolidate(spark, "table => 't'", "cat", table, enabled=enabled)
        assert spark.sql_run == [] and table.commits == 0 and "merged_in" not in info
