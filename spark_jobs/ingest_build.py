"""Ingest's build steps on Spark (REPLIDs, messages, derivation), so the driver holds no event.

The reference (``ingest.build.build_events``) runs them over the whole share in one process.
Here each is split where its rule allows, the rule itself run as it is (``ingest.grouped``):

1. The kept records are grouped by message key (a shuffle); each group goes through
   ``message_keys`` in a worker, which gives its REPLID links and hints.
2. The driver solves the REPLID table (``solve_replids``) from the links, which it holds as one
   small integer each (the distinct links are few), in the reference's order.
3. Each group goes through ``build_messages`` in a worker (a second shuffle by key), which gives
   its messages, one per folder, and what it says of folders; the driver merges the folders
   (first path in the reference's order) and assigns FIDs.
4. Each folder's messages, sorted by time in a partition by folder, go through ``derive_keyed``
   in a worker: a folder's lines depend on its own messages only.
5. The event lines are written from a global sort by their place in the log; the rejects (few)
   and the statistics are merged on the driver in the reference's order.

Each step writes its rows to Parquet under the run's work folder, partitioned by kind.
"""

from __future__ import annotations

import pickle
from array import array
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_jobs.ingest.build import Built
from spark_jobs.ingest.classify import Accounting
from spark_jobs.ingest.grouped import RECORD_COLUMNS, folder_derived, message_built, message_group
from spark_jobs.ingest.identity import ReplidMap, norm_server
from spark_jobs.ingest.inferred import assign_fids, build_topology, version_of
from spark_jobs.ingest.messages import Folders
from spark_jobs.ingest.reasons import R_SENDER_UNKNOWN, reason_key
from spark_jobs.ingest.translate import ROOT, Link, solve_replids
from spark_jobs.ingest_spark import _arrow
from spark_jobs.model.topology import VERSIONS, Topology

S, L, B, BIN = T.StringType(), T.LongType(), T.BooleanType(), T.BinaryType()
_REJECT = [("phase", L), ("sort", T.ArrayType(L)), ("source", S), ("record", L), ("record_id", L),
           ("server", S), ("event_id", L), ("time_text", S), ("reason", S)]
GROUP_SCHEMA = T.StructType([T.StructField(n, t) for n, t in [
    ("out", S), *_REJECT, ("key", S), ("g_file", L), ("g_rec", L), ("seq", L), ("fmt", S), ("raw_server", S),
    ("provider", S), ("ts", L), ("direction", S), ("ev", BIN), ("sender", S), ("dn_server", S), ("site", S),
    ("v2003", B), ("v2007", B), ("v55", B), ("s", S), ("a", L), ("r", S), ("b", L)]])
MSG_SCHEMA = T.StructType([T.StructField(n, t) for n, t in [
    ("out", S), *_REJECT, ("fs", S), ("fg", L), ("ps", S), ("pg", L), ("sent_at", L), ("g_file", L), ("g_rec", L),
    ("seq", L), ("synthesized", B), ("received", B), ("msg", BIN), ("direction", S), ("text", S)]])
DERIVED_SCHEMA = T.StructType([T.StructField(n, t) for n, t in [*_REJECT, ("out", S), ("text", S), ("seq", L)]])
BATCH_ROWS = 2_000


def _streamed(schema: T.StructType, key: Callable[[dict[str, Any]], Any],
              each: Callable[[list[dict[str, Any]]], Iterator[dict[str, Any]]]) -> Callable[..., Any]:
    """A ``mapInArrow`` function over a partition sorted by ``key``: ``each`` gets every run of
    rows with one key (a group may span batches), and its rows leave in batches."""
    names = schema.fieldNames()

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        arrow_schema = pa.schema([pa.field(f.name, _arrow(f.dataType)) for f in schema.fields])
        out: list[dict[str, Any]] = []

        def flush() -> Any:
            batch = pa.RecordBatch.from_pylist([{n: r.get(n) for n in names} for r in out], schema=arrow_schema)
            out.clear()
            return batch

        group: list[dict[str, Any]] = []
        current: Any = None
        for batch in batches:
            for row in batch.to_pylist():
                k = key(row)
                if group and k != current:
                    out.extend(each(group))
                    group = []
                current = k
                group.append(row)
                if len(out) >= BATCH_ROWS:
                    yield flush()
        if group:
            out.extend(each(group))
        if out:
            yield flush()

    return run


@dataclass
class SparkBuilt:
    """``Built`` (without the event lines) and the event lines, streamed from their sort."""

    built: Built
    lines: Callable[[], Iterator[str]]


class _Links:
    """The REPLID links in the reference's order, one integer each: walked once per round."""

    def __init__(self, distinct: list[Link], ids: array):
        self.distinct, self.ids = distinct, ids

    def __iter__(self) -> Iterator[Link]:
        return map(self.distinct.__getitem__, self.ids)


