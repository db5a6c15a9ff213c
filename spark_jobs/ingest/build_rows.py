"""The rows of ingest's build steps: their schemas, and how a step runs a rule over each group of
rows in a worker (``run_step``), writing its rows to Parquet by kind (``worker_files``)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import types as T

from pfscope.spark_jobs.ingest.stages import arrow_schema
from pfscope.spark_jobs.runtime.worker_files import KindFiles

S, L, B, BIN = T.StringType(), T.LongType(), T.BooleanType(), T.BinaryType()
REJECT = [
    ("phase", L),
    ("sort", T.ArrayType(L)),
    ("source", S),
    ("record", L),
    ("record_id", L),
    ("server", S),
    ("event_id", L),
    ("time_text", S),
    ("reason", S),
]
GROUP_SCHEMA = T.StructType(
    [
        T.StructField(n, t)
        for n, t in [
            ("out", S),
            *REJECT,
            ("g_file", L),
            ("g_rec", L),
            ("seq", L),
            ("s", S),
            ("a", L),
            ("r", S),
            ("b", L),
            ("names", T.ArrayType(S)),
            ("msg_key", S),
        ]
    ]
)
MSG_SCHEMA = T.StructType(
    [
        T.StructField(n, t)
        for n, t in [
            ("out", S),
            *REJECT,
            ("fs", S),
            ("fg", L),
            ("ps", S),
            ("pg", L),
            ("sent_at", L),
            ("g_file", L),
            ("g_rec", L),
            ("seq", L),
            ("synthesized", B),
            ("received", B),
            ("msg", BIN),
            ("direction", S),
            ("text", S),
            ("s", S),
            ("flags", T.ArrayType(B)),
            ("used", B),
            ("site", S),
            ("stores", T.ArrayType(S)),
            ("msg_key", S),
        ]
    ]
)
DERIVED_SCHEMA = T.StructType(
    [
        T.StructField(n, t)
        for n, t in [
            *REJECT,
            ("out", S),
            ("text", S),
            ("seq", L),
            # a line's file by block and folder (``event_files.Placement``)
            ("name", S),
            ("mkey", S),
            ("skey", S),
            ("sname", S),
            ("fkey", S),  # the folder's (``build_cache.folder_key``)
        ]
    ]
)


def grouped_rows(
    batches: Iterator[Any],
    key: Callable[[dict[str, Any]], Any],
    each: Callable[[list[dict[str, Any]]], Iterator[dict[str, Any]]],
) -> Iterator[dict[str, Any]]:
    """Over a partition sorted by ``key``: ``each``'s rows for every run of rows with one key (a
    group may span batches)."""
    group: list[dict[str, Any]] = []
    current: Any = None
    for batch in batches:
        for row in batch.to_pylist():
            k = key(row)
            if group and k != current:
                yield from each(group)
                group = []
            current = k
            group.append(row)
    if group:
        yield from each(group)


def run_step(
    df: DataFrame,
    schema: T.StructType,
    key: str | tuple[str, ...],
    make: Callable[[], Any],
    path: str,
    kinds: tuple[str, ...],
) -> DataFrame:
    """``make()``'s ``group`` over each run of one ``key`` in each partition of ``df`` (one object
    per partition): its rows, each of one of ``kinds``, written by the workers to ``path`` by kind
    (``out``), uncompressed and without dictionaries (read once or twice; their binary values all
    differ), read back as one DataFrame. A row carries its group's ``key`` when that is one column
    of ``schema`` (a layer's rows are found by it: ``build_cache``)."""
    keys = (key,) if isinstance(key, str) else key
    tag = key if isinstance(key, str) and key in schema.fieldNames() else None
    path = os.path.abspath(path)  # a worker's working folder is not the driver's
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        from pyspark import TaskContext

        it = make()
        task = TaskContext.get()
        assert task is not None  # a Spark task runs this

        def each(group: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
            for row in it.group(group):
                if row["out"] not in kinds:
                    raise RuntimeError(f"a build step made a row of kind {row['out']!r}, not one of {kinds}")
                if tag is not None:
                    row[tag] = group[0][tag]
                yield row

        with KindFiles(
            path,
            arrow_schema(schema),
            "out",
            f"part-{task.partitionId():05d}",
            compression="none",
            dictionary=[],
        ) as files:
            for row in grouped_rows(batches, lambda r: tuple(r[k] for k in keys), each):
                files.add(row)
        return iter(())

    df.mapInArrow(run, schema).collect()
    return df.sparkSession.read.schema(schema).parquet(path)
