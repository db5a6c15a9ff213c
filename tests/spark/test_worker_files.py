"""Spark reads what a worker wrote itself (``worker_files``) as it reads its own partitioned Parquet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyspark.sql import types as T

from pfscope.spark_jobs.ingest.stages import arrow_schema
from pfscope.spark_jobs.runtime.worker_files import KindFiles

SCHEMA = T.StructType(
    [
        T.StructField("out", T.StringType()),
        T.StructField("n", T.LongType()),
        T.StructField("ok", T.BooleanType()),
        T.StructField("blob", T.BinaryType()),
        T.StructField("lines", T.ArrayType(T.StringType())),
        T.StructField("text", T.StringType()),
    ]
)


def test_spark_reads_the_workers_files_with_their_kind(spark: Any, tmp_path: Path) -> None:
    rows = [
        {
            "out": "msg" if i % 4 else "line",
            "n": i,
            "ok": i % 2 == 0,
            "blob": bytes([i, 0, 255]),
            "lines": None if i % 3 == 0 else [f"line {i}", ""],
            "text": None if i % 5 == 0 else f"é{i}",
        }
        for i in range(40)
    ]
    for part in range(2):
        files = KindFiles(
            str(tmp_path), arrow_schema(SCHEMA), "out", f"part-{part}", compression="none", dictionary=[]
        )
        for row in rows[part::2]:
            files.add(row)
        files.close()
    df = spark.read.schema(SCHEMA).parquet(str(tmp_path))
    got = sorted((r.asDict() for r in df.collect()), key=lambda r: r["n"])
    assert [{**r, "blob": bytes(r["blob"])} for r in got] == rows
    assert df.where(df.out == "line").count() == 10  # the kind, from the folder's name, prunes


def test_a_step_with_no_row_of_a_kind_reads_as_empty(spark: Any, tmp_path: Path) -> None:
    assert spark.read.schema(SCHEMA).parquet(str(tmp_path)).where("out = 'msg'").count() == 0
