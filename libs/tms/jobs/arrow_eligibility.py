"""Whether a bin-pack compaction may take the arrow data path (``arrow_rewrite.py``), strictly:
anything not known to be rewritten exactly as Iceberg's Spark writer would is left to Spark's
path (``rewrite_data_files``), and the result says why (``arrow_refused``).

Two stages: the table (``table_refusal``: format version, file format, codec, properties that
ask the writer for more than data, sort order, column types, storage) before planning, and the
planned file groups (``group_refusal``: deletes, spec, format, whole files, storage) after.
The field ids, names and types inside each file are checked by the task itself before it writes
(``arrow_task.schema_refusal``). Standard library only; the JVM objects come in.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tms.jobs import arrow_s3, arrow_task
from tms.locations import LocationError, parse

ENV_SWITCH = "TMS_ARROW_REWRITE"  # operators: "0" forces Spark's path for every compaction
DEFAULT_SWITCH = "1"
SPEC_SWITCH = "data_path"  # the spec's field (set by the executor or a bench, not an owner)
FORMAT_VERSIONS = (1, 2)  # v3 adds row lineage, which this writer does not carry
TESTED_TYPES = frozenset({"long", "int", "string", "double", "float", "boolean", "date",
                          "timestamp", "timestamptz", "binary"})
# table properties that ask Iceberg's writer for something the arrow path does not write
REFUSED_PREFIXES = ("write.parquet.bloom-filter-", "encryption.")


def switched_off(spec_value: str | None, environ: Mapping[str, str] = os.environ) -> str | None:
    """Why the operator turned the arrow path off, or None."""
    if environ.get(ENV_SWITCH, DEFAULT_SWITCH).strip() == "0":
        return f"switched off ({ENV_SWITCH}=0)"
    if spec_value == "spark":
        return f"switched off (spec {SPEC_SWITCH}=spark)"
    return None


def pyarrow_refusal() -> str | None:
    try:
        import pyarrow.parquet  # noqa: F401
    except ImportError as e:
        return f"pyarrow not importable in the driver: {e}"
    return None


def type_refusal(type_name: str) -> str | None:
    if type_name in TESTED_TYPES or (type_name.startswith("decimal(")
                                     and type_name.endswith(")")):
        return None
    return f"column type {type_name} (only flat columns of tested types take the arrow path)"


def storage_refusal(what: str, raw: str, s3_refusal: str | None) -> str | None:
    """Local files take the arrow path, and S3 when the catalog's storage maps onto pyarrow
    faithfully (``s3_refusal`` None: ``arrow_s3.options`` accepted it); other stores are
    Spark's."""
    try:
        where = parse(raw, literal=True)
    except LocationError as e:
        return f"{what}: {e}"
    if where.local:
        return None
    if where.scheme == "s3" and arrow_s3.is_s3(raw):
        return None if s3_refusal is None else f"{what} on S3: {s3_refusal}"
    return f"{what} on {where.scheme} storage (local files and S3 take the arrow path)"


def columns(handle: Any) -> list[tuple[int, str, str, bool]]:
    """The table schema's top-level columns: (field id, name, type, required)."""
    return [(int(f.fieldId()), str(f.name()), str(f.type()), bool(f.isRequired()))
            for f in handle.schema().columns()]


def table_refusal(handle: Any, jvm: Any, props: Mapping[str, str], codec: str | None,
                  s3_refusal: str | None) -> str | None:
    """Why this table cannot take the arrow path (None: it may)."""
    version = int(jvm.org.apache.iceberg.TableUtil.formatVersion(handle))
    if version not in FORMAT_VERSIONS:
        return f"format version {version}"
    if props.get("write.format.default", "parquet").lower() != "parquet":
        return f"write.format.default={props['write.format.default']}"
    if codec not in arrow_task.ARROW_CODECS:
        return f"codec {codec} (the arrow path writes {', '.join(arrow_task.ARROW_CODECS)})"
    for key in props:
        if key.startswith(REFUSED_PREFIXES):
            return f"table property {key}"
    if not handle.sortOrder().isUnsorted():
        return "the table has a sort order"
    for _, name, type_name, _ in columns(handle):
        why = type_refusal(type_name)
        if why:
            return f"column {name}: {why}"
    for what, raw in (("table location", str(handle.location())),
                      ("write.data.path", props.get("write.data.path"))):
        why = storage_refusal(what, raw, s3_refusal) if raw else None
        if why:
            return why
    return pyarrow_refusal()


@dataclass(frozen=True)
class InputFile:
    """What the arrow path needs of one planned input (``FileScanTask``), read in one call."""

    path: str
    file_format: str
    spec_id: int
    size: int
    records: int
    start: int
    length: int
    deletes: int


def input_files(jvm: Any, group: Any) -> list[InputFile]:
    """A group's inputs, each read through Iceberg's ``ScanTaskParser`` JSON (one Py4J call a
    file instead of about ten); the attribute calls where the JSON is not as expected."""
    parser = jvm.org.apache.iceberg.ScanTaskParser
    out = []
    for task in group.fileScanTasks():
        try:
            doc = json.loads(str(parser.toJson(task)))
            f = doc["data-file"]
            size = int(f["file-size-in-bytes"])
            out.append(InputFile(str(f["file-path"]), str(f["file-format"]).upper(),
                                 int(f["spec-id"]), size, int(f["record-count"]),
                                 int(doc.get("start", 0)), int(doc.get("length", size)),
                                 len(doc.get("delete-files") or [])))
        except (KeyError, TypeError, ValueError):
            d = task.file()
            out.append(InputFile(str(d.location()), str(d.format()).upper(), int(d.specId()),
                                 int(d.fileSizeInBytes()), int(d.recordCount()),
                                 int(task.start()), int(task.length()),
                                 int(task.deletes().size())))
    return out


def group_refusal(files: Sequence[InputFile], spec_id: int, s3_refusal: str | None
                  ) -> str | None:
    """Why a planned file group cannot be rewritten here (None: it can)."""
    for f in files:
        if f.deletes > 0:
            return "delete files apply"
        if f.file_format != "PARQUET":
            return f"input file format {f.file_format}"
        if f.spec_id != spec_id:
            return "a file of an older partition spec"
        if f.start != 0 or f.length != f.size:
            return "a split input file"
        why = storage_refusal("input file", f.path, s3_refusal)
        if why:
            return why
    return None
