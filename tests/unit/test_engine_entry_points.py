"""Engines are built through their ``tms.engines`` entry points: found by name, an unknown name
refused with a message naming it, and every engine the router kept is closed through it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from tests.unit.fakes import make_table
from tms.engines.base import UnknownEngineError, engine_class, engine_names
from tms.engines.profiles import (
    ENGINE_COLD,
    ENGINE_WARM,
    EngineRouter,
    QueueProfile,
    parse_profiles,
)
from tms.engines.spark_submit import SparkSubmitEngine
from tms.engines.warm import WarmSparkEngine
from tms.spark.settings import SparkSettings
from tms_services.executor import make_router

BASE = SparkSettings(master="local[2]")


def test_engines_are_found_by_entry_point_name() -> None:
    assert {ENGINE_COLD, ENGINE_WARM} <= set(engine_names())
    assert engine_class(ENGINE_COLD) is SparkSubmitEngine
    assert engine_class(ENGINE_WARM) is WarmSparkEngine


def test_an_unknown_engine_is_refused_naming_it(tmp_path: Path) -> None:
    message = (r"no execution engine named 'flink' in the tms\.engines entry points; "
               r"installed: .*spark-submit, warm-spark")
    with pytest.raises(UnknownEngineError, match=message):
        engine_class("flink")
    with pytest.raises(ValueError, match="queues.q.engine: " + message):
        parse_profiles({"queues": {"q": {"engine": "flink"}}}, BASE)
    with pytest.raises(UnknownEngineError, match="'flink'"):  # profiles built in code
        EngineRouter.from_entry_points(QueueProfile("flink", BASE), {}, tmp_path)
    config = tmp_path / "engines.toml"
    config.write_text('engine = "flink"\n')
    with pytest.raises(ValueError, match=f"{config}: engine: no execution engine named 'flink'"):
        make_router(BASE, config, tmp_path / "work")


def test_the_executor_builds_its_engines_through_entry_points(tmp_path: Path) -> None:
    config = tmp_path / "engines.toml"
    config.write_text('[queues.small]\nengine = "warm-spark"\n')
    router = make_router(BASE, config, tmp_path / "work")
    warm = router.engine_for(replace(make_table(), queue="small"))
    cold = router.engine_for(make_table())
    assert isinstance(warm, WarmSparkEngine) and warm.settings == BASE
    assert isinstance(warm.fallback, SparkSubmitEngine) and warm.fallback.settings == BASE
    assert warm.state_dir == tmp_path / "work" / "warm"
    assert isinstance(cold, SparkSubmitEngine) and cold.settings == BASE
    router.close()  # no driver was started: nothing to stop, and closing twice is harmless
    router.close()
    assert warm.driver is None


class Closing:
    def __init__(self, name: str, fails: bool = False) -> None:
        self.name, self.fails, self.closes = name, fails, 0

    def close(self) -> None:
        self.closes += 1
        if self.fails:
            raise OSError("cannot close")


def test_router_close_closes_every_kept_engine_even_after_one_fails() -> None:
    made: list[Closing] = []

    def factory(name: str, fails: bool = False) -> Callable[[SparkSettings], Closing]:
        def make(settings: SparkSettings) -> Closing:
            made.append(Closing(name, fails))
            return made[-1]
        return make

    router = EngineRouter(QueueProfile(ENGINE_WARM, BASE), {"b": QueueProfile(ENGINE_COLD, BASE)},
                          {ENGINE_WARM: factory(ENGINE_WARM, fails=True),
                           ENGINE_COLD: factory(ENGINE_COLD)})
    router.engine_for(make_table())
    router.engine_for(replace(make_table(), queue="b"))
    router.close()
    assert [(e.name, e.closes) for e in made] == [(ENGINE_WARM, 1), (ENGINE_COLD, 1)]
    router.close()  # the engines were handed over once: a second close closes nothing again
    assert [e.closes for e in made] == [1, 1]
