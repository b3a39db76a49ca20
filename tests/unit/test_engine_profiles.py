"""Engine and Spark settings per queue (executor configuration) and per table (policy)."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.unit.fakes import make_table
from tms.engines.profiles import (
    ENGINE_COLD,
    ENGINE_WARM,
    EngineRouter,
    load_profiles,
    own_settings,
    parse_profiles,
    table_settings,
)
from tms.policy.common import validate_policy
from tms.spark.caps import ResourceCaps
from tms.spark.settings import SparkSettings

BASE = SparkSettings(master="local[2]", conf={"spark.sql.shuffle.partitions": "4"})


class Made:
    def __init__(self, kind: str, settings: SparkSettings) -> None:
        self.name, self.settings, self.closed = kind, settings, False

    def run(self, *a: Any) -> Any:
        raise AssertionError("not run in these tests")

    def close(self) -> None:
        self.closed = True


def factories() -> dict[str, Any]:
    return {ENGINE_COLD: lambda s: Made(ENGINE_COLD, s),
            ENGINE_WARM: lambda s: Made(ENGINE_WARM, s)}


CONFIG = {
    "engine": "spark-submit",
    "spark": {"driver_memory": "2g", "conf": {"spark.sql.adaptive.enabled": "true"}},
    "queues": {
        "small": {"engine": "warm-spark"},
        "big": {"spark": {"master": "yarn", "deploy_mode": "cluster", "executor_cores": 4,
                          "num_executors": 10, "conf": {"spark.sql.shuffle.partitions": "400"}}},
    },
}


def test_queues_inherit_and_override() -> None:
    default, queues = parse_profiles(CONFIG, BASE)
    assert (default.engine, default.settings.driver_memory) == (ENGINE_COLD, "2g")
    assert queues["small"].engine == ENGINE_WARM and queues["small"].settings == default.settings
    big = queues["big"].settings
    assert (big.master, big.deploy_mode, big.executor_cores, big.num_executors) == (
        "yarn", "cluster", 4, 10)
    assert big.conf == {"spark.sql.shuffle.partitions": "400",
                        "spark.sql.adaptive.enabled": "true"}
    argv = big.submit_argv("app.py", [])
    assert argv[argv.index("--executor-cores") + 1] == "4"
    assert argv[argv.index("--num-executors") + 1] == "10"


@pytest.mark.parametrize("config, message", [
    ({"engine": "flink"}, "engine: no execution engine named 'flink'"),
    ({"spark": {"master": "local[x]"}}, "unsupported Spark master"),
    ({"spark": {"driver_memory": "--jars evil.jar"}}, "expected a size"),
    ({"spark": {"executor_cores": 0}}, "executor_cores"),
    ({"spark": {"colour": "blue"}}, "spark.colour: unknown setting"),
    ({"spark": {"conf": {"spark.x": 1}}}, "string values"),
    ({"queues": {"q": {"spark": {"jars": "a.jar"}}}}, "queues.q.spark.jars"),
    ({"queues": {"q": {"master": "yarn"}}}, "only 'engine', 'spark' and 'caps'"),
    ({"caps": {"executor_memory": "lots"}}, "caps: caps.executor_memory"),
    ({"queues": {"q": {"caps": {"gpus": 1}}}}, "queues.q.caps.gpus: unknown cap"),
    ({"caps": {"num_executors": 0}}, "caps.num_executors"),
    ({"workers": 3}, "unknown top-level keys: workers"),
])
def test_bad_configuration_names_the_key(config: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_profiles(config, BASE)


def test_config_file(tmp_path: Path) -> None:
    path = tmp_path / "engines.toml"
    path.write_text('engine = "warm-spark"\n[queues.big.spark]\ndriver_memory = "8g"\n')
    default, queues = load_profiles(path, BASE)
    assert default.engine == ENGINE_WARM and queues["big"].engine == ENGINE_WARM
    assert queues["big"].settings.driver_memory == "8g"
    path.write_text("engine = [")
    with pytest.raises(ValueError, match="engines.toml"):
        load_profiles(path, BASE)


def test_table_resources_and_tuning_conf() -> None:
    assert table_settings(BASE, {"compaction.min-input-files": "5"}) is None
    own = table_settings(BASE, {"spark.executor-memory": "4g", "spark.executor-cores": "2",
                                "spark.conf.spark.sql.shuffle.partitions": "64"})
    assert own is not None and (own.executor_memory, own.executor_cores) == ("4g", 2)
    assert own.conf["spark.sql.shuffle.partitions"] == "64" and own.master == BASE.master


def test_table_resources_are_clamped_to_the_queue_caps() -> None:
    caps = ResourceCaps(executor_memory="2g", num_executors=4)
    own, notes = own_settings(BASE, {"spark.executor-memory": "64g", "spark.num-executors": "9",
                                     "spark.driver-memory": "1g"}, caps)
    assert own is not None and (own.executor_memory, own.num_executors) == ("2g", 4)
    assert own.driver_memory == "1g"
    assert notes == ["spark.executor-memory=64g is above the queue's cap; capped at 2g",
                     "spark.num-executors=9 is above the queue's cap; capped at 4"]
    default, queues = parse_profiles({"caps": {"executor_cores": 2},
                                      "queues": {"q": {"caps": {"driver_cores": 1}}}}, BASE)
    assert (default.caps.executor_cores, queues["q"].caps.executor_cores) == (2, 2)
    assert queues["q"].caps.driver_cores == 1


@pytest.mark.parametrize("stored", [
    {"spark.conf.spark.executor.extraJavaOptions": "-javaagent:/tmp/evil.jar"},
    {"spark.conf.spark.sql.shuffle.partitions": " 5"},
    {"spark.executor-memory": "99999999999999999999g"},
])
def test_stored_values_are_checked_again_before_a_job(stored: dict[str, str]) -> None:
    """A row written before the schema tightened cannot reach spark-submit."""
    with pytest.raises(ValueError):
        own_settings(BASE, stored, ResourceCaps())


@pytest.mark.parametrize("key, value", [
    ("spark.conf.spark.sql.catalog.evil", "org.Evil"),
    ("spark.conf.spark.jars", "http://x/evil.jar"),
    ("spark.conf.spark.executor.extraJavaOptions", "-javaagent:evil.jar"),
    ("spark.conf.spark.driver.extraClassPath", "/tmp"),
    ("spark.conf.spark.sql.extensions", "org.Evil"),
    ("spark.conf.spark.master", "spark://elsewhere:7077"),
    ("spark.conf.spark.sql.shuffle.partitions", "4\n--jars x"),
    ("spark.conf.spark sql", "1"),
    ("spark.driver-memory", "--conf x"),
    ("spark.executor-cores", "0"),
    ("spark.master", "yarn"),
    ("execution.max-attempts", "0"),
    ("execution.max-attempts", "1000"),
])
def test_tables_cannot_reach_beyond_tuning(key: str, value: str) -> None:
    problems = validate_policy({}, {key: value})
    assert problems and problems[0][0] == f"table.policy[{key}]"


def test_tables_may_tune() -> None:
    assert validate_policy({}, {"spark.conf.spark.sql.shuffle.partitions": "64",
                                "spark.conf.spark.executor.memoryOverhead": "1g",
                                "spark.conf.spark.memory.fraction": "0.6",
                                "spark.driver-memory": "3g", "execution.max-attempts": "5"}) == []


def test_router_keeps_one_engine_per_queue_and_runs_overrides_cold() -> None:
    default, queues = parse_profiles(CONFIG, BASE)
    router = EngineRouter(default, queues, factories())
    small = replace(make_table(), queue="small")
    first = router.engine_for(small)
    assert first.name == ENGINE_WARM and router.engine_for(small) is first
    assert router.engine_for(replace(make_table(), queue="unknown")).name == ENGINE_COLD
    assert router.engine_for(replace(make_table(), queue="other")) is router.engine_for(
        replace(make_table(), queue="unknown"))  # both take the default profile
    tuned = replace(small, policy={"spark.driver-memory": "6g"})
    own = router.engine_for(tuned)
    assert own.name == ENGINE_COLD and own.settings.driver_memory == "6g"  # type: ignore[attr-defined]
    router.close()
    assert first.closed  # type: ignore[attr-defined]


def test_router_is_safe_under_threads() -> None:
    default, queues = parse_profiles(CONFIG, BASE)
    router = EngineRouter(default, queues, factories())
    seen: list[object] = []
    threads = [threading.Thread(target=lambda: seen.append(
        router.engine_for(replace(make_table(), queue="small")))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(e) for e in seen}) == 1
