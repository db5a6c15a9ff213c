"""Ingest's build steps on Spark (REPLIDs, messages, derivation), so the driver holds no event.

The reference (``exchange.build.build_events``) runs them over the whole share in one process.
Here each is split where its rule allows, the rule itself run as it is (``exchange.grouped``):

1. The kept records are grouped by message key (one shuffle, kept on the executors' disks);
   each group goes through ``message_keys`` in a worker, which gives its REPLID links and hints.
2. The driver solves the REPLID table (``solve_replids``) from the links, which it holds as one
   small integer each, in the reference's order: the distinct links are few, and one task sorts
   the integers.
3. Each group goes through ``build_messages`` in a worker, over the same partitions, which gives
   its messages, one per folder, a row per record and per folder it speaks of; what they say
   together of folders and servers is merged in SQL (``build_merges``, first in the reference's
   order), and the driver assigns the FIDs.
4. Each folder's messages, sorted by time in a partition by folder, go through ``derive_keyed``
   in a worker: a folder's lines depend on its own messages only.
5. The event lines are sorted by their place in the log and written by the workers, a file per
   range, joined in order by the driver; the rejects (few) and the statistics are merged on the
   driver in the reference's order.

In each step the workers write their rows to Parquet under the run's work folder, by kind
(``worker_files``), for the next steps and the merges to read; each row of the message steps is
its group's own, so a merge holds over any set of groups. The rejects and the derivation's
statistics (few) come back to the driver.
"""

from __future__ import annotations

import os
import shutil
import time
from array import array
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from pfscope.spark_jobs.exchange.build import Built
from pfscope.spark_jobs.exchange.classify import Accounting
from pfscope.spark_jobs.exchange.grouped import FolderDeriver, MessageBuilder, MessageGrouper
from pfscope.spark_jobs.exchange.identity import ReplidMap, norm_server
from pfscope.spark_jobs.exchange.inferred import assign_fids, build_topology, version_of
from pfscope.spark_jobs.exchange.reasons import reason_key
from pfscope.spark_jobs.exchange.translate import ROOT, Link, solve_replids
from pfscope.spark_jobs.ingest import build_cache
from pfscope.spark_jobs.ingest import build_merges as merges
from pfscope.spark_jobs.ingest.build_cache import BuildCache
from pfscope.spark_jobs.ingest.event_lines import LINES_PER_PART, write_lines
from pfscope.spark_jobs.ingest.stages import arrow_schema
from pfscope.spark_jobs.model.topology import VERSIONS, Topology
from pfscope.spark_jobs.runtime.worker_files import KindFiles

S, L, B, BIN = T.StringType(), T.LongType(), T.BooleanType(), T.BinaryType()
_REJECT = [
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
            *_REJECT,
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
            *_REJECT,
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
            *_REJECT,
            ("out", S),
            ("text", S),
            ("seq", L),
            # a line's file by day and folder (``event_files.Placement``)
            ("name", S),
            ("mkey", S),
            ("skey", S),
            ("sname", S),
        ]
    ]
)


def _grouped_rows(
    batches: Iterator[Any],
    key: Callable[[dict[str, Any]], Any],
    each: Callable[[list[dict[str, Any]]], Iterator[dict[str, Any]]],
    finish: Callable[[], Iterator[dict[str, Any]]] | None = None,
) -> Iterator[dict[str, Any]]:
    """Over a partition sorted by ``key``: ``each``'s rows for every run of rows with one key (a
    group may span batches), then ``finish``'s rows of the whole partition."""
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
    if finish is not None:
        yield from finish()


@dataclass
class SparkBuilt:
    """``Built`` (without the event lines) and what writes the event lines to a file; the rows kept
    for the next run (``build_cache``) and how the build went, said in a few words."""

    built: Built
    write_events: Callable[[Path, Path], None]  # events.jsonl, and the folder of the log by day and folder
    cache: BuildCache
    how: str


