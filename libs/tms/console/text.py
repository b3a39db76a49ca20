"""How values an owner chose are shown: as inert, visible text.

Jinja escapes every value (autoescape); on top of that, characters that change how the text
around them reads (bidirectional overrides and isolates, zero-width characters, other
controls) are shown as ``<U+202E>`` markers, so a name cannot pretend to be another one; a
very long value is cut for lists (the full text stays in the detail page); a value mixing
scripts (``pаyments`` with a Cyrillic ``а``) is flagged by :func:`lookalike`.
"""

from __future__ import annotations

import datetime as dt
import unicodedata

from google.protobuf.timestamp_pb2 import Timestamp

LIST_CUT_CHARS = 80
# Format (Cf) and control (Cc) characters besides tab and newline: bidi overrides, zero-width
# joiners and spaces, BOM, ...
_KEEP = {"\t", "\n"}


def visible(text: object, cut: int | None = None) -> str:
    """``text`` with invisible and direction-changing characters made visible; cut to ``cut``
    characters (with an ellipsis and the full length) when longer."""
    s = "" if text is None else str(text)
    out = []
    for ch in s:
        if ch not in _KEEP and unicodedata.category(ch) in ("Cf", "Cc", "Zl", "Zp"):
            out.append(f"<U+{ord(ch):04X}>")
        else:
            out.append(ch)
    shown = "".join(out)
    if cut is not None and len(shown) > cut:
        return f"{shown[:cut]}… ({len(s)} chars)"
    return shown


def lookalike(text: object) -> bool:
    """True when a letter of ``text`` is not Latin while another is: the mix a spoofed name
    uses (a Cyrillic ``а`` among Latin letters)."""
    scripts = set()
    for ch in str(text or ""):
        if ch.isalpha():
            name = unicodedata.name(ch, "")
            scripts.add(name.split(" ")[0] if name else "?")
    return len(scripts) > 1 and "LATIN" in scripts


def when(ts: Timestamp | None) -> str:
    """A timestamp as ``2026-11-28 03:49:31 UTC``, or an em dash when unset."""
    if ts is None or (ts.seconds == 0 and ts.nanos == 0):
        return "—"
    t = ts.ToDatetime(tzinfo=dt.UTC)
    return t.strftime("%Y-%m-%d %H:%M:%S UTC")


def ago(ts: Timestamp | None, now: dt.datetime | None = None) -> str:
    if ts is None or (ts.seconds == 0 and ts.nanos == 0):
        return "—"
    now = now or dt.datetime.now(dt.UTC)
    return duration((now - ts.ToDatetime(tzinfo=dt.UTC)).total_seconds()) + " ago"


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    s = max(0, int(seconds))
    if s < 120:
        return f"{s} s"
    if s < 7200:
        return f"{s // 60} min"
    if s < 172800:
        return f"{s // 3600} h"
    return f"{s // 86400} d"


def size(n: object) -> str:
    """Bytes in binary units: ``1.5 GiB``."""
    try:
        value = float(n)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "—"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def number(n: object) -> str:
    try:
        value = float(n)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "—" if n in (None, "") else visible(n)
    return f"{int(value):,}" if value == int(value) else f"{value:,.2f}"
