"""The Spark job: read -> group -> fold -> join -> publish.

Reading, validation, de-duplication and the send/receive join are Spark SQL
(``spark_jobs.reading``). Groups are repartitioned by folder, sorted by (folder, observer, time)
within partitions, and streamed through the plain-Python fold (``spark_jobs.stream``); the two figures
that compare folds (knowledge lag, should-respond) are joins afterwards. Each step is a function
from DataFrames to a DataFrame.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.pandas.functions import pandas_udf
from pyspark.sql.types import BooleanType, LongType

from .model.cnset import CNSet
from .model.rules.should_respond import should_respond
from .model.tables import TABLES
from .model.timeutil import US
from .model.topology import HIERARCHY_FID, Topology
from .reading import ReadResult, read_events
from .stream import FOLD_TABLES, GROUP_START, fold_partitions, org_payload, wide_ddl

MIN_LONG = -(1 << 63)


@dataclass
class JobResult:
    tables: dict[str, DataFrame]
    as_of: int
    read: ReadResult


# --------------------------------------------------------------------------------------------
# groups
# --------------------------------------------------------------------------------------------
def observers(spark: SparkSession, topo: Topology, events: DataFrame) -> DataFrame:
    """(observer, fid): every store ever on a folder's replica list or with an event for it."""
    initial = [(s, HIERARCHY_FID) for s in topo.stores]
    initial += [(s, f.fid) for f in topo.folders.values() for s in f.replicas]
    folders_only = [(None, f.fid) for f in topo.folders.values() if not f.replicas]
    base = spark.createDataFrame(initial + folders_only, "observer string, fid string")
    own = events.filter(F.col("kind").isin("change", "send", "receive")).select(
        F.col("store").alias("observer"), "fid"
    )
    listed = events.filter(F.col("kind") == "replicas").select(
        F.explode("replicas").alias("observer"), "fid"
    )
    return base.unionByName(own).unionByName(listed).filter(F.col("observer").isNotNull()).distinct()


def group_stream(events: DataFrame, obs: DataFrame) -> DataFrame:
    """Each group's rows: a start row, its own events, its folder's replica-list changes."""
    own = events.filter(F.col("kind").isin("change", "send", "receive")).withColumn(
        "observer", F.col("store")
    )
    lists = (
        events.filter(F.col("kind") == "replicas")
        .withColumnRenamed("store", "event_store")
        .join(obs, "fid")
    )
    starts = obs.select(
        "observer", "fid", F.lit(GROUP_START).alias("kind"),
        F.lit(MIN_LONG).cast("long").alias("ts"), F.lit(MIN_LONG).cast("long").alias("seq"),
    )
    rows = own.unionByName(lists, allowMissingColumns=True).unionByName(starts, allowMissingColumns=True)
    cols = ["observer", "fid", "kind", "ts", "seq", "cn", "msg", "type", "sender", "sent_at", "msg_seq",
            "to", "cnset", "changes", "requested", "source", "responders", "replicas", "path", "event_store", "derived"]
    return rows.select(*cols)


def fold_groups(stream: DataFrame, payload: str, as_of: int, partitions: int) -> DataFrame:
    """Stream sorted partitions through the fold; one wide frame of every fold table.

    Partitioned by folder and sorted by folder first: every observer of a folder is folded in
    the same task, so the published files come out sorted by ``fid`` and the dashboard, which
    reads one folder at a time, skips all row groups but the folder's own."""
    ordered = stream.repartition(partitions, "fid").sortWithinPartitions("fid", "observer", "ts", "seq")
    return ordered.mapInArrow(fold_partitions(payload, as_of), schema=wide_ddl())


def fold_table(wide: DataFrame, table: str) -> DataFrame:
    """One table out of the wide frame, with the published types (times as timestamps)."""
    cols = []
    for name, kind in TABLES[table]:
        c = F.col(f"`{name}`")
        if kind == "timestamp":
            c = F.timestamp_micros(c)
        elif name == "group" and kind == "long":
            c = c.cast("long")
        cols.append(c.alias(name))
    return wide.filter(F.col("table") == table).select(*cols)


