"""The arrow path's own column metrics (``tms.jobs.arrow_metrics``): what the task counts and
how the driver lays it over the footer's metrics as Iceberg's writer would have them. What
Iceberg's Spark writer records for the same rows is checked against real Spark by the
differential test (``tests/integration/test_rewrite_differential.py``)."""

from __future__ import annotations

import math
import struct

import pyarrow as pa

from tms.jobs import arrow_metrics

NAN, INF = float("nan"), float("inf")
COLUMNS = [(1, "id", "long", True), (2, "x", "double", False), (3, "y", "float", False),
           (4, "s", "string", False), (5, "b", "binary", False)]


def _table(x: list[float | None], y: list[float | None], s: list[str | None],
           b: list[bytes | None]) -> pa.Table:
    return pa.table({"id": list(range(len(x))), "x": pa.array(x, pa.float64()),
                     "y": pa.array(y, pa.float32()), "s": pa.array(s, pa.string()),
                     "b": pa.array(b, pa.binary())})


def test_nan_is_counted_and_kept_out_of_the_bounds() -> None:
    c = arrow_metrics.Collector(COLUMNS)
    c.add(_table([2784.0, NAN, None], [NAN, NAN, None], ["b", None, "a"], [b"", None, b"z"]))
    got = c.result()
    assert set(got) == {"2", "3", "4", "5"}  # the long column is the footer's
    assert got["2"] == {"nulls": 1, "nans": 1, "lower": 2784.0, "upper": 2784.0}
    assert got["3"] == {"nulls": 1, "nans": 2, "lower": None, "upper": None}  # only NaN
    assert got["4"]["lower"] == "a" and got["4"]["upper"] == "b" and got["4"]["nulls"] == 1
    assert got["5"]["lower"] == b"" and got["5"]["upper"] == b"z"


def test_signed_zeros_and_infinities_order_as_java_does() -> None:
    c = arrow_metrics.Collector(COLUMNS)
    c.add(_table([0.0, 1.0], [0.0, None], ["", ""], [b"a", b"a"]))
    c.add(_table([-0.0, -INF], [-0.0, INF], ["", ""], [b"a", b"a"]))
    got = c.result()
    assert got["2"]["lower"] == -INF and got["2"]["upper"] == 1.0
    lo, hi = got["3"]["lower"], got["3"]["upper"]
    assert lo == 0.0 and math.copysign(1.0, lo) < 0 and hi == INF  # -0.0 below 0.0
    only_zeros = arrow_metrics.Collector(COLUMNS)
    only_zeros.add(_table([0.0, -0.0], [-0.0, -0.0], ["", ""], [b"", b""]))
    z = only_zeros.result()
    assert math.copysign(1.0, z["2"]["lower"]) < 0 and math.copysign(1.0, z["2"]["upper"]) > 0
    assert math.copysign(1.0, z["3"]["upper"]) < 0  # no +0.0 there: the max is -0.0


def test_icebergs_truncation() -> None:
    assert arrow_metrics.truncate_string_max("abc", 16) == "abc"
    assert arrow_metrics.truncate_string_max("a" * 20, 16) == "a" * 15 + "b"
    assert arrow_metrics.truncate_string_max("é" * 20, 2) == "éê"  # code points, not bytes
    assert arrow_metrics.truncate_string_max("a\U0010ffff\U0010ffffz", 3) == "b"
    assert arrow_metrics.truncate_string_max("\ud7ff" * 3, 2) == "\ud7ff\ue000"  # no surrogate
    assert arrow_metrics.truncate_string_max("\U0010ffff" * 3, 2) is None
    assert arrow_metrics.truncate_binary_max(b"\x01\xff\xff\x00", 3) == b"\x02"
    assert arrow_metrics.truncate_binary_max(b"\xff" * 4, 3) is None
    assert arrow_metrics.bounds("string", "truncate(2)", "abc", "abc") == ("ab", "ac")
    assert arrow_metrics.bounds("string", "full", "abc", "abd") == ("abc", "abd")
    assert arrow_metrics.bounds("double", "truncate(2)", 1.5, 2.5) == (1.5, 2.5)
    assert arrow_metrics.bounds("double", "counts", 1.5, 2.5) == (None, None)


def _hex(fmt: str, v: float) -> str:
    return struct.pack(fmt, v).hex().upper()


def test_overlay_sets_counts_and_bounds_by_metrics_mode() -> None:
    doc = {"record-count": 3,
           "value-counts": {"keys": [1, 4], "values": [3, 3]},
           "null-value-counts": {"keys": [1, 4], "values": [0, 1]},
           "lower-bounds": {"keys": [1, 4], "values": ["00", "61"]},
           "upper-bounds": {"keys": [1, 4], "values": ["01", "62"]}}
    computed = {"2": {"nulls": 1, "nans": 1, "lower": -0.0, "upper": 2784.0},
                "3": {"nulls": 0, "nans": 3, "lower": None, "upper": None},
                "4": {"nulls": 1, "nans": 0, "lower": "a" * 20, "upper": "z" * 20}}
    types = {1: "long", 2: "double", 3: "float", 4: "string"}
    modes = {1: "truncate(16)", 2: "truncate(16)", 3: "counts", 4: "truncate(16)"}
    out = arrow_metrics.overlay(dict(doc), computed, types, modes)
    assert out["null-value-counts"] == {"keys": [1, 2, 3, 4], "values": [0, 1, 0, 1]}
    assert out["nan-value-counts"] == {"keys": [2, 3], "values": [1, 3]}
    assert out["value-counts"] == {"keys": [1, 2, 3, 4], "values": [3, 3, 3, 3]}
    assert out["lower-bounds"]["keys"] == [1, 2, 4]
    assert out["lower-bounds"]["values"][1] == _hex("<d", -0.0)
    assert out["upper-bounds"]["values"][1] == _hex("<d", 2784.0)
    assert bytes.fromhex(out["lower-bounds"]["values"][2]) == b"a" * 16
    assert bytes.fromhex(out["upper-bounds"]["values"][2]) == b"z" * 15 + b"{"
    none = arrow_metrics.overlay(dict(doc), {"4": computed["4"]}, types, {4: "none"})
    assert none["null-value-counts"] == {"keys": [1], "values": [0]}
    assert none["lower-bounds"]["keys"] == [1] and "nan-value-counts" not in none
