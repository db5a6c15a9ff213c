"""Ingest's build steps 4 and 5 on Spark: each folder's event lines derived in a worker, then what
the message steps found merged (``build_merges``) with the derivation's rejects and statistics."""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pfscope.spark_jobs.exchange.build import Built
from pfscope.spark_jobs.exchange.classify import Accounting
from pfscope.spark_jobs.exchange.grouped import FolderDeriver
from pfscope.spark_jobs.exchange.identity import ReplidMap
from pfscope.spark_jobs.exchange.inferred import assign_fids, build_topology, version_of
from pfscope.spark_jobs.exchange.reasons import reason_key
from pfscope.spark_jobs.exchange.translate import ROOT
from pfscope.spark_jobs.ingest import build_merges as merges
from pfscope.spark_jobs.ingest.build_rows import DERIVED_SCHEMA, run_step
from pfscope.spark_jobs.ingest.event_lines import LINES_PER_PART, write_lines
from pfscope.spark_jobs.model.topology import VERSIONS, Topology


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
    derived, last = run_step(
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
