"""The scheduler reads a table's metadata only inside the table's own location.

An Iceberg table's metadata names its manifest list and manifests by full path, and the table's
owner writes it: a snapshot can name another tenant's manifests (in the same warehouse, inside
the catalog's allowed locations), or ``write.metadata.path`` can put this table's metadata in
another table's directory. Inspection would then read that tenant's manifests and show their
file counts, sizes and partition values in this table's decisions (ExplainTable). So the
metadata file and every manifest list and manifest the inspection reads must lie inside the
table's checked location, symlinks followed (the job holds the same rule: ``table_guard``).
"""

from __future__ import annotations

from typing import Any

from tms.locations import Location, LocationError, check_resolved, parse, resolve


class OutsideTable(LocationError):
    """A metadata path of the table lies outside its own location: not read."""


class ConfinedIO:
    """A pyiceberg FileIO that opens for reading only paths inside ``root``."""

    def __init__(self, io: Any, root: Location) -> None:
        self._io, self._root = io, root

    def check(self, path: str, what: str) -> None:
        try:
            check_resolved(str(path), [self._root], literal=True)
        except LocationError as e:
            raise OutsideTable(f"inspection refused: the table's {what} {str(path)[:300]!r} "
                               f"lies outside its own location {str(self._root)!r}: {e}"
                               ) from None

    def new_input(self, location: str) -> Any:
        self.check(location, "metadata names")
        return self._io.new_input(location)


def confined(tbl: Any, table_location: str | None) -> ConfinedIO:
    """``tbl.io`` held to the table's location (the checked one TMS stores, else the one in
    the metadata), after checking the metadata file itself."""
    root = resolve(parse(table_location or str(tbl.metadata.location), literal=True))
    io = ConfinedIO(tbl.io, root)
    io.check(str(tbl.metadata_location), "metadata file")
    return io