# --------------------------------------------------------------------------------------------
# the two comparisons between folds
# --------------------------------------------------------------------------------------------
@pandas_udf(LongType())  # type: ignore[call-overload]
def _missing_count(real: pd.Series, believed: pd.Series) -> pd.Series:
    return pd.Series(
        [CNSet.parse(a or "").difference(CNSet.parse(b or "")).count() for a, b in zip(real, believed, strict=True)],
        dtype="int64",
    )


@pandas_udf(BooleanType())  # type: ignore[call-overload]
def _should_respond(request: pd.Series, held: pd.Series) -> pd.Series:
    return pd.Series(
        [should_respond(CNSet.parse(a or ""), CNSet.parse(b or "")) for a, b in zip(request, held, strict=True)],
        dtype="bool",
    )


def owned_sets(state_table: DataFrame) -> DataFrame:
    return state_table.filter("is_self").select(
        F.col("observer").alias("subject"), "fid", F.col("cnset").alias("owned")
    )


def with_lag(state_table: DataFrame) -> DataFrame:
    """Knowledge lag of R about T: CNs of owned(T, F) that believed(R, F, T) lacks."""
    joined = state_table.join(owned_sets(state_table), ["subject", "fid"], "left")
    lag = F.when(F.col("is_self"), F.lit(0).cast("long")).otherwise(
        _missing_count(F.coalesce(F.col("owned"), F.lit("")), F.col("cnset"))
    )
    return joined.withColumn("lag_count", lag).select(*[n for n, _ in TABLES["state_table"]])


def with_should_respond(responders: DataFrame, processed: DataFrame, state_table: DataFrame) -> DataFrame:
    """Strict subset against the responder's owned when it processed the request, else as of."""
    at_processing = processed.select(
        "msg", "responder", F.col("processed_at").alias("p_at"), F.col("owned").alias("p_owned")
    )
    now = owned_sets(state_table).select(
        F.col("subject").alias("responder"), "fid", F.col("owned").alias("now_owned")
    )
    joined = (
        responders.drop("should_respond", "responder_processed_at")
        .join(at_processing, ["msg", "responder"], "left")
        .join(now, ["responder", "fid"], "left")
    )
    held = F.coalesce(F.col("p_owned"), F.col("now_owned"), F.lit(""))
    return joined.withColumn("should_respond", _should_respond(F.col("requester_cnset"), held)).withColumn(
        "responder_processed_at", F.timestamp_micros("p_at")
    ).select(*[n for n, _ in TABLES["responders"]])


# --------------------------------------------------------------------------------------------
# org-wide tables
# --------------------------------------------------------------------------------------------
def _latest(df: DataFrame, by: str) -> DataFrame:
    w = Window.partitionBy(by).orderBy(F.col("ts").desc(), F.col("seq").desc())
    return df.withColumn("_n", F.row_number().over(w)).filter("_n = 1").drop("_n")


def stores_table(spark: SparkSession, topo: Topology, events: DataFrame) -> DataFrame:
    rows = [(s.name, s.server, s.site, s.version, s.preferred_backfill_source) for s in topo.stores.values()]
    base = spark.createDataFrame(rows, "store string, server string, site string, version string, "
                                       "preferred_backfill_source string")
    last = _latest(events.filter(F.col("kind") == "store_status"), "store").select("store", "status")
    return base.join(last, "store", "left").select(
        "store", "server", "site", "version", F.coalesce("status", F.lit("up")).alias("status"),
        "preferred_backfill_source",
    )


def folders_table(spark: SparkSession, topo: Topology, events: DataFrame) -> DataFrame:
    rows = [(HIERARCHY_FID, "", None, list(topo.store_names()))]
    rows += [(f.fid, f.path, f.parent, list(f.replicas)) for f in topo.folders.values()]
    base = spark.createDataFrame(rows, "fid string, path string, parent string, replicas array<string>")
    seen = events.filter(F.col("kind").isin("replicas", "change", "send")).select("fid").distinct()
    lists = events.filter(F.col("kind") == "replicas")
    last_list = _latest(lists, "fid").select("fid", F.col("replicas").alias("new_replicas"))
    last_path = _latest(lists.filter(F.col("path").isNotNull()), "fid").select("fid", F.col("path").alias("new_path"))
    return (
        base.join(seen, "fid", "full")
        .join(last_list, "fid", "left")
        .join(last_path, "fid", "left")
        .select(
            "fid",
            F.coalesce("new_path", "path", F.lit("")).alias("path"),
            "parent",
            F.coalesce("new_replicas", "replicas", F.array().cast("array<string>")).alias("replicas"),
        )
    )


