"""Ingest's Spark stages: the exports read in parallel, step 1's duplicates and accounting in SQL.

1. ``read_exports``: one task per file, or per 16 MB piece of a plain ``wevtutil`` XML export
   (``ingest.xml_splits``); each runs ``ingest.stage.task_rows`` (the reference's own rules, in
   the worker) through ``mapInArrow``, writes its rows as Parquet itself (``kind_files``) and
   hands back its status. A piece that is not plain sends its file back to be read whole,
   salvage and all, by a second round of tasks.
2. ``Classified``: the rows of every file of the share (this run's and those an earlier run read),
   with their record numbers, then duplicates found as the reference finds them (the first event
   of a key in input order is kept; a later one with the same meaning is a duplicate, otherwise a
   reject), and the accounting the summary needs, in a few aggregations.

The kept replication events go on to the build steps (``build_steps``); the rejects and errors
stream from Spark to their files.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import tzinfo
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from pfscope.spark_jobs.exchange.classify import Accounting
from pfscope.spark_jobs.exchange.grouped import RECORD_COLUMNS
from pfscope.spark_jobs.exchange.reasons import R_CONFLICTING_COPY
from pfscope.spark_jobs.exchange.stage import ROW_FIELDS, WHOLE, ReadTask, task_rows
from pfscope.spark_jobs.runtime.worker_files import KindFiles

_TYPES = {
    "str": T.StringType(),
    "int": T.LongType(),
    "bool": T.BooleanType(),
    "bytes": T.BinaryType(),
    "list[str]": T.ArrayType(T.StringType()),
}
ROW_SCHEMA = T.StructType([T.StructField(n, _TYPES[t]) for n, t in ROW_FIELDS])
#: a task's status row (``stage.task_rows``'s last)
STATUS_SCHEMA = T.StructType(
    [
        f
        for f in ROW_SCHEMA.fields
        if f.name in ("file_key", "piece", "kind", "count", "broken", "unreadable", "reason")
    ]
)
TASK_SCHEMA = T.StructType(
    [
        T.StructField("path", T.StringType()),
        T.StructField("file_key", T.StringType()),
        T.StructField("piece", T.LongType()),
        T.StructField("start", T.LongType()),
        T.StructField("end", T.LongType()),
    ]
)
RECORD_KINDS = ("reject", "error", "parsed")
_KEYS = ["file_key", "piece", "rec"]
#: the row columns whose values hardly repeat
UNIQUE_COLUMNS = ("text", "ev", "meaning", "dedup_key", "time_text", "record_id", "rec", "ts", "err_json")


def read_exports(
    spark: SparkSession, tasks: list[ReadTask], dest: str, default_offset_min: int, zone: tzinfo | None
) -> list[dict[str, Any]]:
    """Run ``tasks`` (one Spark task each, the largest first): each writes its records' rows to
    ``dest`` by kind (``kind_files``) and hands back its status row, which this returns."""
    import pyarrow as pa

    dest = os.path.abspath(dest)  # a worker's working folder is not the driver's
    row_schema = arrow_schema(ROW_SCHEMA)
    status_schema = arrow_schema(STATUS_SCHEMA)
    dictionary = [f.name for f in ROW_SCHEMA.fields if f.name not in UNIQUE_COLUMNS]

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for t in batch.to_pylist():
                task = ReadTask(**t)
                status: list[dict[str, Any]] = []
                with KindFiles(
                    dest, row_schema, "kind", f"part-{task.file_key}-{task.piece + 1}", dictionary=dictionary
                ) as files:
                    for row in task_rows(task, default_offset_min, zone):
                        if row["kind"] in RECORD_KINDS:
                            files.add(row)
                        else:
                            status.append(row)
                written = sum(files.counts.values())
                for st in status:  # every record read is a row written, or the task fails
                    if st["kind"] in ("piece", "file") and st["count"] != written:
                        raise RuntimeError(f"{task.path}: {st['count']} records read, {written} rows written")
                yield pa.RecordBatch.from_pylist(status, schema=status_schema)

    os.makedirs(dest, exist_ok=True)  # read as a dataset even if no task has a record
    ordered = sorted(tasks, key=lambda t: -(t.end - t.start))
    rdd = spark.sparkContext.parallelize(
        [(t.path, t.file_key, t.piece, t.start, t.end) for t in ordered], max(1, len(ordered))
    )
    got = spark.createDataFrame(rdd, TASK_SCHEMA).mapInArrow(run, STATUS_SCHEMA).collect()
    for left in glob.glob(
        os.path.join(glob.escape(dest), "*", ".*.tmp")
    ):  # of an attempt killed while writing
        with contextlib.suppress(OSError):
            os.remove(left)
    return [r.asDict() for r in got]


def arrow_schema(schema: T.StructType) -> Any:
    """The Arrow schema of the rows a worker builds for ``schema``."""
    import pyarrow as pa

    return pa.schema([pa.field(f.name, arrow_type(f.dataType)) for f in schema.fields])


def arrow_type(t: T.DataType) -> Any:
    """The Arrow type of a Spark type the workers' rows use (their batches are built in Arrow)."""
    import pyarrow as pa

    if isinstance(t, T.ArrayType):
        return pa.list_(arrow_type(t.elementType))
    return {
        T.StringType: pa.string(),
        T.LongType: pa.int64(),
        T.BooleanType: pa.bool_(),
        T.BinaryType: pa.binary(),
    }[type(t)]


