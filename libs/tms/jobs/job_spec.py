"""A maintenance job's spec, checked: every name, reference and location before anything
runs, so only a ``MaintenanceRequest`` reaches SQL (``procedures.py`` then checks the action's
options). Table names and options come from users: they reach SQL only as validated
identifiers (``quote_ident``) or escaped string literals (``sql_string``).

Imports only the standard library and the job's package.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from tms.jobs import arrow_eligibility, report
from tms.locations import LocationError, parse
from tms.secrets import SecretError, parse_ref, resolve_all

_CATALOG_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_IDENT_PART_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_\-]{0,254}$")
_OPTION_KEY_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,200}$")
MAX_ALLOWED_LOCATIONS = 100
_SECRET_KEY_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,199}$")  # a property's name
DATA_PATHS = ("auto", "spark")  # a compaction's data path (arrow_rewrite)


class SpecError(ValueError):
    """The job spec is malformed or unsafe; nothing was run."""


@dataclass(frozen=True)
class MaintenanceRequest:
    """A validated spec inside the job: the engine's ``JobSpec.spec`` (plain JSON from TMS)
    after ``parse_spec`` checked every name and option, so only this reaches SQL."""

    catalog_name: str
    catalog_properties: dict[str, str]
    table: tuple[str, ...]  # namespace parts + table name
    action: str
    options: dict[str, str] = field(default_factory=dict)
    # required in a spec (parse_allowed_locations); None only where a caller builds a request
    # itself for a table it checked already
    allowed_locations: tuple[str, ...] | None = None
    # property -> secret reference (env:TMS_SECRET_* / file:<name>), resolved in the driver
    catalog_secrets: dict[str, str] = field(default_factory=dict)
    report: dict[str, Any] | None = None  # where to report the result (else a result file)
    # the operator's choice of a compaction's data path: "auto" (arrow when eligible) or
    # "spark" (always Spark's); an executor or bench setting, never a table owner's option
    data_path: str = "auto"
    # the table location the scheduler checked (against the allowed locations and every other
    # registered table's) when it decided; None: an older producer's spec
    location: str | None = None

    def resolved_properties(self) -> dict[str, str]:
        """The catalog's properties with its secrets resolved here, in the driver (the spec
        itself carries references only: it travels on a command line)."""
        return {**self.catalog_properties, **resolve_all(self.catalog_secrets)}

    @property
    def table_ref(self) -> str:
        """The table as a Spark multipart identifier inside this job's catalog."""
        return ".".join(quote_ident(p) for p in self.table)

    @property
    def qualified_table(self) -> str:
        return f"{quote_ident(self.catalog_name)}.{self.table_ref}"


def quote_ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def sql_string(value: str) -> str:
    """A Spark SQL string literal for ``value``.

    Spark's parser treats backslash as an escape and reads ``'a''b'`` as two adjacent literals
    (concatenated to ``ab``), so SQL-standard quote doubling would silently drop quotes; escaping
    backslashes and quotes with a backslash is what round-trips. The session pins
    ``spark.sql.parser.escapedStringLiterals=false`` so this stays true.
    """
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _option_value(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    raise SpecError(f"option {key!r}: expected a string or number, got {type(value).__name__}")


def parse_table(raw: Any) -> tuple[str, ...]:
    if not isinstance(raw, str):
        raise SpecError("table must be a string 'namespace.name'")
    parts = tuple(raw.split("."))
    if len(parts) < 2 or not all(_IDENT_PART_RE.fullmatch(p) for p in parts):
        raise SpecError(f"invalid table identifier {raw[:200]!r}: expected namespace.name")
    return parts


def parse_allowed_locations(raw: Any) -> tuple[str, ...]:
    """The spec's ``allowed_locations``, required: a list of locations the normaliser accepts
    (an empty list allows nothing). A spec without them is refused: a job never runs on a
    table it cannot check is where its catalog allows it."""
    if raw is None:
        raise SpecError("allowed_locations is required: the catalog's allowed locations, "
                        "which the table's location must lie inside")
    if not isinstance(raw, list) or len(raw) > MAX_ALLOWED_LOCATIONS:
        raise SpecError(f"allowed_locations must be a list of at most {MAX_ALLOWED_LOCATIONS} "
                        "locations")
    for item in raw:
        if not isinstance(item, str):
            raise SpecError("allowed_locations must hold strings")
        try:
            parse(item)
        except LocationError as e:
            raise SpecError(f"allowed_locations: {e}") from None
    return tuple(raw)


def parse_data_path(raw: Any) -> str:
    if raw is None:
        return "auto"
    if raw not in DATA_PATHS:
        raise SpecError(f"{arrow_eligibility.SPEC_SWITCH} must be one of {', '.join(DATA_PATHS)}")
    return str(raw)


def parse_fields(data: Any, actions: Collection[str]) -> MaintenanceRequest:
    """The spec's fields checked (names, references, locations, the report target); the
    action's own options are its planner's to check (``procedures.parse_spec``)."""
    if not isinstance(data, dict):
        raise SpecError("spec must be a JSON object")
    catalog_name = data.get("catalog_name")
    if not isinstance(catalog_name, str) or not _CATALOG_NAME_RE.fullmatch(catalog_name):
        raise SpecError(f"invalid catalog_name {catalog_name!r}")
    props = data.get("catalog_properties", {})
    if not isinstance(props, dict):
        raise SpecError("catalog_properties must be an object")
    action = data.get("action")
    if not isinstance(action, str) or action not in actions:
        raise SpecError(f"unknown action {action!r}; known: {sorted(actions)}")
    options = data.get("options") or {}
    if not isinstance(options, dict):
        raise SpecError("options must be an object")
    for key in options:
        if not _OPTION_KEY_RE.fullmatch(key):
            raise SpecError(f"invalid option name {key[:200]!r}")
    secrets = data.get("catalog_secrets") or {}
    if not isinstance(secrets, dict):
        raise SpecError("catalog_secrets must be an object")
    for key, ref in secrets.items():
        if not _SECRET_KEY_RE.fullmatch(str(key)) or not isinstance(ref, str):
            raise SpecError(f"invalid catalog_secrets entry {str(key)[:200]!r}")
        try:
            parse_ref(ref)
        except SecretError as e:
            raise SpecError(f"catalog_secrets[{key}]: {e}") from None
    try:
        report_to = report.parse_report(data.get("report"))
    except ValueError as e:
        raise SpecError(str(e)) from None
    spec = MaintenanceRequest(
        catalog_name=catalog_name,
        catalog_properties={str(k): _option_value(str(k), v) for k, v in props.items()},
        table=parse_table(data.get("table")),
        action=action,
        options={k: _option_value(k, v) for k, v in options.items()},
        allowed_locations=parse_allowed_locations(data.get("allowed_locations")),
        catalog_secrets=dict(secrets),
        report=report_to,
        data_path=parse_data_path(data.get(arrow_eligibility.SPEC_SWITCH)),
        location=parse_location(data.get("location")),
    )
    return spec


def parse_location(raw: Any) -> str | None:
    """The spec's checked ``location`` (the normaliser's form), or None when absent."""
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise SpecError("location must be a string")
    try:
        return str(parse(raw, literal=True))
    except LocationError as e:
        raise SpecError(f"location: {e}") from None
