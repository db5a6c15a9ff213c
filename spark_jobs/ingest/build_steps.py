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
   in a worker: a folder's lines depend on its own messages (and its FID and replicas) only.
5. The event lines are sorted by their place in the log and written by the workers, a file per
   range, joined in order by the driver; the rejects (few) are merged on the driver in the
   reference's order, the statistics in SQL.

In each step the workers write their rows to Parquet under the run's work folder, by kind
(``worker_files``), for the next steps and the merges to read; each row is its message group's
(steps 1 and 3) or its folder's (step 4) own, so a merge holds over any set of them, and a later
run takes the rows of the groups and folders its new files do not reach from this one
(``build_cache``).
"""

from __future__ import annotations

import os
import shutil
import time
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from pfscope.spark_jobs.exchange.build import Built
from pfscope.spark_jobs.exchange.classify import Accounting
from pfscope.spark_jobs.exchange.grouped import MessageBuilder, MessageGrouper
from pfscope.spark_jobs.exchange.identity import ReplidMap, norm_server
from pfscope.spark_jobs.exchange.translate import Link, solve_replids
from pfscope.spark_jobs.ingest import build_cache
from pfscope.spark_jobs.ingest import build_merges as merges
from pfscope.spark_jobs.ingest.build_cache import BuildCache
from pfscope.spark_jobs.ingest.build_folders import Derivation, FolderLayers, derive_folders
from pfscope.spark_jobs.ingest.build_rows import GROUP_SCHEMA, MSG_SCHEMA, run_step
from pfscope.spark_jobs.ingest.incremental import BUILD_SUFFIX, LAYER_SUFFIX
from pfscope.spark_jobs.model.topology import Topology


@dataclass
class SparkBuilt:
    """``Built`` (without the event lines) and what writes the event lines to a file; the rows kept
    for the next run (``build_cache``) and how the build went, said in a few words."""

    built: Built
    write_events: Callable[[Path, Path], None]  # events.jsonl, and the folder of the log by block and folder
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
    """The REPLID links in the reference's order, one integer each."""

    def __init__(self, distinct: list[Link], ids: array[int]):
        self.distinct, self.ids = distinct, ids

    def __iter__(self) -> Iterator[Link]:
        return map(self.distinct.__getitem__, self.ids)

    def __getitem__(self, i: int) -> Link:
        return self.distinct[self.ids[i]]


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
        self.last: DataFrame | None = None  # the keys the layers and this run built (``_with_kept``)

    def run(self, kept: DataFrame, *, incremental: bool, why: str = "") -> SparkBuilt:
        shutil.rmtree(self.work, ignore_errors=True)  # an incremental attempt's rows, if it gave up
        self.last = None
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
        old = self.layers.cache
        # a run that would keep MAX_LAYERS writes every row it used as one layer
        compact_to = f"{self.work.removesuffix(BUILD_SUFFIX)}{LAYER_SUFFIX}"
        compact = touched is not None and build_cache.compacts(old)
        try:
            derivation, cache = self._built(keyed, touched, compact_to if compact else None)
        finally:
            keyed.unpersist()
        files, sources = self.layers.files, self.layers.sources
        if compact:
            cache.layers = [build_cache.Layer(os.path.basename(compact_to), files, sources, whole=True)]
        else:
            layer = build_cache.Layer(os.path.basename(self.work), files, sources, whole=touched is None)
            cache.layers = [*(old.layers if touched is not None and old else []), layer]
        if touched is not None and old is not None:
            how = (
                f"built again {touched.count():,} message keys and {derivation.folders:,} of "
                f"{derivation.named:,} folders, the others kept from {len(old.layers)} earlier run(s)"
                + (", all written as one layer" if compact else "")
            )
        else:
            how = f"built whole: {why}"
        return SparkBuilt(derivation.built, derivation.write_events, cache, how)

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
        if self.last is None:  # the same keys for both message steps: collected once
            self.last = build_cache.last_built(self.spark, self.layers.rows_root, cache, touched)
        old = build_cache.kept_rows(
            self.spark, self.layers.rows_root, cache, kind, schema, self.layers.files, self.last
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

    def _built(
        self, keyed: DataFrame, touched: DataFrame | None, compact_to: str | None
    ) -> tuple[Derivation, BuildCache]:
        """Steps 1 to 5 over the keyed records (the groups ``touched`` names, or all): what they
        found, and what the rows were built with (its layers for ``run`` to say); every row used
        written to ``compact_to`` as one layer, if given, with the event lines."""
        spark, work, known, cache = self.spark, self.work, self.known, self.layers.cache
        groups = run_step(
            keyed,
            GROUP_SCHEMA,
            "msg_key",
            lambda: MessageGrouper(known),
            f"{work}/groups",
            ("link", "hint", "servers", "reject"),
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
        made = run_step(
            keyed,
            MSG_SCHEMA,
            "msg_key",
            lambda: MessageBuilder(known, rmap, own),
            f"{work}/messages",
            ("msg", "folder", "record", "reject"),
        )
        kept = None
        if touched is not None and cache is not None:
            rows_root, files = self.layers.rows_root, self.layers.files
            kept = FolderLayers(rows_root, cache, files, touched, made)
        made = self._with_kept(made, "messages", MSG_SCHEMA, touched)
        derived = derive_folders(
            spark,
            groups,
            made,
            work,
            self.parts,
            own,
            rmap,
            self.topology,
            self.acc,
            self.lap,
            kept,
            compact_to,
        )
        return derived, build_cache.BuildCache(self.layers.given, sorted(known), own, stores)
