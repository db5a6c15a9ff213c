"""Frames of rows the driver holds: a few rows built in Python, or a Table pyarrow read of a
run's Parquet. Both are local relations the JVM keeps whole, sent as Arrow; the queries over
them run in the tasks, not in the driver's optimizer (``session.NO_LOCAL_EVALUATION``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from pfscope.spark_jobs.compute.stream import arrow_schema, tuples_batch


def local_frame(spark: SparkSession, rows: Sequence[tuple[Any, ...]], columns: dict[str, str]) -> DataFrame:
    """Rows the driver holds, as a frame the JVM keeps whole (a local relation, sent as Arrow).
    ``createDataFrame`` of Python tuples is an RDD that Python workers re-serialize: on the
    worked example its two tasks took 0.6 s each, more than all the data's other work."""
    return spark.createDataFrame(pa.Table.from_batches([tuples_batch(rows, arrow_schema(columns))]))


def arrow_frame(spark: SparkSession, table: pa.Table) -> DataFrame:
    """A pyarrow Table the driver read (of a run's Parquet), as a local relation. In one chunk:
    pyspark 4.3 makes a frame of no rows from a Table whose first batches are empty (a filtered
    dataset's are). Times as instants: Spark writes them as INT96, which pyarrow reads without
    a zone, and Spark would take as local date-times (``TIMESTAMP_NTZ``)."""
    instants = pa.schema(
        [
            pa.field(f.name, pa.timestamp("us", tz="UTC")) if pa.types.is_timestamp(f.type) else f
            for f in table.schema
        ]
    )
    return spark.createDataFrame(table.cast(instants).combine_chunks())
