"""The predicate grid of the rewrite differential test (``test_rewrite_differential.py``): one
predicate, three readers. Each predicate is said once, as (column, operator, value), and put
in the words of each reader: an Iceberg expression for pyiceberg (its manifest pruning, then
pyarrow's row-group statistics), Spark SQL (Iceberg's Spark reader, parquet-java's filters)
and DuckDB SQL over the snapshot's data files (DuckDB's own Parquet reader and statistics).
Every answer is the sorted ids of the rows that match.
"""

from __future__ import annotations

import decimal
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

OPS = ("isnull", "notnull", "isnan", "notnan", "eq", "ne", "lt", "le", "gt", "ge", "startswith")
_SQL_OPS = {"eq": "=", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
SPARK_GRID_SCRIPT = """\
import json
import sys
from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()
try:
    queries = json.loads(open(sys.argv[1]).read())
    out = {}
    for key, sql in queries.items():
        out[key] = sorted(r[0] for r in spark.sql(sql).collect())
    with open(sys.argv[2], "w") as f:
        json.dump(out, f)
finally:
    spark.stop()
"""


@dataclass(frozen=True)
class Predicate:
    column: str
    type_name: str  # the Iceberg type
    op: str
    value: Any = None

    @property
    def key(self) -> str:
        return json.dumps([self.column, self.op, _show(self.value)], ensure_ascii=True)


def _show(v: Any) -> Any:
    if isinstance(v, bytes):
        return "0x" + v.hex()
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, date | datetime | decimal.Decimal):
        return str(v)
    if isinstance(v, str) and len(v) > 40:
        return f"{v[:20]}...({len(v)} chars)"
    return v


def grid(columns: Sequence[tuple[str, str]], probes: dict[str, Sequence[Any]]
         ) -> list[Predicate]:
    """Every predicate of the grid: nulls (and NaN for float columns) of each column, and
    each comparison against each of the column's probe values (``startswith`` for strings)."""
    out = []
    for name, t in columns:
        out += [Predicate(name, t, "isnull"), Predicate(name, t, "notnull")]
        if t in ("double", "float"):
            out += [Predicate(name, t, "isnan"), Predicate(name, t, "notnan")]
        for v in probes.get(name, ()):
            ops = ["eq", "ne", "lt", "le", "gt", "ge"] if t != "boolean" else ["eq", "ne"]
            out += [Predicate(name, t, op, v) for op in ops]
            if t == "string" and v:
                out.append(Predicate(name, t, "startswith", v[:3]))
    return out


# --- pyiceberg ------------------------------------------------------------------------------

def iceberg_expression(p: Predicate) -> Any:
    from pyiceberg import expressions as e

    simple = {"isnull": e.IsNull, "notnull": e.NotNull, "isnan": e.IsNaN, "notnan": e.NotNaN}
    if p.op in simple:
        return simple[p.op](p.column)
    value = p.value
    if isinstance(value, datetime):
        value = value.isoformat()
    elif isinstance(value, date):
        value = value.isoformat()
    ops = {"eq": e.EqualTo, "ne": e.NotEqualTo, "lt": e.LessThan, "le": e.LessThanOrEqual,
           "gt": e.GreaterThan, "ge": e.GreaterThanOrEqual, "startswith": e.StartsWith}
    return ops[p.op](p.column, value)


def pyiceberg_answer(table: Any, snapshot_id: int, p: Predicate) -> list[int]:
    got = table.scan(row_filter=iceberg_expression(p), snapshot_id=snapshot_id,
                     selected_fields=("id",)).to_arrow()
    return sorted(got.column("id").to_pylist())


# --- SQL (Spark and DuckDB) -------------------------------------------------------------------

def _float_sql(v: float, sql_type: str) -> str:
    text = "Infinity" if v == float("inf") else "-Infinity" if v == float("-inf") else repr(v)
    return f"CAST('{text}' AS {sql_type})"


def sql_literal(type_name: str, v: Any, dialect: str) -> str:
    if type_name in ("long", "int"):
        return str(v)
    if type_name == "double":
        return _float_sql(v, "DOUBLE")
    if type_name == "float":
        return _float_sql(v, "FLOAT")
    if type_name == "boolean":
        return "TRUE" if v else "FALSE"
    if type_name == "string":
        return "'" + v.replace("'", "''") + "'"
    if type_name == "binary":
        return f"X'{v.hex()}'" if dialect == "spark" else f"from_hex('{v.hex()}')"
    if type_name == "date":
        return f"DATE '{v.isoformat()}'"
    if type_name == "timestamp":
        text = v.isoformat(sep=" ")
        return f"TIMESTAMP_NTZ '{text}'" if dialect == "spark" else f"TIMESTAMP '{text}'"
    if type_name == "timestamptz":
        text = v.isoformat(sep=" ")
        return f"TIMESTAMP '{text}'" if dialect == "spark" else f"TIMESTAMPTZ '{text}'"
    if type_name.startswith("decimal("):
        return f"CAST('{v}' AS {type_name.upper()})"
    raise ValueError(f"no literal for {type_name}")


def sql_condition(p: Predicate, dialect: str) -> str:
    col = f"`{p.column}`" if dialect == "spark" else f'"{p.column}"'
    if p.op == "isnull":
        return f"{col} IS NULL"
    if p.op == "notnull":
        return f"{col} IS NOT NULL"
    if p.op == "isnan":
        return f"isnan({col})"
    if p.op == "notnan":
        return f"NOT isnan({col})"
    if p.op == "startswith":
        fn = "startswith" if dialect == "spark" else "starts_with"
        return f"{fn}({col}, {sql_literal(p.type_name, p.value, dialect)})"
    return f"{col} {_SQL_OPS[p.op]} {sql_literal(p.type_name, p.value, dialect)}"


def spark_query(table_name: str, snapshot_id: int, p: Predicate) -> str:
    return (f"SELECT id FROM {table_name} VERSION AS OF {snapshot_id} "
            f"WHERE {sql_condition(p, 'spark')}")


def duckdb_answers(files: Sequence[str], predicates: Sequence[Predicate]
                   ) -> dict[str, list[int]]:
    """Each predicate's answer from DuckDB reading the snapshot's data files."""
    import duckdb

    con = duckdb.connect()
    try:
        listing = "[" + ", ".join("'" + f.replace("'", "''") + "'" for f in files) + "]"
        out = {}
        for p in predicates:
            rows = con.execute(f"SELECT id FROM read_parquet({listing}) "
                               f"WHERE {sql_condition(p, 'duckdb')}").fetchall()
            out[p.key] = sorted(r[0] for r in rows)
        return out
    finally:
        con.close()
