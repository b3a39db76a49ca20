"""The checked-in ``sql/schema.sql`` is exactly what the migrations produce."""

from __future__ import annotations

import difflib

import pytest

from tests.conftest import PgHandle
from tms.local.schema import HEADER, REGENERATE_CMD, SCHEMA_PATH, generate, normalise

pytestmark = pytest.mark.integration


def test_schema_file_matches_migrations(pg: PgHandle) -> None:
    generated = generate(pg.dsn)  # pg is an empty database: generate() migrates it
    # Not vacuous: an empty or failed dump would match an empty file.
    assert "CREATE TABLE public.tms_operations" in generated
    assert "CREATE FUNCTION public.tms_attempt_close(" in generated
    checked_in = SCHEMA_PATH.read_text() if SCHEMA_PATH.exists() else ""
    if checked_in != generated:
        diff = "".join(difflib.unified_diff(
            checked_in.splitlines(keepends=True), generated.splitlines(keepends=True),
            fromfile="sql/schema.sql (checked in)", tofile="sql/schema.sql (from migrations)"))
        pytest.fail(f"sql/schema.sql is out of date with the migrations; regenerate it with\n"
                    f"    {REGENERATE_CMD}\n\n{diff}", pytrace=False)


def test_normalise_drops_only_volatile_lines_outside_function_bodies() -> None:
    dump = (
        "\\restrict abc123\n-- Dumped from database version 15.18\n"
        "-- Dumped by pg_dump version 15.18\n\nSET statement_timeout = 0;\n"
        "SELECT pg_catalog.set_config('search_path', '', false);\n\n\n"
        "CREATE FUNCTION public.f() RETURNS void\n    LANGUAGE sql\n    AS $$\n"
        "UPDATE t\nSET x = 0;\n\n\n$$;\n\n\nCREATE TABLE public.t (\n    x integer\n);\n"
        "\\unrestrict abc123\n\n"
    )
    assert normalise(dump) == (
        "CREATE FUNCTION public.f() RETURNS void\n    LANGUAGE sql\n    AS $$\n"
        "UPDATE t\nSET x = 0;\n\n\n$$;\n\nCREATE TABLE public.t (\n    x integer\n);\n"
    )
    assert SCHEMA_PATH.read_text().startswith(HEADER)
