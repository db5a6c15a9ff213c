"""Ingest's build steps 4 and 5 on Spark: each folder's event lines derived in a worker, then what
the message steps found merged (``build_merges``) with the derivation's rejects and statistics."""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pfscope.spark_jobs.exchange.build import Built, summary_part
from pfscope.spark_jobs.exchange.classify import Accounting
from pfscope.spark_jobs.exchange.grouped import FolderDeriver
from pfscope.spark_jobs.exchange.identity import ReplidMap
from pfscope.spark_jobs.exchange.inferred import assign_fids, build_topology, version_of
from pfscope.spark_jobs.exchange.messages import Folders
from pfscope.spark_jobs.exchange.reasons import reason_key
from pfscope.spark_jobs.exchange.translate import ROOT, FolderKey
from pfscope.spark_jobs.ingest import build_merges as merges
from pfscope.spark_jobs.ingest.build_cache import (
    FOLDER,
    BuildCache,
    folder_key,
    folders_again,
    kept_rows,
    last_built,
    moved_in_place,
)
from pfscope.spark_jobs.ingest.build_rows import DERIVED_SCHEMA, REJECT, run_step
from pfscope.spark_jobs.ingest.event_lines import LINES_PER_PART, write_lines
from pfscope.spark_jobs.ingest.stages import reject_line
from pfscope.spark_jobs.model.topology import HIERARCHY_FID, VERSIONS, Topology


@dataclass
class FolderLayers:
    """What step 4 needs to keep folders' rows from the layers (``build_cache``): the layers, this
    run's share, the message keys built again and this run's message rows."""

    rows_root: str
    cache: BuildCache
    files: list[str]
    touched: DataFrame  # one column, msg_key
    built_now: DataFrame


@dataclass
class Derivation:
    """``Built`` (without the event lines), what writes the event lines, and how many folders step 4
    derived (a folder gone among them) of those the share names (the hierarchy one of them)."""

    built: Built
    write_events: Callable[[Path, Path], None]
    folders: int
    named: int


