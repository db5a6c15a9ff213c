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
from pfscope.spark_jobs.exchange.event_files import AppendFiles, day_of_file, fill_days
from pfscope.spark_jobs.exchange.grouped import FolderDeriver, MessageBuilder, MessageGrouper
from pfscope.spark_jobs.exchange.identity import ReplidMap, norm_server
from pfscope.spark_jobs.exchange.inferred import assign_fids, build_topology, version_of
from pfscope.spark_jobs.exchange.reasons import reason_key
from pfscope.spark_jobs.exchange.translate import ROOT, Link, solve_replids
from pfscope.spark_jobs.ingest import build_merges as merges
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
LINES_PER_PART = 200_000  # event lines per range of the final sort (about 40 MB)


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
    """``Built`` (without the event lines) and what writes the event lines to a file."""

    built: Built
    write_events: Callable[[Path, Path], None]  # events.jsonl, and the folder of the log by day and folder


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
) -> SparkBuilt:
    """Steps 2 to 5 of ``build_events`` over the kept records (``kept``: ``RECORD_COLUMNS`` and
    ``msg_key``; ``records`` of them, a partition per ``per_part``; ``kept_servers``: their
    servers and senders), equal to it; ``acc`` counts the records rejected here, as it does.
    ``timings`` gets each step's seconds."""
    clock = [time.perf_counter()]

    def lap(name: str) -> None:
        if timings is not None:
            now = time.perf_counter()
            timings["build: " + name] = now - clock[0]
            clock[0] = now

    known = set(kept_servers) | set(error_servers)
    # 1. grouped by message (kept on the executors' disks for step 3; the records without a key
    # are one group, rejected there), message_keys, links, hints
    # a partition per ``per_part`` records, up to the session's shuffle partitions: on a small
    # share, each task's fixed cost outweighs its share of the work
    most = int(spark.conf.get("spark.sql.shuffle.partitions") or 8)
    parts = max(1, min(most, -(-records // per_part)))
    keyed = (
        kept.repartition(parts, "msg_key")
        .sortWithinPartitions("msg_key", "file_idx", "record")
        .persist(StorageLevel.DISK_ONLY)
    )
    try:
        return _built(spark, keyed, parts, work, known, error_servers, acc, replids, topology, lap)
    finally:
        keyed.unpersist()


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
    kinds (what the driver merges) come back to the driver, by kind."""
    keys = (key,) if isinstance(key, str) else key
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
        with KindFiles(
            path, row_schema, "out", f"part-{task.partitionId():05d}", compression="none", dictionary=[]
        ) as files:
            for row in _grouped_rows(
                batches, lambda r: tuple(r[k] for k in keys), it.group, getattr(it, "finish", None)
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


def _built(
    spark: SparkSession,
    keyed: DataFrame,
    parts: int,
    work: str,
    known: set[str],
    error_servers: set[str],
    acc: Accounting,
    replids: dict[tuple[str, int], str] | None,
    topology: Topology | None,
    lap: Callable[[str], None],
) -> SparkBuilt:
    groups, small = _step(
        keyed,
        GROUP_SCHEMA,
        "msg_key",
        lambda: MessageGrouper(known),
        f"{work}/groups",
        many=("link", "hint", "servers"),
        few=("reject",),
    )
    lap("groups")

    # 2. the REPLID table on the driver
    topo_by_server: dict[str, str] = {}
    if topology is not None:
        for st in topology.stores.values():
            topo_by_server.setdefault(norm_server(st.server), st.name)
    servers = merges.servers_named(groups) | set(error_servers)
    given = dict(replids or {})
    own = {s: given.get((s, 1)) or topo_by_server.get(s) or s for s in sorted(servers)}
    rmap = _replids(spark, groups, own, given)
    lap("replids")

    # 3. messages built, over the same partitions (no second shuffle); folders merged, FIDs
    made, merged = _step(
        keyed,
        MSG_SCHEMA,
        "msg_key",
        lambda: MessageBuilder(known, rmap, own),
        f"{work}/messages",
        many=("msg", "folder", "record"),
        few=("reject",),
    )
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
    rejects = sorted(
        small["reject"] + merged["reject"] + last["reject"], key=lambda r: (r["phase"], r["sort"])
    )
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
        _write_lines(derived.where(F.col("out") == "line"), n, f"{work}/lines", path, folder)

    return SparkBuilt(Built([], topo_json, rows, own, part), write_events)


def _joined(parts: list[Path], path: Path) -> None:
    """``parts`` joined in their order into ``path``."""
    with open(path, "wb") as fh:
        for f in parts:
            with open(f, "rb") as part_file:
                shutil.copyfileobj(part_file, fh, 1 << 20)


def _write_lines(lines: DataFrame, n: int, work: str, path: Path, folder: Path) -> None:
    """``events.jsonl`` and the log by day and folder (``event_files``) from the lines as the
    workers made them, in one pass: the lines sorted in ranges of at most ``LINES_PER_PART``,
    each range written by its worker whole and a file per name, then the files joined in range
    order. A line with a message only goes in the file of the last send of it in the log (a
    broadcast of the sends). The lines never pass through the driver's JVM (converting 172,000
    rows for Python cost more than writing them) nor its Python (parsing them again there to
    place them: 11 s at 1M events)."""
    sends = (
        lines.where("skey IS NOT NULL")
        .groupBy("skey")
        .agg(F.max_by("sname", "sort").alias("via"))
        .withColumnRenamed("skey", "mkey")
    )
    root = os.path.abspath(work)  # a worker's working folder is not the driver's
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        from pyspark import TaskContext

        task = TaskContext.get()
        assert task is not None  # a Spark task runs this
        # an attempt writes apart and is renamed in whole: a task tried again starts afresh
        mine = Path(root) / f"part-{task.partitionId():05d}"
        attempt = Path(root) / f".attempt-{task.partitionId():05d}-{task.attemptNumber()}"
        shutil.rmtree(attempt, ignore_errors=True)
        (attempt / "by_name").mkdir(parents=True)
        with (
            AppendFiles(attempt / "by_name") as by_name,
            open(attempt / "range", "w", encoding="utf-8") as whole,
        ):
            for batch in batches:
                names, texts = batch.column(0).to_pylist(), batch.column(1).to_pylist()
                for name, text in zip(names, texts, strict=True):
                    line = text + "\n"
                    whole.write(line)
                    by_name.write(name, line)
        shutil.rmtree(mine, ignore_errors=True)
        attempt.rename(mine)
        return iter(())

    lines.join(F.broadcast(sends), "mkey", "left").selectExpr(
        "coalesce(via, name) AS name", "sort", "text"
    ).repartitionByRange(n, "sort").sortWithinPartitions("sort").select("name", "text").mapInArrow(
        run, "n long"
    ).collect()
    ranges = sorted(Path(root).glob("part-*"))
    _joined([r / "range" for r in ranges], path)
    folder.mkdir(parents=True)
    named: dict[str, list[Path]] = {}
    for r in ranges:
        for f in sorted((r / "by_name").iterdir()):
            named.setdefault(f.name, []).append(f)
    for name, files in named.items():
        _joined(files, folder / name)
    fill_days(folder, {day_of_file(name) for name in named})


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
