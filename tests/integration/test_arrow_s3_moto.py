"""pyarrow reaching an S3 store (a moto server on loopback) with the options ``arrow_s3`` maps
from a catalog's storage options: a Parquet file written and read back through them, and the
addressing the options choose is the one the store answers."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.servers.moto import MotoServer, moto_server
from tms.jobs import arrow_s3

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    with moto_server(tmp_path_factory.mktemp("moto")) as server:
        server.create_bucket("lake")
        yield server


def _props(moto: MotoServer, **extra: str) -> dict[str, str]:
    return {"s3.endpoint": moto.endpoint, "s3.region": moto.region,
            "s3.access-key-id": moto.access_key, "s3.secret-access-key": moto.secret_key,
            **extra}


def test_a_parquet_file_round_trips_through_the_mapped_options(moto: MotoServer) -> None:
    fs = arrow_s3.options(_props(moto, **{"s3.path-style-access": "true"})).filesystem()
    table = pa.table({"id": pa.array(range(1000), pa.int64()),
                      "name": pa.array([f"n{i % 7}" for i in range(1000)])})
    path = arrow_s3.object_path("s3a://lake/warehouse/t/data/00000-0.parquet")
    with fs.open_output_stream(path) as out:
        pq.write_table(table, out, compression="zstd")
    assert moto.count_objects("lake", "warehouse/t/data/") == 1
    with fs.open_input_file(arrow_s3.object_path("s3://lake/warehouse/t/data/00000-0.parquet")
                            ) as f:
        back = pq.read_table(f)
        f.seek(0)
        codec = pq.ParquetFile(f).metadata.row_group(0).column(0).compression
    assert back.equals(table)
    assert codec == "ZSTD"


def test_the_input_probe_reads_s3_with_the_bound_options(moto: MotoServer) -> None:
    # arrow_task.probe (partial progress checks every input first) on the store itself
    from tms.jobs import arrow_task

    opts = arrow_s3.options(_props(moto, **{"s3.path-style-access": "true"}))
    columns = [(1, "id", "long", True), (2, "name", "string", False)]
    want = arrow_task.output_schema(columns)
    good = pa.table({"id": pa.array(range(10), pa.int64()),
                     "name": pa.array([f"n{i}" for i in range(10)])}).cast(want)
    evolved = good.append_column(pa.field("extra", pa.int64(),
                                          metadata={b"PARQUET:field_id": b"3"}),
                                 pa.array([1] * 10, pa.int64()))
    fs = opts.filesystem()
    for name, table in (("good", good), ("evolved", evolved)):
        with fs.open_output_stream(f"lake/probe/data/{name}.parquet") as out:
            pq.write_table(table, out)

    def probe(name: str, rows: int = 10, allowed: str = "s3://lake/probe") -> dict[str, str]:
        task = {"inputs": [(f"s3://lake/probe/data/{name}.parquet", 0, rows, rows)],
                "allowed": [allowed], "columns": columns, "output": ""}
        return arrow_task.probe(task, opts)

    assert probe("good") == {}
    assert probe("evolved")["refused"] == "ineligible"
    assert "schema evolved" in probe("evolved")["reason"]
    assert probe("good", allowed="s3://lake/other")["refused"] == "location"
    with pytest.raises(ValueError, match="11 in the table's manifest"):
        probe("good", rows=11)
    refused = arrow_task.probe({"inputs": [("s3://lake/probe/data/good.parquet", 0, 10, 10)],
                                "allowed": ["s3://lake/probe"], "columns": columns,
                                "output": ""})  # no options bound: not read without them
    assert refused["refused"] == "ineligible"