@dataclass
class Layers:
    """What an incremental build needs: the last run's layers (``build_cache``), where they are,
    this run's share (its file keys in order) and which of its files are new."""

    cache: BuildCache | None
    rows_root: str  # the state's rows/, this run's build folder among them
    given: str  # ``--replids``, ``--topology`` and ``--strict`` (``incremental.built_from``)
    files: list[str]  # "" for a file that could not be read (its key changes every run)
    sources: list[str]
    new: list[int]  # the new files' indexes
    new_records: int


class _Stale(Exception):
    """What the layers' rows were built with no longer holds (found after step 1 or 2)."""


class _Links:
    """The REPLID links in the reference's order, one integer each: walked once per round."""

    def __init__(self, distinct: list[Link], ids: array[int]):
        self.distinct, self.ids = distinct, ids

    def __iter__(self) -> Iterator[Link]:
        return map(self.distinct.__getitem__, self.ids)


def build_on_spark(
    spark: SparkSession,
    kept: DataFrame,
    records: int,
    work: str,
    kept_servers: set[str],
    error_servers: set[str],
    acc: Accounting,
    *,
    replids: dict[tuple[str, int], str] | None = None,
    topology: Topology | None = None,
    per_part: int = 25_000,
    timings: dict[str, float] | None = None,
    layers: Layers,
) -> SparkBuilt:
    """Steps 2 to 5 of ``build_events`` (the build steps 1 to 5 here) over the kept records (``kept``: ``RECORD_COLUMNS`` and
    ``msg_key``; ``records`` of them, a partition per ``per_part``; ``kept_servers``: their
    servers and senders), equal to it; ``acc`` counts the records rejected here, as it does. The
    message steps run over the groups the new files reach when ``layers`` allow (``build_cache``),
    else over all. ``timings`` gets each step's seconds."""
    clock = [time.perf_counter()]

    def lap(name: str) -> None:
        if timings is not None:
            now = time.perf_counter()
            timings["build: " + name] = now - clock[0]
            clock[0] = now

    known = set(kept_servers) | set(error_servers)
    # a partition per ``per_part`` records, up to the session's shuffle partitions: on a small
    # share, each task's fixed cost outweighs its share of the work
    most = int(spark.conf.get("spark.sql.shuffle.partitions") or 8)
    parts = max(1, min(most, -(-records // per_part)))
    b = _Build(spark, work, parts, known, error_servers, acc, replids, topology, layers, per_part, lap)
    why = build_cache.why_whole(layers.cache, layers.given, layers.files, layers.sources, known)
    if not why:
        try:
            return b.run(kept, incremental=True)
        except _Stale as e:
            why = str(e)
    return b.run(kept, incremental=False, why=why)


def _step(
    df: DataFrame,
    schema: T.StructType,
    key: str | tuple[str, ...],
    make: Callable[[], Any],
    path: str,
    many: tuple[str, ...],
    few: tuple[str, ...],
) -> tuple[DataFrame, dict[str, list[Any]]]:
    """``make()``'s ``group`` over each run of one ``key`` in each partition of ``df``, then its
    ``finish`` (one object per partition). Their rows of the ``many`` kinds are written by the
    workers to ``path`` by kind (``out``), uncompressed and without dictionaries (read once or
    twice; their binary values all differ) and read back as one DataFrame; those of the ``few``
    kinds (what the driver merges) come back to the driver, by kind. A row carries its group's
    ``key`` when that is one column of ``schema`` (a layer's rows are found by it: ``build_cache``)."""
    keys = (key,) if isinstance(key, str) else key
    tag = key if isinstance(key, str) and key in schema.fieldNames() else None
    path = os.path.abspath(path)  # a worker's working folder is not the driver's
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa
        from pyspark import TaskContext

        it = make()
        row_schema = arrow_schema(schema)
        back: list[dict[str, Any]] = []
        task = TaskContext.get()
        assert task is not None  # a Spark task runs this

        def each(group: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
            for row in it.group(group):
                if tag is not None:
                    row[tag] = group[0][tag]
                yield row

        with KindFiles(
            path, row_schema, "out", f"part-{task.partitionId():05d}", compression="none", dictionary=[]
        ) as files:
            for row in _grouped_rows(
                batches, lambda r: tuple(r[k] for k in keys), each, getattr(it, "finish", None)
            ):
                if row["out"] in many:
                    files.add(row)
                else:
                    back.append(row)
        if back:
            yield pa.RecordBatch.from_pylist(back, schema=row_schema)  # a missing column is null

    small: dict[str, list[Any]] = {k: [] for k in few}
    for r in df.mapInArrow(run, schema).collect():
        if r["out"] not in small:
            raise RuntimeError(f"a build step made rows of kind {r['out']!r}, neither {many} nor {few}")
        small[r["out"]].append(r)
    return df.sparkSession.read.schema(schema).parquet(path), small


def _replids(
    spark: SparkSession,
    groups: DataFrame,
    own: dict[str, str],
    given: dict[tuple[str, int], str],
) -> ReplidMap:
    """The REPLID table, solved on the driver from every message's links and the hints."""
    rmap = ReplidMap(given=given)
    links = groups.where(F.col("out") == "link")
    distinct = merges.distinct_links(groups)
    ids = array("i")
    if distinct:
        table = spark.createDataFrame(
            [(*k, i) for i, k in enumerate(distinct)], "s string, a long, r string, b long, id int"
        )
        # one task sorts the ids (4 bytes a link): no sample of the keys first, as a sort by range takes
        got = (
            links.join(F.broadcast(table), ["s", "a", "r", "b"])
            .repartition(1)
            .sortWithinPartitions(*merges.PLACE)
            .select("id")
            .toArrow()
        )
        ids.frombytes(got.column(0).to_numpy().astype("int32").tobytes())
    solve_replids(_Links(distinct, ids), merges.first_hints(groups), own, rmap)
    return rmap


class _Build:
    """The build steps over one share: ``run`` them over every message group, or over the groups
    the new files reach with the others' rows from the layers (``build_cache``)."""

    def __init__(
        self,
        spark: SparkSession,
        work: str,
        parts: int,
        known: set[str],
        error_servers: set[str],
        acc: Accounting,
        replids: dict[tuple[str, int], str] | None,
        topology: Topology | None,
        layers: Layers,
        per_part: int,
        lap: Callable[[str], None],
    ):
        self.spark, self.work, self.parts, self.known = spark, work, parts, known
        self.per_part = per_part
        self.error_servers, self.acc, self.replids, self.topology = error_servers, acc, replids, topology
        self.layers, self.lap = layers, lap

    def run(self, kept: DataFrame, *, incremental: bool, why: str = "") -> SparkBuilt:
        shutil.rmtree(self.work, ignore_errors=True)  # an incremental attempt's rows, if it gave up
        touched = self._touched(kept) if incremental else None
        if touched is not None:
            # the groups the new files reach (and the records without a key: one group, rejected)
            kept = kept.join(F.broadcast(touched.withColumn("_new", F.lit(True))), "msg_key", "left")
            kept = kept.where(F.col("_new") | F.col("msg_key").isNull()).drop("_new")
            # the groups they reach hold about as many records again as the new ones; a task a core
            est = -(-3 * self.layers.new_records // self.per_part)
            per = max(1, min(self.parts, max(est, self.spark.sparkContext.defaultParallelism)))
        else:
            per = self.parts
        # 1. grouped by message (kept on the executors' disks for step 3)
        keyed = (
            kept.repartition(per, "msg_key")
            .sortWithinPartitions("msg_key", "file_idx", "record")
            .persist(StorageLevel.DISK_ONLY)
        )
        try:
            built = self._built(keyed, touched)
        finally:
            keyed.unpersist()
        old = self.layers.cache
        layer = build_cache.Layer(
            os.path.basename(self.work), self.layers.files, self.layers.sources, whole=touched is None
        )
        built.cache.layers = [*(old.layers if touched is not None and old else []), layer]
        if touched is not None and old is not None:
            n = touched.count()
            built.how = (
                f"built again {n:,} message keys, the others kept from {len(old.layers)} earlier run(s)"
            )
        else:
            built.how = f"built whole: {why}"
        return built

    def _touched(self, kept: DataFrame) -> DataFrame:
        """The message keys of the new files' records, written beside this run's rows."""
        path = f"{os.path.abspath(self.work)}/touched"
        new = F.col("file_idx").isin(self.layers.new) & F.col("msg_key").isNotNull()
        kept.where(new).select("msg_key").distinct().write.parquet(path)
        return self.spark.read.parquet(path)

    def _with_kept(
        self, rows: DataFrame, kind: str, schema: T.StructType, touched: DataFrame | None
    ) -> DataFrame:
        """This run's rows of a message step and, in an incremental build, the layers' others."""
        cache = self.layers.cache
        if touched is None or cache is None:
            return rows
        old = build_cache.kept_rows(
            self.spark, self.layers.rows_root, cache, kind, schema, self.layers.files, touched
        )
        return rows if old is None else rows.unionByName(old)

    def _own(self, groups: DataFrame) -> dict[str, str]:
        """Each server's own store: ``--replids``' REPLID 1, else the topology's, else its name."""
        topo_by_server: dict[str, str] = {}
        if self.topology is not None:
            for st in self.topology.stores.values():
                topo_by_server.setdefault(norm_server(st.server), st.name)
        servers = merges.servers_named(groups) | set(self.error_servers)
        given = dict(self.replids or {})
        return {s: given.get((s, 1)) or topo_by_server.get(s) or s for s in sorted(servers)}

    def _built(self, keyed: DataFrame, touched: DataFrame | None) -> SparkBuilt:
        spark, work, known, cache = self.spark, self.work, self.known, self.layers.cache
        groups, _ = _step(
            keyed,
            GROUP_SCHEMA,
            "msg_key",
            lambda: MessageGrouper(known),
            f"{work}/groups",
            many=("link", "hint", "servers", "reject"),
            few=(),
        )
        groups = self._with_kept(groups, "groups", GROUP_SCHEMA, touched)
        self.lap("groups")

        # 2. the REPLID table on the driver
        own = self._own(groups)
        if touched is not None and cache is not None and own != cache.own:
            raise _Stale("a server's store changed")
        rmap = _replids(spark, groups, own, dict(self.replids or {}))
        stores = build_cache.stores_of(rmap)
        if touched is not None and cache is not None and stores != cache.stores:
            raise _Stale("the REPLID table changed")
        self.lap("replids")

        # 3. messages built, over the same partitions (no second shuffle); folders merged, FIDs
        made, _ = _step(
            keyed,
            MSG_SCHEMA,
            "msg_key",
            lambda: MessageBuilder(known, rmap, own),
            f"{work}/messages",
            many=("msg", "folder", "record", "reject"),
            few=(),
        )
        made = self._with_kept(made, "messages", MSG_SCHEMA, touched)
        built, write_events = _derived(
            spark, groups, made, work, self.parts, own, rmap, self.topology, self.acc, self.lap
        )
        cache = build_cache.BuildCache(self.layers.given, sorted(known), own, stores)
        return SparkBuilt(built, write_events, cache, "")


def _derived(
    spark: SparkSession,
    groups: DataFrame,
    made: DataFrame,
    work: str,
    parts: int,
    own: dict[str, str],
    rmap: ReplidMap,
    topology: Topology | None,
    acc: Accounting,
    lap: Callable[[str], None],
) -> tuple[Built, Callable[[Path, Path], None]]:
    """Steps 3 (the merges), 4 and 5 over every message group's rows (``groups``, ``made``): what
    the build found, and what writes its event lines."""
    folders, keys = merges.folders_said(made)
    all_stores = sorted(set(own.values()) | (set(topology.stores) if topology else set()))
    keys |= set(folders.paths) | set(folders.parents.values())
    fids = assign_fids(folders, (k for k in keys if k != ROOT), topology, all_stores)
    replicas: dict[str, list[str]] = {}
    for k, fid in fids.items():
        given_f = topology.folders.get(fid) if topology else None
        replicas[fid] = (
            list(given_f.replicas) if given_f is not None else sorted(folders.seen_at.get(k, set()))
        )
    lap("messages")

    # 4. derivation, folder by folder
    by_folder = (
        made.where(F.col("out") == "msg")
        .repartition(parts, "fs", "fg")
        .sortWithinPartitions("fs", "fg", "sent_at", "g_file", "g_rec", "seq")
        .select("fs", "fg", "msg", "g_file", "g_rec", "seq")
    )  # all a folder's messages need in the worker
    derived, last = _step(
        by_folder,
        DERIVED_SCHEMA,
        ("fs", "fg"),
        lambda: FolderDeriver(fids, replicas, all_stores),
        f"{work}/derived",
        many=("line",),
        few=("reject", "stat"),
    )
    lap("derive")

    # 5. rejects (few), accounting, statistics, topology
    rejects = sorted(merges.rejects(groups, made) + last["reject"], key=lambda r: (r["phase"], r["sort"]))
    rows = _rejected(rejects, acc)
    late = [(r["source"], r["record"]) for r in rejects if r["phase"] == 3]
    n_used = 0
    for g in merges.used_counts(
        made, spark.createDataFrame(late, "source string, record long") if late else None
    ):
        acc.per_server[g["server"]][f"{g['direction']} {g['text']}"] += g["n"]
        acc.per_type[g["text"]][g["direction"]] += g["n"]
        n_used += g["n"]
    stats: Counter[str] = Counter()
    merged_stats: dict[str, list[Any]] = {}
    for r in last["stat"]:
        got = merged_stats.setdefault(r["text"], [0, list(r["sort"])])
        got[0] += r["seq"]
        got[1] = min(got[1], list(r["sort"]))
    for name, (n, _first) in sorted(merged_stats.items(), key=lambda kv: kv[1][1]):
        stats[name] = n
    counts = merges.message_counts(made)
    # the hints of a server's outgoing events, if it has any; else those of all its events
    flags = merges.version_flags(made)
    versions = {s: version_of(*(f[1:4] if f[0] else f[4:7])) for s, f in flags.items()}
    topo_json, added = build_topology(
        topology, own, merges.first_sites(made), versions, folders, fids, replicas
    )
    part: dict[str, Any] = {
        "used": n_used,
        "events_written": {k: v for k, v in stats.items() if k in ("send", "receive", "change")},
        "derived": {k: v for k, v in stats.items() if k not in ("send", "receive", "change")},
        "messages": {
            "total": counts[0],
            "outgoing_without_incoming": counts[1],
            "incoming_without_outgoing": counts[2],
        },
        "stores": own,
        "replids": rmap.report(),
        "inferred": {
            "stores_added_to_topology": added["stores"],
            "sites_added": added["sites"],
            "folders_added": added["folders"],
        },
    }
    assert all(v in VERSIONS for v in versions.values())
    lap("merge")

    def write_events(path: Path, folder: Path) -> None:
        n = max(parts, -(-sum(part["events_written"].values()) // LINES_PER_PART))
        write_lines(derived.where(F.col("out") == "line"), n, f"{work}/lines", path, folder)
        for kept_not in ("derived", "lines"):  # the layer keeps the message steps' rows only
            shutil.rmtree(f"{work}/{kept_not}", ignore_errors=True)

    return Built([], topo_json, rows, own, part), write_events


def _rejected(rejects: list[Any], acc: Accounting) -> list[dict[str, Any]]:
    """The reject rows of the build steps in the reference's order (a record of a message in
    several folders once, at its first), counted in ``acc`` as the reference counts them."""
    rows: list[dict[str, Any]] = []
    seen: set[tuple[str, int]] = set()
    for r in rejects:
        if (r["source"], r["record"]) in seen:
            continue
        seen.add((r["source"], r["record"]))
        rows.append(
            {
                "source": r["source"],
                "record": r["record"],
                "record_id": r["record_id"],
                "server": r["server"],
                "event_id": r["event_id"],
                "time": r["time_text"],
                "reason": r["reason"],
                "text": None,
            }
        )
        acc.reasons[reason_key(r["reason"])] += 1
        acc.per_server[r["server"]]["rejected"] += 1
    return rows
