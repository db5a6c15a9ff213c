"""A plan played on Spark (``pfscope plan --engine spark``): the touched folders' plays run in the
tasks, next to their fold states, instead of in the one Python process.

The play is the planner's (``forecast.planner.play_plan``), cut where it is per folder: each task
reads the touched folders' fold states (``_state/folds``, filtered to them), rebuilds the
organisation from a payload string (``stream.org_payload``: topology, up/down timeline, transits)
and plays each folder under the plan and without it (the planner's ``play_folder``); the driver gathers
the forecasts into the same :class:`PlayedPlan`. A decommission needs what every folder says
before its second play: which folders list the store (its removals: a first pass) and when
nothing of it is at risk any more (a pass per decommission that is not immediate: the planner's
``planner.stop_time`` over each task's folders, the latest of their answers taken), then the last
pass plays. The plays are deterministic, so every figure equals the plain-Python path's.

The session is the caller's (the tests, a notebook) or one built as the job's
(``runtime.session``).
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from pfscope.spark_jobs.compute.planning import PlanRun
from pfscope.spark_jobs.compute.state import STATE_DIR, TOPOLOGY, load_manifest
from pfscope.spark_jobs.compute.stream import load_state, org_payload, organisation
from pfscope.spark_jobs.model.forecast.actions import (
    Action,
    ByFolder,
    Decommission,
    ReplicaChange,
    StoreStatus,
    in_order,
)
from pfscope.spark_jobs.model.forecast.planner import (  # the planner's per-folder steps
    Decommissioned,
    FolderStart,
    PlayedPlan,
    latest_stop,
    play_folder,
    stop_time,
    touched,
)
from pfscope.spark_jobs.model.forecast.world import Transits
from pfscope.spark_jobs.model.org import OrgContext
from pfscope.spark_jobs.runtime.collector import cyclic_gc_paused

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: what a task gives back: a folder's forecasts (``blob``: the pickled pair), a folder that lists
#: a decommissioned store (``store``), or a task's latest risk of one (``at``; ``never``: one
#: that stays at risk at the horizon)
PLAYED_COLUMNS = {
    "kind": "string",
    "fid": "string",
    "store": "string",
    "at": "long",
    "never": "boolean",
    "blob": "binary",
}
PLAYED_SCHEMA = pa.schema(
    [
        ("kind", pa.string()),
        ("fid", pa.string()),
        ("store", pa.string()),
        ("at", pa.int64()),
        ("never", pa.bool_()),
        ("blob", pa.binary()),
    ]
)
PLAYED_DDL = ", ".join(f"`{c}` {k}" for c, k in PLAYED_COLUMNS.items())
#: folders whose states a task holds at once (``touched`` is per folder; this bounds a task's
#: memory and its calls over the plan's actions)
CHUNK = 256
LISTED, SAFE, PLAYED = "listed", "safe", "played"
FOLDERS_PER_TASK = 500
TASKS_PER_CORE = 4


def plan_payload(run: PlanRun) -> str:
    """What every task needs of the organisation, read from the run as ``open_run`` reads it."""
    manifest = load_manifest(run.path)
    assert manifest is not None  # ``open_run`` checked
    topology = json.loads((run.path / STATE_DIR / TOPOLOGY).read_text(encoding="utf-8"))
    status = [(store, ts, seq, down) for ts, seq, store, down in sorted(manifest.status) if ts <= run.as_of]
    return org_payload(topology, status, run.transits.as_payload())


def play_plan_spark(
    spark: SparkSession,
    run: PlanRun,
    actions: Sequence[Action],
    fids: Iterable[str],
    *,
    shortcut: bool = True,
) -> PlayedPlan:
    """``planner.play_plan`` on Spark: ``fids``: at least every folder the plan touches
    (``planning.involved_folders``); ``actions``: parsed, restores with their backups;
    ``shortcut``: as ``play_plan``'s."""
    folds = _folds(spark, run, sorted(set(fids))).persist()  # read and spread once for every pass
    try:
        return _play(folds, plan_payload(run), run.as_of, actions, shortcut)
    finally:
        folds.unpersist()


def _play(
    folds: DataFrame, payload: str, as_of: int, actions: Sequence[Action], shortcut: bool
) -> PlayedPlan:
    """``play_plan``'s steps, each pass over the folders a Spark job."""
    played: list[Action] = [a for a in in_order(actions) if not isinstance(a, Decommission)]
    out = PlayedPlan(list(actions), played)
    decommissions = [a for a in in_order(actions) if isinstance(a, Decommission)]
    listing: dict[str, list[str]] = {}
    if decommissions:
        stores = sorted({d.store for d in decommissions})
        for r in _run(folds, listed_partitions(payload, as_of, actions, stores)):
            listing.setdefault(r["store"], []).append(r["fid"])
    for d in decommissions:
        removals: list[Action] = [
            ReplicaChange(d.at, d.store, fid, False) for fid in sorted(listing.get(d.store, []))
        ]
        if d.at_once:
            down_at: int | None = d.at
        else:
            latest = _run(folds, safe_partitions(payload, as_of, [*played, *removals], d))
            down_at = safe_to_stop(d.at, [(r["at"], r["never"]) for r in latest])
        played += removals
        if down_at is not None:
            played.append(StoreStatus(down_at, d.store, False))
        out.decommissioned.append(Decommissioned(d.store, d.at, down_at))
    out.played = in_order(played)
    forecasts = {
        r["fid"]: pickle.loads(r["blob"])
        for r in _run(folds, played_partitions(payload, as_of, actions, out.played, shortcut))
    }
    for fid in sorted(forecasts):
        out.planned[fid], out.baseline[fid] = forecasts[fid]
    return out


