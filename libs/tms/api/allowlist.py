"""Where tables may be registered: an allowlist of catalog names and of location prefixes.

Locations are compared after percent-decoding and normalisation, on whole path segments, and
any ``..`` segment is refused outright, so ``s3://lake/ok/../secret`` or ``s3://lake/ok-evil``
cannot pass for ``s3://lake/ok``.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from urllib.parse import unquote

from tms.domain import TableSpec

_SCHEME_RE = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*://[^/]*)(.*)$")


def normalize_location(location: str) -> str | None:
    """A comparable form of ``location``; None when it tries to climb out (``..``)."""
    decoded = unquote(location)
    m = _SCHEME_RE.match(decoded)
    head, path = (m.group(1).lower(), m.group(2)) if m else ("", decoded)
    if any(seg == ".." for seg in re.split(r"[/\\]", path)):
        return None
    norm = posixpath.normpath(path) if path else ""
    if norm == ".":
        norm = ""
    return head + norm.rstrip("/")


def under(location: str, prefix: str) -> bool:
    loc, pre = normalize_location(location), normalize_location(prefix)
    if loc is None or pre is None:
        return False
    return loc == pre or loc.startswith(pre + "/") or (pre.endswith(":/") and
                                                       loc.startswith(pre))


@dataclass(frozen=True)
class RegistrationAllowlist:
    catalogs: frozenset[str] = frozenset()  # empty: any catalog
    locations: tuple[str, ...] = ()  # empty: any location

    def check(self, spec: TableSpec) -> list[tuple[str, str]]:
        """(field, problem) for each place the spec leaves the allowlist."""
        problems = []
        if self.catalogs and spec.catalog and spec.catalog not in self.catalogs:
            problems.append(("table.catalog", f"catalog {spec.catalog!r} is not allowed"))
        if self.locations:
            for field, value in (("table.base_path", spec.base_path),
                                 ("table.catalog_properties[warehouse]",
                                  spec.catalog_properties.get("warehouse", ""))):
                if value and not any(under(value, p) for p in self.locations):
                    problems.append((field, f"{value[:200]!r} is outside the allowed "
                                            "locations"))
        return problems
