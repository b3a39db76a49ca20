"""PySpark application that runs one Iceberg maintenance action and writes the outcome as JSON.

spark-submit runs this file directly (``spark-submit ... iceberg_maintenance.py --spec S --result
R``), so it imports nothing but pyspark and the standard library: it must also work when shipped
alone to a cluster. The spec names the catalog exactly as the TMS side (pyiceberg) names it,
because Iceberg's JDBC catalog keys its rows by catalog name: a different name would see no tables.

Table names and options come from users, so they reach SQL only as validated identifiers or
escaped string literals. The result file is always written, success or not, so the caller never
has to scrape Spark's log output; exit status is 0 on success and 1 on failure.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

MAX_ERROR_CHARS = 4000
SPARK_CATALOG_CLASS = "org.apache.iceberg.spark.SparkCatalog"
ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
JDBC_CATALOG_IMPL = "org.apache.iceberg.jdbc.JdbcCatalog"

_CATALOG_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_IDENT_PART_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_\-]{0,254}$")
_OPTION_KEY_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,200}$")
_PROPERTY_KEY_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,200}$")
_SQLALCHEMY_PG_SCHEMES = ("postgresql", "postgresql+psycopg", "postgresql+psycopg2")


class SpecError(ValueError):
    """The job spec is malformed or unsafe; nothing was run."""


@dataclass(frozen=True)
class JobSpec:
    catalog_name: str
    catalog_properties: dict[str, str]
    table: tuple[str, ...]  # namespace parts + table name
    action: str
    options: dict[str, str] = field(default_factory=dict)

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


def parse_spec(data: Any) -> JobSpec:
    if not isinstance(data, dict):
        raise SpecError("spec must be a JSON object")
    catalog_name = data.get("catalog_name")
    if not isinstance(catalog_name, str) or not _CATALOG_NAME_RE.fullmatch(catalog_name):
        raise SpecError(f"invalid catalog_name {catalog_name!r}")
    props = data.get("catalog_properties", {})
    if not isinstance(props, dict):
        raise SpecError("catalog_properties must be an object")
    action = data.get("action")
    if not isinstance(action, str) or action not in ACTIONS:
        raise SpecError(f"unknown action {action!r}; known: {sorted(ACTIONS)}")
    options = data.get("options") or {}
    if not isinstance(options, dict):
        raise SpecError("options must be an object")
    for key in options:
        if not _OPTION_KEY_RE.fullmatch(key):
            raise SpecError(f"invalid option name {key[:200]!r}")
    return JobSpec(
        catalog_name=catalog_name,
        catalog_properties={str(k): _option_value(str(k), v) for k, v in props.items()},
        table=parse_table(data.get("table")),
        action=action,
        options={k: _option_value(k, v) for k, v in options.items()},
    )


def _sql_catalog_to_jdbc(props: Mapping[str, str]) -> dict[str, str]:
    """Map pyiceberg's SqlCatalog properties onto Iceberg's JdbcCatalog.

    Both store tables in the same ``iceberg_tables`` rows, so a table pyiceberg created is the
    table Spark compacts. pyiceberg takes a SQLAlchemy URL, Iceberg a JDBC URL plus credentials.
    """
    out = {k: v for k, v in props.items() if k not in ("type", "uri")}
    url = urlsplit(props.get("uri", ""))
    if url.scheme not in _SQLALCHEMY_PG_SCHEMES or not url.hostname:
        raise SpecError("catalog type 'sql' is supported only with a postgresql:// uri "
                        f"(got scheme {url.scheme!r})")
    host = f"[{url.hostname}]" if ":" in url.hostname else url.hostname
    port = f":{url.port}" if url.port else ""
    query = f"?{url.query}" if url.query else ""
    out["catalog-impl"] = JDBC_CATALOG_IMPL
    out["uri"] = f"jdbc:postgresql://{host}{port}{url.path}{query}"
    if url.username:
        out["jdbc.user"] = unquote(url.username)
    if url.password is not None:
        out["jdbc.password"] = unquote(url.password)
    return out


def catalog_conf(name: str, props: Mapping[str, str]) -> dict[str, str]:
    """Spark conf registering catalog ``name`` with the given Iceberg catalog properties."""
    if props.get("type") == "sql":
        props = _sql_catalog_to_jdbc(props)
    conf = {f"spark.sql.catalog.{name}": SPARK_CATALOG_CLASS}
    for key, value in props.items():
        if not _PROPERTY_KEY_RE.fullmatch(key):
            raise SpecError(f"invalid catalog property name {key[:200]!r}")
        conf[f"spark.sql.catalog.{name}.{key}"] = value
    return conf


def _row_dict(row: Any) -> dict[str, Any]:
    return dict(row.asDict(recursive=True))


def run_compaction(spark: Any, spec: JobSpec) -> dict[str, Any]:
    """Bin-pack small data files (``rewrite_data_files``, strategy binpack)."""
    args = [f"table => {sql_string(spec.table_ref)}", "strategy => 'binpack'"]
    if spec.options:
        pairs = ", ".join(f"{sql_string(k)}, {sql_string(v)}" for k, v in spec.options.items())
        args.append(f"options => map({pairs})")
    rows = spark.sql(
        f"CALL {quote_ident(spec.catalog_name)}.system.rewrite_data_files({', '.join(args)})"
    ).collect()
    return _row_dict(rows[0]) if rows else {}


Action = Callable[[Any, JobSpec], dict[str, Any]]
ACTIONS: dict[str, Action] = {
    "compaction": run_compaction,
}


def build_session(spec: JobSpec) -> Any:
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.appName(f"tms-{spec.action}-{'.'.join(spec.table)}")
        .config("spark.sql.extensions", ICEBERG_EXTENSIONS)
        .config("spark.sql.parser.escapedStringLiterals", "false")
    )
    for key, value in catalog_conf(spec.catalog_name, spec.catalog_properties).items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def run(spec: JobSpec) -> dict[str, Any]:
    spark = build_session(spec)
    try:
        spark.sql(f"REFRESH TABLE {spec.qualified_table}")
        result = ACTIONS[spec.action](spark, spec)
        return {"ok": True, "action": spec.action, "result": result,
                "spark_app_id": spark.sparkContext.applicationId}
    finally:
        spark.stop()


def describe_error(exc: BaseException) -> tuple[str, str]:
    """(type, message) for the result file, preferring the JVM exception behind a Py4J error."""
    java_exc = getattr(exc, "java_exception", None)
    if java_exc is not None:
        try:
            return str(java_exc.getClass().getName()), str(java_exc.toString())
        except Exception:  # the JVM may already be gone
            pass
    message = str(exc) or traceback.format_exception_only(type(exc), exc)[-1].strip()
    return type(exc).__name__, message


def write_result(path: Path, payload: dict[str, Any]) -> None:
    """Write atomically so a reader never sees half a result."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(payload, f, default=str)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run one Iceberg maintenance action.")
    parser.add_argument("--spec", type=Path, required=True, help="job spec JSON file")
    parser.add_argument("--result", type=Path, required=True, help="where to write result JSON")
    args = parser.parse_args(argv)
    try:
        spec = parse_spec(json.loads(args.spec.read_text()))
        payload = run(spec)
    except Exception as exc:
        error_type, message = describe_error(exc)
        print(f"[tms-job] {error_type}: {message[:MAX_ERROR_CHARS]}", file=sys.stderr)
        payload = {"ok": False, "error_type": error_type, "error": message[:MAX_ERROR_CHARS]}
    write_result(args.result, payload)
    return 0 if payload["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
