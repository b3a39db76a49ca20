"""The table-format plugin interface (the counterpart of Amoro's ProcessFactory and trigger
strategy): a plugin names its actions, inspects a table from metadata only, turns the metrics
into decisions with reasons, and builds the job an engine runs.

Plugins are found through the ``tms.formats`` entry-point group, so a third party adds a format
by shipping a distribution, without touching TMS.
"""

from __future__ import annotations

import abc
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from tms.domain import CatalogType, Decision, JobSpec, Operation, Table, TableSpec
from tms.policy.bounds import Bound, bound_problems
from tms.policy.common import COMMON_KEYS, validate_policy
from tms.policy.schema import PolicyKey, check_values

if TYPE_CHECKING:
    from tms.catalogs import CatalogAccess


class TableNotInCatalog(LookupError):
    """The catalog does not hold the table (dropped, renamed, or never created)."""


class CatalogUnreachable(ConnectionError):
    """The catalog could not be asked (down, network, refused login). Transient as far as
    TMS can tell; the message never carries a secret (see CatalogAccess.scrub)."""


@dataclass(frozen=True)
class DiscoveredTable:
    """A table found by listing a catalog: Iceberg tables by identifier, path-based tables
    (Hudi) by base path."""

    namespace: str
    table_name: str
    base_path: str = ""