def build_on_spark(spark: SparkSession, kept: DataFrame, work: str, error_servers: set[str], acc: Accounting, *,
                   replids: dict[tuple[str, int], str] | None = None, topology: Topology | None = None) -> SparkBuilt:
    """Steps 2 to 5 of ``build_events`` over the kept records (``kept``: ``RECORD_COLUMNS`` and
    ``msg_key``), equal to it; ``acc`` counts the records rejected here, as it does."""
    parts = int(spark.conf.get("spark.sql.shuffle.partitions") or 8)
    rejects: list[dict[str, Any]] = []
    for r in (kept.where(F.col("msg_key").isNull()).select("file_idx", *RECORD_COLUMNS)
              .orderBy("file_idx", "record").drop("ev").toLocalIterator()):
        rejects.append({"phase": 0, "sort": [r["file_idx"], r["record"]], "source": r["source"],
                        "record": r["record"], "record_id": r["record_id"], "server": r["server"],
                        "event_id": r["event_id"], "time_text": r["time_text"], "reason": R_SENDER_UNKNOWN})
    known = {r[0] for r in kept.select("server").union(kept.where(F.col("sender") != "").select("sender"))
             .distinct().collect()} | set(error_servers)

    # 1. messages grouped: message_keys, links, hints, members
    keyed = (kept.where(F.col("msg_key").isNotNull())
             .repartition(parts, "msg_key").sortWithinPartitions("msg_key", "file_idx", "record"))
    keyed.mapInArrow(_streamed(GROUP_SCHEMA, lambda r: r["msg_key"],
                               lambda rows: message_group(rows, known)), GROUP_SCHEMA) \
        .write.mode("overwrite").partitionBy("out").parquet(f"{work}/groups")
    groups = spark.read.schema(GROUP_SCHEMA).parquet(f"{work}/groups")
    members = groups.where(F.col("out") == "member")

    # 2. the REPLID table on the driver
    topo_by_server: dict[str, str] = {}
    if topology is not None:
        for st in topology.stores.values():
            topo_by_server.setdefault(norm_server(st.server), st.name)
    servers = {r[0] for r in members.select("server").union(members.select("sender"))
               .union(members.select("dn_server")).distinct().collect() if r[0]} | set(error_servers)
    given = dict(replids or {})
    own = {s: given.get((s, 1)) or topo_by_server.get(s) or s for s in sorted(servers)}
    rmap = ReplidMap(given=given)
    link_rows = groups.where(F.col("out") == "link")
    distinct: list[Link] = [(r["s"], r["a"], r["r"], r["b"]) for r in link_rows.select("s", "a", "r", "b")
                            .distinct().collect()]
    ids = array("i")
    if distinct:
        table = spark.createDataFrame([(*k, i) for i, k in enumerate(distinct)],
                                      "s string, a long, r string, b long, id int")
        got = (link_rows.join(F.broadcast(table), ["s", "a", "r", "b"]).orderBy("g_file", "g_rec", "seq")
               .select("id").toArrow())
        ids.frombytes(got.column(0).to_numpy().astype("int32").tobytes())
    hints = sorted(groups.where(F.col("out") == "hint").groupBy("s", "a", "r")
                   .agg(F.min(F.struct("g_file", "g_rec", "seq")).alias("first")).collect(),
                   key=lambda h: tuple(h["first"]))
    solve_replids(_Links(distinct, ids), [(h["s"], h["a"], h["r"]) for h in hints], own, rmap)

    # 3. messages built, by key again
    built_fn = _streamed(MSG_SCHEMA, lambda r: r["key"], lambda rows: message_built(rows, rmap, own))
    (members.repartition(parts, "key").sortWithinPartitions("key", "seq").mapInArrow(built_fn, MSG_SCHEMA)
     .write.mode("overwrite").partitionBy("out").parquet(f"{work}/messages"))
    made = spark.read.schema(MSG_SCHEMA).parquet(f"{work}/messages")
    msgs = made.where(F.col("out") == "msg")
    folders = Folders()
    order = F.struct("g_file", "g_rec")
    for r in made.where(F.col("out") == "path").groupBy("fs", "fg").agg(F.min_by("text", order).alias("t")).collect():
        folders.paths[(r["fs"], r["fg"])] = r["t"]
    for r in (made.where(F.col("out") == "parent").groupBy("fs", "fg")
              .agg(F.min_by(F.struct("ps", "pg"), order).alias("p")).collect()):
        folders.parents[(r["fs"], r["fg"])] = (r["p"]["ps"], r["p"]["pg"])
    for r in made.where(F.col("out") == "seen").select("fs", "fg", "text").distinct().collect():
        folders.seen_at[(r["fs"], r["fg"])].add(r["text"])
    all_stores = sorted(set(own.values()) | (set(topology.stores) if topology else set()))
    keys = {(r["fs"], r["fg"]) for r in msgs.where(F.col("fg").isNotNull()).select("fs", "fg").distinct().collect()}
    keys |= set(folders.paths) | set(folders.parents.values())
    fids = assign_fids(folders, (k for k in keys if k != ROOT), topology, all_stores)
    replicas: dict[str, list[str]] = {}
    for k, fid in fids.items():
        given_f = topology.folders.get(fid) if topology else None
        replicas[fid] = list(given_f.replicas) if given_f is not None else sorted(folders.seen_at.get(k, set()))

    # 4. derivation, folder by folder
    def derive(rows: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        return folder_derived([pickle.loads(r["msg"]) for r in rows], fids, replicas, all_stores)

    (msgs.repartition(parts, "fs", "fg").sortWithinPartitions("fs", "fg", "sent_at", "g_file", "g_rec", "seq")
     .mapInArrow(_streamed(DERIVED_SCHEMA, lambda r: (r["fs"], r["fg"]), derive), DERIVED_SCHEMA)
     .write.mode("overwrite").partitionBy("out").parquet(f"{work}/derived"))
    derived = spark.read.schema(DERIVED_SCHEMA).parquet(f"{work}/derived")

    # 5. rejects (few), accounting, statistics, topology
    cols = [n for n, _ in _REJECT]
    for df in (groups, made, derived):
        rejects.extend(r.asDict() for r in df.where(F.col("out") == "reject").select(*cols).collect())
    rejects.sort(key=lambda r: (r["phase"], r["sort"]))
    rows: list[dict[str, Any]] = []
    seen: set[tuple[str, int]] = set()
    for r in rejects:
        if (r["source"], r["record"]) in seen:  # a record of a message in several folders: once
            continue
        seen.add((r["source"], r["record"]))
        rows.append({"source": r["source"], "record": r["record"], "record_id": r["record_id"],
                     "server": r["server"], "event_id": r["event_id"], "time": r["time_text"],
                     "reason": r["reason"], "text": None})
        acc.reasons[reason_key(r["reason"])] += 1
        acc.per_server[r["server"]]["rejected"] += 1
    late = [(r["source"], r["record"]) for r in rejects if r["phase"] == 3]
    used = made.where(F.col("out") == "used")
    if late:
        used = used.join(F.broadcast(spark.createDataFrame(late, "source string, record long")),
                         ["source", "record"], "left_anti")
    n_used = 0
    for g in sorted(used.groupBy("server", "direction", "text")
                    .agg(F.count("*").alias("n"), F.min(F.struct("g_file", "g_rec", "seq")).alias("first")).collect(),
                    key=lambda g: tuple(g["first"])):
        acc.per_server[g["server"]][f"{g['direction']} {g['text']}"] += g["n"]
        acc.per_type[g["text"]][g["direction"]] += g["n"]
        n_used += g["n"]
    stats: Counter[str] = Counter()
    for s in sorted(derived.where(F.col("out") == "stat").groupBy("text")
                    .agg(F.sum("seq").alias("n"), F.min("sort").alias("first")).collect(),
                    key=lambda s: list(s["first"])):
        stats[s["text"]] = s["n"]
    counts = msgs.agg(F.count("*").alias("total"),
                      F.count(F.when(~F.col("synthesized") & ~F.col("received"), 1)).alias("out_only"),
                      F.count(F.when(F.col("synthesized"), 1)).alias("in_only")).first()
    assert counts is not None
    sites = {r["dn_server"]: r["site"] for r in members.where(F.col("site").isNotNull()).groupBy("dn_server")
             .agg(F.min_by("site", F.struct("g_file", "g_rec", "seq")).alias("site")).collect()}
    out = F.col("direction") == "out"
    versions: dict[str, str] = {}
    for r in members.groupBy("server").agg(
            F.max(out).alias("any_out"),
            *[F.max(c).alias(c) for c in ("v2003", "v2007", "v55")],
            *[F.max(out & F.col(c)).alias("out_" + c) for c in ("v2003", "v2007", "v55")]).collect():
        pre = "out_" if r["any_out"] else ""
        versions[r["server"]] = version_of(*(bool(r[pre + c]) for c in ("v2003", "v2007", "v55")))
    topo_json, added = build_topology(topology, own, sites, versions, folders, fids, replicas)
    part: dict[str, Any] = {
        "used": n_used,
        "events_written": {k: v for k, v in stats.items() if k in ("send", "receive", "change")},
        "derived": {k: v for k, v in stats.items() if k not in ("send", "receive", "change")},
        "messages": {"total": counts["total"], "outgoing_without_incoming": counts["out_only"],
                     "incoming_without_outgoing": counts["in_only"]},
        "stores": own,
        "replids": rmap.report(),
        "inferred": {"stores_added_to_topology": added["stores"], "sites_added": added["sites"],
                     "folders_added": added["folders"]},
    }
    assert all(v in VERSIONS for v in versions.values())

    def lines() -> Iterator[str]:
        q = derived.where(F.col("out") == "line").orderBy("sort").select("text")
        for r in q.toLocalIterator(prefetchPartitions=True):
            yield r[0] + "\n"

    return SparkBuilt(Built([], topo_json, rows, own, part), lines)