def with_paths(replicas: DataFrame, folders: DataFrame) -> DataFrame:
    return replicas.drop("path").join(folders.select("fid", "path"), "fid", "left").select(
        *[n for n, _ in TABLES["replicas"]]
    )


# --------------------------------------------------------------------------------------------
# the whole job
# --------------------------------------------------------------------------------------------
ROWS_PER_FOLD_PARTITION = 250_000  # bounds each task's sort buffer and Python memory


def fold_partitions_for(spark: SparkSession, accepted: int) -> int:
    """Partitions for the fold: two per core, more when the log is large."""
    return max(2, spark.sparkContext.defaultParallelism * 2, -(-accepted // ROWS_PER_FOLD_PARTITION))


def as_of_and_status(events: DataFrame, as_of: int | None) -> tuple[int, list[tuple[str, int, int, bool]]]:
    """The as-of time (default: the last event's) and the up/down timeline up to it, in one job."""
    is_status = F.col("kind") == "store_status"
    row = events.agg(
        F.max("ts").alias("last"),
        F.collect_list(F.when(is_status, F.struct("ts", "seq", "store", "status"))).alias("status"),
    ).first()
    assert row is not None
    if as_of is None:
        as_of = row["last"] or 0
    timeline = sorted((s.ts, s.seq, s.store, s.status == "down") for s in row["status"] if s.ts <= as_of)
    return as_of, [(store, ts, seq, down) for ts, seq, store, down in timeline]


def compute(
    spark: SparkSession,
    topo: Topology,
    paths: Sequence[str],
    *,
    as_of: int | None = None,
    run_id: str = "run",
    partitions: int | None = None,
) -> JobResult:
    started = time.time()
    read = read_events(spark, paths, topo)
    events = read.events  # materialised by the reading: no re-reading of the log
    as_of, status = as_of_and_status(events, as_of)
    applied = events.filter(F.col("ts") <= as_of)
    payload = org_payload(topo.to_json(), status)
    obs = observers(spark, topo, applied)
    n = partitions or fold_partitions_for(spark, read.accepted)
    wide = fold_groups(group_stream(applied, obs), payload, as_of, n).localCheckpoint()  # the fold runs here

    t: dict[str, DataFrame] = {name: fold_table(wide, name) for name in FOLD_TABLES if name in TABLES}
    processed = wide.filter(F.col("table") == "processed_status_requests").select(
        "msg", "responder", "processed_at", "owned"
    )
    t["state_table"] = with_lag(t["state_table"])
    t["responders"] = with_should_respond(t["responders"], processed, t["state_table"])
    t["stores"] = stores_table(spark, topo, applied)
    t["folders"] = folders_table(spark, topo, applied)
    t["replicas"] = with_paths(t["replicas"], t["folders"])
    t["rejects"] = read.rejects.select(*[n for n, _ in TABLES["rejects"]])
    t["summary"] = spark.createDataFrame(
        [(run_id, as_of, read.lines_read, read.accepted, read.duplicates,
          read.lines_read - read.accepted - read.duplicates, int(started * US), int(time.time() * US))],
        "run_id string, as_of long, lines_read long, accepted long, duplicates long, rejected long, "
        "started_at long, finished_at long",
    ).select(
        "run_id", F.timestamp_micros("as_of").alias("as_of"), "lines_read", "accepted", "duplicates",
        "rejected", F.timestamp_micros("started_at").alias("started_at"),
        F.timestamp_micros("finished_at").alias("finished_at"),
    )
    return JobResult({name: conform(df, name) for name, df in t.items()}, as_of, read)


def conform(df: DataFrame, table: str) -> DataFrame:
    """The table in its declared column order and types (a cast where Spark inferred another)."""
    return df.select(*[F.col(f"`{n}`").cast(k).alias(n) for n, k in TABLES[table]])


def rows_of(df: DataFrame) -> list[dict[str, Any]]:
    """A table's rows as dicts (for tests and small tables)."""
    return [r.asDict(recursive=True) for r in df.collect()]
