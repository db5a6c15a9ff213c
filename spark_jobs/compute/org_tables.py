"""The organisation's tables beside the fold's: its stores (their status, and every period one
was down), its folders and their replica lists over time, from the topology and the events; and
the columns the replicas table takes from them (a folder's path, the content at risk). A full
run computes them whole; a refresh starts again the folders it restarts (``restarts``)."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pfscope.spark_jobs.compute.frames import local_frame
from pfscope.spark_jobs.model.org import OrgContext
from pfscope.spark_jobs.model.replay import store_periods_table as store_period_rows
from pfscope.spark_jobs.model.tables import TABLES
from pfscope.spark_jobs.model.topology import HIERARCHY_FID, Folder, Topology


def _latest(df: DataFrame, by: str) -> DataFrame:
    return (
        df.selectExpr("*", f"row_number() OVER (PARTITION BY {by} ORDER BY ts DESC, seq DESC) AS _n")
        .filter("_n = 1")
        .drop("_n")
    )


def stores_table(spark: SparkSession, topo: Topology, events: DataFrame) -> DataFrame:
    rows = [(s.name, s.server, s.site, s.version, s.preferred_backfill_source) for s in topo.stores.values()]
    base = local_frame(
        spark,
        rows,
        dict.fromkeys(("store", "server", "site", "version", "preferred_backfill_source"), "string"),
    )
    status = events.filter("kind = 'store_status'")
    last = _latest(status, "store").selectExpr("store", "status")
    # a store that is down has been since its first 'down' line after its last 'up' one
    since = (
        status.selectExpr(
            "store",
            "ts",
            "status",
            "struct(ts, seq) AS k",
            "max(CASE WHEN status = 'up' THEN struct(ts, seq) END) OVER (PARTITION BY store) AS up",
        )
        .filter("status = 'down' AND (up IS NULL OR k > up)")
        .groupBy("store")
        .agg({"ts": "min"})
        .withColumnRenamed("min(ts)", "since")
    )
    return (
        base.join(last, "store", "left")
        .join(since, "store", "left")
        .selectExpr(
            "store",
            "server",
            "site",
            "version",
            "coalesce(status, 'up') AS status",
            "preferred_backfill_source",
            "CASE WHEN status = 'down' THEN timestamp_micros(since) END AS down_since",
        )
    )


def store_periods_table(
    spark: SparkSession, topo: Topology, status: Sequence[tuple[str, int, int, bool]]
) -> DataFrame:
    """Every period a store was down by the as-of, from the up/down lines ``(store, ts, seq, down)``
    (a few, on the driver), by the replay's own function."""
    org = OrgContext(topo)
    for store, ts, seq, down in sorted(status, key=lambda s: (s[1], s[2])):
        org.add_status(store, ts, seq, down)
    rows = [(r["store"], r["down_at"], r["up_at"]) for r in store_period_rows(org)]
    return local_frame(spark, rows, {"store": "string", "down_at": "long", "up_at": "long"}).selectExpr(
        "store", "timestamp_micros(down_at) AS down_at", "timestamp_micros(up_at) AS up_at"
    )


def with_risk(replicas: DataFrame, stores: DataFrame) -> DataFrame:
    """Content at risk of each replica: its really unique CNs when it is delete-pending or its store
    is down at the as-of (``rules.reality.at_risk``; the differential tests hold the two equal).
    After the fold: a refresh carries the rows of replicas whose store went down since."""
    down = stores.filter("status = 'down'").selectExpr("store", "true AS store_down")
    risky = "health = 'delete_pending' OR coalesce(store_down, false)"
    return (
        replicas.drop("at_risk_cnset", "at_risk_count")
        .join(F.broadcast(down), "store", "left")
        .selectExpr(
            "*",
            f"CASE WHEN {risky} THEN really_unique_cnset ELSE '' END AS at_risk_cnset",
            f"CASE WHEN {risky} THEN really_unique_count ELSE 0 END AS at_risk_count",
        )
        .drop("store_down")
    )


def replica_lists_table(spark: SparkSession, topo: Topology, events: DataFrame) -> DataFrame:
    """Every content folder's replica list over time: the topology's (``at`` null), then each
    replica-list event (the replay's ``replica_lists_table``)."""
    base = topology_lists(spark, topo)
    changes = events.filter("kind = 'replicas'").selectExpr("fid", "ts", "seq", "replicas", "path")
    return base.unionByName(changes).selectExpr(
        "fid", "timestamp_micros(ts) AS at", "seq", "replicas", "path"
    )


def folders_table(spark: SparkSession, topo: Topology, events: DataFrame) -> DataFrame:
    return folders_from(topology_folders(spark, topo), events, events.filter("kind = 'replicas'"))


def topology_folders(spark: SparkSession, topo: Topology, only: set[str] | None = None) -> DataFrame:
    """The folders table's start from the topology (the hierarchy's replicas: every store), of
    the folders ``only`` names (None: all; a refresh's restarted folders)."""
    rows: list[tuple[str, str, str | None, list[str]]] = (
        [(HIERARCHY_FID, "", None, list(topo.store_names()))] if only is None or HIERARCHY_FID in only else []
    )
    rows += [(f.fid, f.path, f.parent, list(f.replicas)) for f in _folders(topo, only)]
    return local_frame(
        spark, rows, {"fid": "string", "path": "string", "parent": "string", "replicas": "array<string>"}
    )


def topology_lists(spark: SparkSession, topo: Topology, only: set[str] | None = None) -> DataFrame:
    """``replica_lists``'s start from the topology (``ts`` null), of the folders ``only`` names."""
    return local_frame(
        spark,
        [(f.fid, None, None, list(f.replicas), f.path) for f in _folders(topo, only)],
        {"fid": "string", "ts": "long", "seq": "long", "replicas": "array<string>", "path": "string"},
    )


def _folders(topo: Topology, only: set[str] | None) -> list[Folder]:
    return [f for f in topo.folders.values() if only is None or f.fid in only]


def folders_from(base: DataFrame, events: DataFrame, lists: DataFrame) -> DataFrame:
    """``base`` (fid, path, parent, replicas) with the folders ``events`` first show, and each
    folder's latest replica list and path among ``lists`` (fid, ts, seq, replicas, path)."""
    seen = events.filter("kind IN ('replicas', 'change', 'send')").selectExpr("fid").distinct()
    last_list = _latest(lists, "fid").selectExpr("fid", "replicas AS new_replicas")
    last_path = _latest(lists.filter("path IS NOT NULL"), "fid").selectExpr("fid", "path AS new_path")
    return (
        base.join(seen, "fid", "full")
        .join(last_list, "fid", "left")
        .join(last_path, "fid", "left")
        .selectExpr(
            "fid",
            "coalesce(new_path, path, '') AS path",
            "parent",
            "coalesce(new_replicas, replicas, CAST(array() AS array<string>)) AS replicas",
        )
    )


def with_paths(replicas: DataFrame, folders: DataFrame) -> DataFrame:
    return (
        replicas.drop("path")
        .join(folders.selectExpr("fid", "path"), "fid", "left")
        .selectExpr(*[n for n, _ in TABLES["replicas"]])
    )