def safe_to_stop(at: int, latest: Iterable[tuple[int | None, bool]]) -> int | None:
    """``planner.stop_time`` over the whole plan from its answers over each task's chunks
    (each at least the decommission's time, or never): the latest, or never."""
    return latest_stop(at, [None if never else at if until is None else until for until, never in latest])


def _folds(spark: SparkSession, run: PlanRun, fids: list[str]) -> DataFrame:
    """The run's fold states of ``fids`` (a broadcast semi-join: an ``isin`` of 40,000 literals
    is 40,000 calls into the JVM), in tasks of about :data:`FOLDERS_PER_TASK` folders, up to
    :data:`TASKS_PER_CORE` per core: a folder's play costs from nothing to seconds, and the
    run's few fold files would leave a core idle behind the slowest."""
    from pyspark.sql import functions as F

    wanted = spark.createDataFrame([(f,) for f in fids], "fid string")
    states = spark.read.parquet(str(run.path / STATE_DIR / "folds")).select("fid", "blob")
    cores = spark.sparkContext.defaultParallelism
    tasks = max(1, min(-(-len(fids) // FOLDERS_PER_TASK), TASKS_PER_CORE * cores))
    return states.join(F.broadcast(wanted), "fid", "left_semi").repartition(tasks)


def _run(
    folds: DataFrame, partitions: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]
) -> list[dict[str, Any]]:
    rows = folds.mapInArrow(partitions, schema=PLAYED_DDL).collect()
    return [r.asDict() for r in rows]


#: a partition's work: (org, transits, as_of, a chunk of folder starts) -> its rows as tuples
_Work = Callable[[OrgContext, Transits, int, Mapping[str, FolderStart]], Iterable[tuple[Any, ...]]]


def _partitions(
    payload: str, as_of: int, work: _Work
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function: fold states (fid, blob) in, ``work``'s rows out, a chunk of
    folders at a time."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        topo, status, transits = organisation(payload)
        org = OrgContext(topo)
        for store, ts, seq, down in status:
            org.add_status(store, ts, seq, down)
        with cyclic_gc_paused():
            chunk: dict[str, FolderStart] = {}
            for batch in batches:
                d = batch.to_pydict()
                for fid, blob in zip(d["fid"], d["blob"], strict=True):
                    state = load_state(blob)
                    chunk[fid] = FolderStart(
                        {s: f.resume(org) for s, f in state.folds.items()}, list(state.mail)
                    )
                    if len(chunk) >= CHUNK:
                        yield _batch(work(org, transits, as_of, chunk))
                        chunk = {}
            if chunk:
                yield _batch(work(org, transits, as_of, chunk))

    return run


def _batch(rows: Iterable[tuple[Any, ...]]) -> pa.RecordBatch:
    values = list(zip(*rows, strict=True)) or [()] * len(PLAYED_SCHEMA)
    return pa.RecordBatch.from_arrays(
        [pa.array(v, type=f.type) for v, f in zip(values, PLAYED_SCHEMA, strict=True)], schema=PLAYED_SCHEMA
    )


def listed_partitions(
    payload: str, as_of: int, actions: Sequence[Action], stores: Sequence[str]
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The touched folders whose list names a decommissioned store (its removals)."""

    def work(
        org: OrgContext, transits: Transits, as_of: int, starts: Mapping[str, FolderStart]
    ) -> Iterator[tuple[Any, ...]]:
        for fid in touched(starts, actions):
            for store in stores:
                fold = starts[fid].folds.get(store)
                if fold is not None and fold.on_list:
                    yield (LISTED, fid, store, None, None, None)

    return _partitions(payload, as_of, work)


def safe_partitions(
    payload: str, as_of: int, actions: Sequence[Action], d: Decommission
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """Each chunk's time the decommissioned store may go down, by the planner's own
    ``planner.stop_time`` over the chunk's folders (``never``: something of it stays at risk)."""

    def work(
        org: OrgContext, transits: Transits, as_of: int, starts: Mapping[str, FolderStart]
    ) -> Iterator[tuple[Any, ...]]:
        at = stop_time(org, starts, as_of, transits, list(actions), d)
        yield (SAFE, None, d.store, at, at is None, None)

    return _partitions(payload, as_of, work)


def played_partitions(
    payload: str, as_of: int, actions: Sequence[Action], played: Sequence[Action], shortcut: bool = True
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """Each touched folder's forecasts under the plan and without it, by the planner's own
    ``play_folder`` (``played``: the plan as played, decommissions made of their list changes and down),
    pickled as a pair."""
    by_folder = ByFolder(played)  # indexed once, on the driver

    def work(
        org: OrgContext, transits: Transits, as_of: int, starts: Mapping[str, FolderStart]
    ) -> Iterator[tuple[Any, ...]]:
        for fid in touched(starts, actions):
            both = play_folder(org, starts[fid], fid, as_of, transits, by_folder.of(fid), shortcut)
            yield (PLAYED, fid, None, None, None, pickle.dumps(both, protocol=pickle.HIGHEST_PROTOCOL))

    return _partitions(payload, as_of, work)
