"""The console's pure parts: the sealed session cookie, CSRF, inert text, SVG charts, form
parsing and the vendored asset pin."""

from __future__ import annotations

import hashlib

import pytest

from tms.console import assets, charts, forms, text
from tms.console.session import (
    KEY_BYTES,
    SessionCodec,
    SessionKeyError,
    csrf_matches,
    load_key,
    token_problem,
)
from tms.console.web import safe_next


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_session_round_trip_hides_the_token_and_expires() -> None:
    clock = Clock()
    codec = SessionCodec(b"k" * KEY_BYTES, ttl_s=60, clock=clock)
    cookie, session = codec.seal("secret-token")
    assert "secret-token" not in cookie
    opened = codec.open(cookie)
    assert opened is not None and opened.token == "secret-token"
    assert session.expires_at == clock.now + 60
    clock.now += 61
    assert codec.open(cookie) is None


def test_session_refuses_tampering_and_other_keys() -> None:
    codec = SessionCodec(b"k" * KEY_BYTES)
    cookie, _ = codec.seal("t")
    flipped = cookie[:-3] + ("A" if cookie[-3] != "A" else "B") + cookie[-2:]
    assert codec.open(flipped) is None
    assert SessionCodec(b"o" * KEY_BYTES).open(cookie) is None
    assert codec.open("") is None and codec.open("%%%") is None


def test_session_key_file_forms(tmp_path) -> None:
    raw = bytes(range(KEY_BYTES))
    for content in (raw, raw.hex().encode(), __import__("base64").b64encode(raw)):
        f = tmp_path / "key"
        f.write_bytes(content)
        assert load_key(f) == raw
    f.write_bytes(b"short")
    with pytest.raises(SessionKeyError):
        load_key(f)
    assert len(load_key(None)) == KEY_BYTES


def test_csrf_and_token_checks() -> None:
    assert csrf_matches("abc", "abc")
    assert not csrf_matches("abc", "abd") and not csrf_matches(None, "x")
    assert not csrf_matches("", "")
    assert token_problem("") and token_problem("a b") and token_problem("x" * 5000)
    assert token_problem("é") and token_problem("ok-token") is None


def test_next_stays_on_the_console() -> None:
    assert safe_next("/tables?x=1") == "/tables?x=1"
    for bad in ("//evil.example/", "https://evil.example/", "javascript:alert(1)", "/\\evil",
                None, ""):
        assert safe_next(bad) == "/"


def test_visible_shows_direction_and_invisible_characters() -> None:
    assert text.visible("a\u202eb") == "a<U+202E>b"
    assert text.visible("x\u200by\u2066z\u2069") == "x<U+200B>y<U+2066>z<U+2069>"
    assert text.visible("line\nnext") == "line\nnext"
    assert text.visible("n" * 100, cut=10) == "n" * 10 + "… (100 chars)"
    assert text.lookalike("p\u0430yments") and not text.lookalike("payments")
    assert not text.lookalike("платежи")  # one script throughout is not a lookalike


def test_charts_escape_labels_and_draw_markers() -> None:
    svg = charts.trend("<script>", [(0, 1), (10, 5)],
                       [charts.Marker(5, '"><img src=x>', False)])
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    assert "<img" not in svg and "marker bad" in svg
    assert "style=" not in svg  # colours come from the stylesheet (CSP)
    bars = charts.bars([("<b>p</b>", 10, 4)])
    assert "<b>" not in bars and "&lt;b&gt;" in bars
    assert "no figures" in charts.trend("x", [])


def test_forms_parse_strictly() -> None:
    p: forms.Problems = {}
    assert forms.integer(p, "n", "12", 0, 100) == 12
    assert forms.integer(p, "m", "١٢", 0, 100) is None and "m" in p  # Arabic-Indic digits
    assert forms.integer(p, "k", "101", 0, 100) is None and "k" in p
    p = {}
    assert forms.params(p, "params", "a=1\n\nb.c=x=y") == {"a": "1", "b.c": "x=y"}
    assert forms.params(p, "params", "a=1\na=2") == {} and "twice" in p["params"]
    p = {}
    assert forms.params(p, "params", "<script>") == {} and "line 1" in p["params"]
    p = {}
    assert forms.time(p, "t", "2026-11-28T03:00") is not None and not p
    assert forms.time(p, "t", "yesterday") is None and "t" in p
    assert forms.violation_field("params[target-file-size-bytes]") == "params"


def test_vendored_htmx_is_the_pinned_bytes() -> None:
    assert assets.check() == []
    data = (assets.STATIC_DIR / assets.HTMX.path).read_bytes()
    assert hashlib.sha256(data).hexdigest() == assets.HTMX.sha256


def test_progress_reads_the_stages_of_a_running_operation() -> None:
    from google.protobuf.struct_pb2 import Struct

    from tms.console.pages_operations import progress
    from tms.v1 import tms_pb2

    op = tms_pb2.Operation(state=tms_pb2.Operation.RUNNING)
    assert progress(op) == []
    s = Struct()
    s.update({"stages": [{"id": 3, "name": "<b>rewrite</b>", "tasks": 8, "completed": 9,
                          "active": 2, "failed": -1}, "junk"], "sampled_at": "now"})
    op.progress.CopyFrom(s)
    assert progress(op) == [{"id": 3, "name": "<b>rewrite</b>", "tasks": 8, "completed": 8,
                             "active": 2, "failed": 0}]