def derive_folders(
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
    kept: FolderLayers | None,
    compact_to: str | None = None,
) -> Derivation:
    """Steps 3 (the merges), 4 and 5 over every message group's rows (``groups``, ``made``): what
    the build found, and what writes its event lines. Step 4 derives every folder, or with
    ``kept`` those ``build_cache.folders_again`` names, the others' rows taken from the layers;
    with ``compact_to``, every row used is written there as one layer, after the event lines."""
    folders, fids, replicas, all_stores = _folders(made, own, topology)
    lap("messages")

    # 4. derivation, folder by folder
    inputs = _inputs(spark, fids, replicas, all_stores)
    again = inputs
    if kept is not None:
        again = folders_again(spark, kept.rows_root, kept.cache, kept.touched, kept.built_now, inputs)
    again.write.parquet(f"{os.path.abspath(work)}/folders")  # the folders this layer derives
    again = spark.read.parquet(f"{os.path.abspath(work)}/folders").select(FOLDER)
    msgs = made.where(F.col("out") == "msg").withColumn(FOLDER, folder_key())
    if kept is not None:
        msgs = msgs.join(F.broadcast(again), FOLDER, "left_semi")
    by_folder = (
        msgs.repartition(parts, FOLDER)
        .sortWithinPartitions(FOLDER, "sent_at", "g_file", "g_rec", "seq")
        .select(FOLDER, "msg", "g_file", "g_rec", "seq")
    )  # all a folder's messages need in the worker
    derived = run_step(
        by_folder,
        DERIVED_SCHEMA,
        FOLDER,
        lambda: FolderDeriver(fids, replicas, all_stores),
        f"{work}/derived",
        ("line", "reject", "stat"),
    )
    if kept is not None:
        last = last_built(spark, kept.rows_root, kept.cache, again, key=FOLDER, built="folders")
        old = kept_rows(
            spark,
            kept.rows_root,
            kept.cache,
            "derived",
            DERIVED_SCHEMA,
            kept.files,
            last,
            key=FOLDER,
            move=moved_in_place,
        )
        derived = derived if old is None else derived.unionByName(old)
    n_again = len(fids) + 1 if kept is None else again.count()
    lap("derive")

    # 5. rejects (few), accounting, statistics, topology
    built = _summary(spark, groups, made, derived, own, rmap, topology, acc, folders, fids, replicas)
    lap("merge")

    def write_events(path: Path, folder: Path) -> None:
        n = max(parts, -(-sum(built.summary["events_written"].values()) // LINES_PER_PART))
        write_lines(derived.where(F.col("out") == "line"), n, f"{work}/lines", path, folder)
        shutil.rmtree(f"{work}/lines", ignore_errors=True)  # the layer keeps every step's rows
        if compact_to is not None:
            _write_layer(compact_to, groups=groups, messages=made, derived=derived, folders=inputs)

    return Derivation(built, write_events, n_again, len(fids) + 1)


def _write_layer(to: str, **kinds: DataFrame) -> None:
    """Every row a run used, its own and the layers', as one layer (``build_cache.compacts``), each
    kind as a step writes it (by ``out``; the folders as they are)."""
    for kind, rows in kinds.items():
        writer = rows.write.partitionBy("out") if "out" in rows.columns else rows.write
        writer.option("compression", "none").parquet(f"{to}/{kind}")


def _folders(
    made: DataFrame, own: dict[str, str], topology: Topology | None
) -> tuple[Folders, dict[FolderKey, str], dict[str, list[str]], list[str]]:
    """What the messages say of folders, each folder's FID and replicas, and every store."""
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
    return folders, fids, replicas, all_stores


def _inputs(
    spark: SparkSession, fids: dict[FolderKey, str], replicas: dict[str, list[str]], all_stores: list[str]
) -> DataFrame:
    """What each folder's lines depend on besides its messages (its FID and replicas; the
    hierarchy's: every store), as text, by folder (``FOLDER``)."""
    rows: list[tuple[str | None, int | None, str]] = [
        (k[0], k[1], json.dumps([fid, replicas[fid]])) for k, fid in fids.items()
    ]
    rows.append((None, None, json.dumps([HIERARCHY_FID, all_stores])))
    frame = spark.createDataFrame(rows, "fs string, fg long, inputs string")
    return frame.select(folder_key().alias(FOLDER), "inputs")


def _summary(
    spark: SparkSession,
    groups: DataFrame,
    made: DataFrame,
    derived: DataFrame,
    own: dict[str, str],
    rmap: ReplidMap,
    topology: Topology | None,
    acc: Accounting,
    folders: Folders,
    fids: dict[FolderKey, str],
    replicas: dict[str, list[str]],
) -> Built:
    """Step 5: the rejects in order, the accounting, the statistics and the topology."""
    phase3 = derived.where(F.col("out") == "reject").select(*(n for n, _ in REJECT)).collect()
    rejects = sorted(merges.rejects(groups, made) + phase3, key=lambda r: (r["phase"], r["sort"]))
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
    for r in sorted(merges.derived_stats(derived), key=lambda r: r["first"]):
        stats[r["text"]] = r["n"]
    counts = merges.message_counts(made)
    # the hints of a server's outgoing events, if it has any; else those of all its events
    flags = merges.version_flags(made)
    versions = {s: version_of(*(f[1:4] if f[0] else f[4:7])) for s, f in flags.items()}
    topo_json, added = build_topology(
        topology, own, merges.first_sites(made), versions, folders, fids, replicas
    )
    part = summary_part(n_used, stats, counts, own, rmap, added)
    assert all(v in VERSIONS for v in versions.values())
    return Built([], topo_json, rows, own, part)


def _rejected(rejects: list[Any], acc: Accounting) -> list[dict[str, Any]]:
    """The reject rows of the build steps in the reference's order (a record of a message in
    several folders once, at its first), counted in ``acc`` as the reference counts them."""
    rows: list[dict[str, Any]] = []
    seen: set[tuple[str, int]] = set()
    for r in rejects:
        if (r["source"], r["record"]) in seen:
            continue
        seen.add((r["source"], r["record"]))
        rows.append(reject_line(r, None))
        acc.reasons[reason_key(r["reason"])] += 1
        acc.per_server[r["server"]]["rejected"] += 1
    return rows