def _read(spark: SparkSession, files: list[FilePlan]) -> DataFrame:
    """The stored rows of these files, each from the dataset its plan names: a dataset may also
    hold rows of other files (one read again whole into a dataset of its own after its pieces
    wrote theirs; one that left the share), which are no rows of this share. Each dataset is
    partitioned by ``kind``: read one by one, then united."""
    keys: dict[str, set[str]] = {}
    for f in files:
        keys.setdefault(f.dataset, set()).add(f.file_key)
    frames = [
        spark.read.schema(ROW_SCHEMA).parquet(d).where(F.col("file_key").isin(*sorted(k)))
        for d, k in sorted(keys.items())
    ]
    return functools.reduce(DataFrame.unionByName, frames)


@dataclass
class FilePlan:
    """How one file of the share is found in the stored rows."""

    source: str
    file_key: str
    file_idx: int
    dataset: str
    #: piece -> records of the pieces before it; {WHOLE: 0} when read whole
    offsets: dict[int, int] = field(default_factory=dict)


@dataclass
class Accounted:
    acc: Accounting
    duplicates: int
    errors: int
    rejected: int  # step 1's rejects
    #: the servers of the errors kept; those the kept events name (their servers and senders)
    error_servers: set[str] = field(default_factory=set)
    kept_servers: set[str] = field(default_factory=set)

    @property
    def kept(self) -> int:
        """The replication events kept for the build steps."""
        return sum(self.acc.read.values()) - self.duplicates - self.errors - self.rejected


