"""A Hudi instant time as writers name their commits: ``yyyyMMddHHmmss`` (Hudi before 0.10)
or ``yyyyMMddHHmmssSSS`` (milliseconds), digits only, a date and time that exists."""

from __future__ import annotations

import re
from datetime import datetime

_INSTANT_RE = re.compile(r"[0-9]{14}(?:[0-9]{3})?")


def instant_time(text: str) -> datetime | None:
    """The (naive) date and time ``text`` names, or None when it is no instant time (wrong
    length, anything but ASCII digits, a month 13 or a February 30th)."""
    if not _INSTANT_RE.fullmatch(text):
        return None
    try:
        return datetime(int(text[0:4]), int(text[4:6]), int(text[6:8]), int(text[8:10]),
                        int(text[10:12]), int(text[12:14]),
                        int(text[14:17]) * 1000 if len(text) == 17 else 0)
    except ValueError:
        return None