class TableFormatPlugin(abc.ABC):
    """One table format. Instances are shared between threads: keep them stateless.

    ``policy_keys`` are the format's own policy keys and ``action_params`` the parameters an
    operation of each action may carry (what its policies emit and what a trigger may give),
    both declared with the schema's types (``tms.policy.schema``): the API refuses anything
    else, and docs/policy.md, the CLI and ExplainTable show them."""

    name: str = ""
    actions: tuple[str, ...] = ()
    policy_keys: Mapping[str, PolicyKey] = {}
    action_params: Mapping[str, Mapping[str, PolicyKey]] = {}
    # Ordering: an operation of the key's action, queued by policy, is not claimed while an
    # operation of one of the listed actions of the same table is QUEUED or RUNNING (that
    # one may do its work: a compaction rewrites the manifests), and is re-checked when it
    # runs (see recheck).
    waits_for: Mapping[str, tuple[str, ...]] = {}
    # numeric policy keys (and parameters, per action) that must be ordered (tms.policy.bounds)
    policy_bounds: tuple[Bound, ...] = ()
    param_bounds: Mapping[str, tuple[Bound, ...]] = {}

    def check_policy(self, policy: Mapping[str, str], field: str = "table.policy"
                     ) -> list[tuple[str, str]]:
        """Unknown keys and bad values of a table's policy, against the schema; then its
        pairs of keys out of order (over the schema's defaults)."""
        return validate_policy(self.policy_keys, policy, field) or self.check_policy_in_force(
            policy, {}, field)

    def check_policy_in_force(self, table_policy: Mapping[str, str],
                              catalog_policy: Mapping[str, str], field: str = "table.policy",
                              blame: str = "table policy") -> list[tuple[str, str]]:
        """Pairs of keys out of order in the policy a table is maintained with (its own over
        its catalog's default over the schema's), reported when the layer ``blame`` ("table
        policy" or "catalog default policy") sets one of the pair."""
        return bound_problems({**COMMON_KEYS, **self.policy_keys}, self.policy_bounds,
                              [("table policy", table_policy),
                               ("catalog default policy", catalog_policy)], field, blame)

    def check_params(self, action: str, params: Mapping[str, str], field: str = "params"
                     ) -> list[tuple[str, str]]:
        """Unknown and bad parameters of an operation of ``action``, then pairs of them out
        of order."""
        keys = self.action_params.get(action, {})
        return check_values(keys, params, field, f"unknown parameter of {action}",
                            full_list=f"tms tables policy-keys --format {self.name}") or \
            bound_problems(keys, self.param_bounds.get(action, ()), [("request", params)], field)

    def check_commit_id(self, commit_id: str) -> str | None:
        """What is wrong with ``commit_id`` as a commit of a table of this format (a writer's
        notification), or None when it is one the format can have. Called at the rate of
        NotifyCommit: cheap, no I/O. The default accepts any id the API's shape checks
        passed (a format that cannot tell refuses nothing)."""
        return None

    def check_trigger(self, table: Table, action: str, params: Mapping[str, str],
                      policy: Mapping[str, str], catalog: CatalogAccess | None
                      ) -> tuple[list[tuple[str, str]], dict[str, str]]:
        """Before a triggered operation is queued: problems with ``params`` given the
        table's state and ``policy`` in force ((field, problem) pairs, the request then
        refused with INVALID_ARGUMENT), and parameters to add from the policy (what the
        operation would otherwise miss at run time). ``catalog`` opens the table's catalog
        (None when the API cannot); raises CatalogUnreachable or TableNotInCatalog when it
        must and cannot look. The default finds nothing to add or refuse."""
        return [], {}
    # the catalog types this format's tables live in (empty: any)
    catalog_types: tuple[CatalogType, ...] = ()

    def catalog_property_problems(self, properties: Mapping[str, str],
                                  secrets: Mapping[str, str], field: str
                                  ) -> list[tuple[str, str]]:
        """(field path, problem) for the catalog properties and secrets (references) this
        format reads, checked against its own schema when a catalog is created or updated;
        keys it does not own are not its business (the default owns none)."""
        return []

    def owns_catalog_property(self, key: str) -> bool:
        """Whether ``key`` is a catalog property this format checks against its own schema:
        its name may then look secret to the generic rule (``...lock_key``) while its value
        is checked by :meth:`catalog_property_problems` (the default owns none)."""
        return False

    def validate(self, spec: TableSpec) -> list[tuple[str, str]]:
        """Format-specific checks of a registration: (field path, problem) pairs."""
        return []

    def locate(self, table: Table, catalog: CatalogAccess) -> str:
        """The table's real location as its catalog reports it (Iceberg: the table
        metadata's ``location``; Hudi: the base path), unchecked: callers check it against
        the catalog's allowed locations with :mod:`tms.locations`. Raises
        TableNotInCatalog when the catalog does not hold the table, CatalogUnreachable when
        the catalog cannot be asked."""
        raise NotImplementedError(f"format {self.name!r} cannot locate its tables")

    def located_state(self, table: Table, catalog: CatalogAccess) -> str | None:
        """What the location :meth:`locate` just returned on this thread was read from, when
        the plugin can name it and it cannot change without that name changing (Iceberg: the
        table's current metadata file, never rewritten). The scheduler then checks a location
        read from the same state again only where it is used (``build_job``, the job), not at
        every decision. None (the default): unknown, the location is checked every time."""
        return None

    def boundary_roots(self, table: Table, catalog: CatalogAccess
                       ) -> list[tuple[str, str]]:
        """Roots other tables are made under, which the table's location may not equal or
        contain (``tms.table_boundary``): (what, raw location) pairs. The default: the
        catalog's ``warehouse`` property, when it names one."""
        warehouse = catalog.properties.get("warehouse", "")
        return [(f"catalogs/{catalog.catalog_id}'s warehouse", warehouse)] if warehouse else []

    def boundary_own(self, table: Table, catalog: CatalogAccess
                     ) -> tuple[tuple[str, ...], bool]:
        """What under the table's location is its own for the boundary's scan: extra
        metadata directories (raw locations) besides ``<location>/metadata``, and whether
        ``<location>/.hoodie`` is the table's own (Hudi). The default: none, no."""
        return (), False

    def prepare(self, tables: Sequence[Table], catalog: CatalogAccess
                ) -> Collection[int] | None:
        """A batch of ``catalog``'s tables is about to be decided: a plugin may look them up
        in one catalog call here rather than one per table (Iceberg: their current metadata
        locations), and returns the pks of those it expects to decide without waiting on
        I/O (unchanged since the last look): the scheduler decides them first, in its own
        thread. Best effort: on any error the scheduler logs it and each table's own calls
        still decide (the default does nothing)."""
        return None

    def discover(self, catalog: CatalogAccess) -> list[DiscoveredTable]:
        """Every table the catalog holds (for catalog discovery)."""
        raise NotImplementedError(f"format {self.name!r} cannot list a catalog's tables")

    @abc.abstractmethod
    def inspect(self, table: Table, catalog: CatalogAccess) -> dict[str, Any]:
        """Metrics read from the table's metadata only (never a Spark job). Called after
        :meth:`locate` and the location checks passed (``table.location`` is the checked
        location)."""

    @abc.abstractmethod
    def evaluate(self, table: Table, metrics: Mapping[str, Any],
                 last_runs: Mapping[str, Operation | None], now: datetime
                 ) -> list[Decision]:
        """One decision per action, each with a reason a person can read."""

    @abc.abstractmethod
    def build_job(self, table: Table, catalog: CatalogAccess, operation: Operation) -> JobSpec:
        """The job that carries out ``operation``. It may touch only ``table.location``
        inside ``catalog.allowed_locations``; a ValueError (tms.secrets.SecretError, a
        LocationError) is bad configuration, never retried."""

    def unchanged_since(self, table: Table, metrics: Mapping[str, Any], decision: Decision,
                        last: Operation | None) -> str | None:
        """Why ``decision`` (to run) should not be queued: the last identical run (``last``,
        the action's last SUCCEEDED operation) changed nothing and the table has not changed
        since (e.g. its current snapshot is the one that run left). The scheduler then queues
        nothing and shows this reason until the table changes. None: no hold (the default:
        a plugin that cannot tell holds nothing back)."""
        return None

    def recheck(self, table: Table, catalog: CatalogAccess, operation: Operation
                ) -> str | None:
        """Right before a policy-queued ``operation`` runs: is its decision still true of the
        table as it is now? Cheap (metadata only). A reason when it no longer holds (the
        operation then ends SKIPPED with it, never run); None when it still does, and by
        default (a plugin that cannot tell runs everything it queued)."""
        return None