class Classified:
    """Step 1 over the whole share. The duplicate check runs on a narrow projection (keys,
    positions, what the accounting counts), whose verdicts (``fate``) are cached; the wide
    rows (description text, pickled events) are read from Parquet only for what is written."""

    def __init__(self, spark: SparkSession, files: list[FilePlan]):
        self.spark = spark
        self.files = files
        keys = spark.createDataFrame(
            [(f.file_key, p, off, f.file_idx, f.source) for f in files for p, off in f.offsets.items()],
            "file_key string, piece long, offset long, file_idx long, source string",
        )
        #: the share's record rows as stored (without record numbers)
        self.stored = _read(spark, files).where(F.col("kind").isin(*RECORD_KINDS))
        self.rows = self.stored.join(F.broadcast(keys), ["file_key", "piece"]).withColumn(
            "record", F.col("rec") + F.col("offset")
        )
        narrow = self.rows.select(
            *_KEYS,
            "record",
            "file_idx",
            "source",
            "kind",
            "server",
            "acct_server",
            "reason_key",
            "without_offset",
            "server_from_file",
            "dedup_key",
            "meaning",
            "lines",
            "sender",
        )
        w = Window.partitionBy("dedup_key").orderBy("file_idx", "record")
        keyed = F.col("kind") != "reject"
        n = F.when(keyed, F.row_number().over(w))
        first = F.when(keyed, F.first("meaning").over(w))
        fate = (
            F.when(~keyed, "reject")
            .when(n == 1, F.when(F.col("kind") == "error", "error").otherwise("parsed"))
            .when(F.col("kind") == "error", "error_dup")
            .when(F.col("meaning") == first, "dup")
            .otherwise("conflict")
        )
        self.fates = (
            narrow.withColumn("fate", fate).drop("meaning", "dedup_key").persist(StorageLevel.MEMORY_AND_DISK)
        )
        #: what ``accounting`` counted: a kind none has is not queried
        self.counted: Accounted | None = None

    def release(self) -> None:
        self.fates.unpersist()

    def _with(self, *fates: str) -> DataFrame:
        """The wide rows of the records with these fates (few: a broadcast join)."""
        keys = self.fates.where(F.col("fate").isin(*fates)).select(*_KEYS, "fate")
        return self.rows.join(F.broadcast(keys), _KEYS)

    def accounting(self) -> Accounted:
        """The reference's ``Accounting`` of step 1, its counters filled in the order it fills
        them (a reason is first counted at its first record): one aggregation, and one more for
        the description lines ignored when there are any."""
        df = self.fates
        acc = Accounting()
        rkey = F.when(F.col("fate") == "conflict", F.lit(R_CONFLICTING_COPY)).when(
            F.col("fate") == "reject", F.col("reason_key")
        )
        groups = (
            df.groupBy(
                "source", "acct_server", "fate", rkey.alias("rkey"), "without_offset", "server_from_file"
            )
            .agg(
                F.count("*").alias("n"),
                F.min(F.struct("file_idx", "record")).alias("first"),
                F.sum("lines").alias("lines"),
                F.collect_set(F.when(F.col("sender") != "", F.col("sender"))).alias("senders"),
            )
            .collect()
        )
        what = {
            "reject": "rejected",
            "conflict": "rejected",
            "dup": "duplicates",
            "error_dup": "duplicates",
            "error": "errors",
        }
        totals: Counter[str] = Counter()
        reasons: dict[str, list[Any]] = {}
        lines = 0
        for g in groups:
            n = g["n"]
            acc.read[g["source"]] += n
            if g["fate"] in what:
                acc.per_server[g["acct_server"]][what[g["fate"]]] += n
                totals[what[g["fate"]]] += n
            if g["rkey"] is not None:
                first = (g["first"]["file_idx"], g["first"]["record"])
                r = reasons.setdefault(g["rkey"], [0, first])
                r[0] += n
                r[1] = min(r[1], first)
            if g["without_offset"]:
                acc.times_without_offset += n
            if g["server_from_file"]:
                acc.servers_from_file_names.add(g["server_from_file"])
            if g["fate"] == "parsed":
                lines += g["lines"] or 0
        acc.read = Counter(dict(sorted(acc.read.items())))
        for k, (n, _first) in sorted(reasons.items(), key=lambda kv: kv[1][1]):
            acc.reasons[k] = n
        acc.ignored_total = lines
        if lines:
            top = (
                self._with("parsed")
                .select("file_idx", "record", F.posexplode("ignored").alias("i", "line"))
                .groupBy("line")
                .agg(F.count("*").alias("n"), F.min(F.struct("file_idx", "record", "i")).alias("first"))
                .orderBy(F.desc("n"), "first")
                .limit(20)
            )
            for row in top.collect():
                acc.ignored_lines[row["line"]] = row["n"]
        parsed = [g for g in groups if g["fate"] == "parsed"]  # a parsed row's acct_server is its server
        self.counted = Accounted(
            acc,
            totals["duplicates"],
            totals["errors"],
            totals["rejected"],
            {g["acct_server"] for g in groups if g["fate"] == "error"},
            {g["acct_server"] for g in parsed} | {s for g in parsed for s in g["senders"]},
        )
        return self.counted

    def kept(self) -> DataFrame:
        """The kept replication events, as the reference's ``classify`` keeps them: every parsed
        row but the duplicates and conflicting copies (an anti join); what the build steps read."""
        dropped = self.fates.where(F.col("fate").isin("dup", "conflict")).select(*_KEYS)
        return (
            self.rows.where(F.col("kind") == "parsed")
            .join(F.broadcast(dropped), _KEYS, "left_anti")
            .select(*RECORD_COLUMNS, "msg_key")
        )

    def errors(self) -> Iterator[tuple[str, int, str]]:
        """(error row JSON, its record, server) of the errors kept, in input order."""
        if self.counted is not None and not self.counted.errors:
            return
        q = (
            self._with("error")
            .select("err_json", "record", "server", "file_idx")
            .orderBy("file_idx", "record")
        )
        for r in q.toLocalIterator(prefetchPartitions=True):
            yield r["err_json"], r["record"], r["server"]

    def rejects(self) -> Iterator[dict[str, Any]]:
        """Step 1's rejects in input order, each as ``reasons.reject_row`` writes it."""
        if self.counted is not None and not self.counted.rejected:
            return
        q = (
            self._with("reject", "conflict")
            .select(
                "source",
                "record",
                "record_id",
                "server",
                "event_id",
                "time_text",
                F.when(F.col("fate") == "conflict", F.lit(R_CONFLICTING_COPY))
                .otherwise(F.col("reason"))
                .alias("reason"),
                "text",
                "file_idx",
            )
            .orderBy("file_idx", "record")
        )
        for r in q.toLocalIterator(prefetchPartitions=True):
            yield reject_line(r, r["text"])

    def repeated(self, new_keys: list[str]) -> int:
        """Records of the files in ``new_keys`` that another file already holds: the same server,
        EventRecordID and text (a server's later export overlapping its earlier one)."""
        cols = ["raw_server", "record_id", "text"]
        rows = self.stored.where(F.col("record_id").isNotNull())  # no record numbers needed: no join
        new = rows.where(F.col("file_key").isin(*new_keys)).select(*cols)
        old = rows.where(~F.col("file_key").isin(*new_keys)).select(*cols)
        return new.join(old, cols, "left_semi").count()  # a semi join: a record held twice counts once

    def texts(self, keys: list[tuple[str, int]]) -> dict[tuple[str, int], str]:
        """The description text of these records (rejected by the build steps)."""
        if not keys:
            return {}
        k = self.spark.createDataFrame(sorted(set(keys)), "source string, record long")
        return {
            (r["source"], r["record"]): r["text"]
            for r in self.rows.join(F.broadcast(k), ["source", "record"])
            .select("source", "record", "text")
            .collect()
        }


__all__ = ["WHOLE", "Accounted", "Classified", "FilePlan", "read_exports"]


def reject_line(r: Any, text: str | None) -> dict[str, Any]:
    """A line of ``ingest_rejects.jsonl`` (as ``reasons.reject_row`` writes it) from a row that
    names the record (``source``, ``record``, ``record_id``, ``server``, ``event_id``,
    ``time_text``) and its ``reason``."""
    return {
        "source": r["source"],
        "record": r["record"],
        "record_id": r["record_id"],
        "server": r["server"],
        "event_id": r["event_id"],
        "time": r["time_text"],
        "reason": r["reason"],
        "text": text,
    }
