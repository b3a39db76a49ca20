"""Finds table-format plugins through the ``tms.formats`` entry-point group."""

from __future__ import annotations

from functools import cache
from importlib.metadata import entry_points

from tms.formats.base import TableFormatPlugin

FORMATS_GROUP = "tms.formats"


@cache
def load_formats() -> dict[str, TableFormatPlugin]:
    """Instantiate every installed format plugin once per process, keyed by its name."""
    out: dict[str, TableFormatPlugin] = {}
    for ep in entry_points(group=FORMATS_GROUP):
        cls = ep.load()
        plugin = cls()
        if not isinstance(plugin, TableFormatPlugin):
            raise TypeError(f"entry point {ep.name!r} is not a TableFormatPlugin")
        out[plugin.name or ep.name] = plugin
    return out
