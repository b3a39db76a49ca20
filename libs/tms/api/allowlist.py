"""The operator's outer bound on where tables may live (``--allowed-locations``).

Catalogs are resources with their own allowed locations; this bound is the API node's own
limit around all of them: a catalog's allowed locations must lie inside it (CreateCatalog /
UpdateCatalog), and every table's real location is checked against it at registration too.
Locations are compared with the one normaliser, :mod:`tms.locations` (decoded once,
symlinks resolved, whole path segments).
"""

from __future__ import annotations

from dataclasses import dataclass

from tms import locations


@dataclass(frozen=True)
class RegistrationAllowlist:
    locations: tuple[str, ...] = ()  # empty: no bound beyond each catalog's own

    def check(self, location: str) -> str | None:
        """Why ``location`` is outside the bound; None when it is inside (or no bound)."""
        if not self.locations:
            return None
        try:
            locations.check(location, self.locations)
        except locations.LocationError as e:
            return f"outside the API's --allowed-locations: {e}"
        return None
