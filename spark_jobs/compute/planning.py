"""A plan on the published run (``pfscope plan``, the ``/plan`` page): what its play starts from,
read from the run, never written into it.

A run keeps, beside its tables, every folder's fold state at its as-of (``_state/folds``, for the
next run to fold on from), its manifest (the up/down timeline) and its topology. A plan reads the
states of the folders it touches, the pairs' transits (``transits``), the replica lists
(``folders``) and, for a restore, the restored store's state tables at the backup's time
(``state_history``); then it plays them in plain Python (``forecast.planner``) and judges the
result (``forecast.verdict``).

Plain Python and pyarrow: no Spark. The cyclic garbage collector is paused while a plan is made
(``runtime.collector.cyclic_gc_paused``): its scans of the folders' states, the plays' results and, in the
app, everything else the process holds found nothing to collect yet cost a restore's page about
0.5 s; reference counting frees what a plan drops.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from pfscope.spark_jobs.compute.plan_workers import forked
from pfscope.spark_jobs.compute.state import STATE_DIR, TOPOLOGY, code_version, load_manifest
from pfscope.spark_jobs.compute.stream import load_state
from pfscope.spark_jobs.model.cnset import CNSet
from pfscope.spark_jobs.model.forecast.actions import Action, Backup, ReplicaChange, Restore, whole_stores
from pfscope.spark_jobs.model.forecast.plan import Known, PlanError, parse_plan
from pfscope.spark_jobs.model.forecast.planner import FolderStart, PlayedPlan, play_plan
from pfscope.spark_jobs.model.forecast.suggest import Suggestion, at_issue
from pfscope.spark_jobs.model.forecast.suggest import suggest as safe_variants
from pfscope.spark_jobs.model.forecast.verdict import PlanResult, judge
from pfscope.spark_jobs.model.forecast.world import Transits
from pfscope.spark_jobs.model.org import OrgContext
from pfscope.spark_jobs.model.timeutil import format_ts
from pfscope.spark_jobs.model.topology import topology_from_json
from pfscope.spark_jobs.published.runs import read_latest
from pfscope.spark_jobs.runtime.collector import cyclic_gc_paused

#: the most folders at issue suggestions are tried on (each try plays them again)
SUGGEST_FOLDERS = 500


@dataclass
class PlanRun:
    """The published run a plan is made on."""

    path: Path
    run_id: str
    as_of: int
    org: OrgContext
    transits: Transits
    known: Known


@dataclass
class Plan:
    """A plan made: its actions as played, each touched folder's forecasts and the verdict."""

    run: PlanRun
    actions: list[Action]
    played: PlayedPlan
    result: PlanResult
    suggestions: list[Suggestion] = field(default_factory=list)
    #: why no suggestion was looked for, when none was (None: they were)
    unsuggested: str | None = None
    #: suggestions were looked for (``add_suggestions``)
    looked: bool = False


def open_run(data_dir: str | os.PathLike[str]) -> PlanRun:
    """The run ``DIR/LATEST`` points at, as a plan reads it (a :class:`PlanError` when it cannot)."""
    pointer = read_latest(data_dir)
    if pointer is None:
        raise PlanError(f"{data_dir}: no published run to plan on (run pfscope compute first)")
    path = Path(data_dir) / str(pointer["path"])
    manifest = load_manifest(path)
    topology = path / STATE_DIR / TOPOLOGY
    if manifest is None or not topology.exists():
        raise PlanError(
            f"run {pointer['run_id']} kept no state to plan from (a run over remote logs, or an older"
            " pfscope's): compute again into the same folder"
        )
    if manifest.code != code_version():
        raise PlanError(
            f"run {pointer['run_id']} was made by another pfscope version: compute again to plan on it"
        )
    topo = topology_from_json(json.loads(topology.read_text(encoding="utf-8")))
    org = OrgContext(topo)
    for ts, seq, store, down in sorted(manifest.status):
        if ts <= manifest.as_of:
            org.add_status(store, ts, seq, down)
    transits = Transits.from_rows(
        _rows(path / "transits", ["sender", "recipient", "median_transit_s", "longest_transit_s"])
    )
    lists = {r["fid"]: tuple(r["replicas"] or ()) for r in _rows(path / "folders", ["fid", "replicas"])}
    known = Known(manifest.as_of, set(topo.stores), lists)
    return PlanRun(path, str(pointer["run_id"]), manifest.as_of, org, transits, known)


#: plays a plan's actions over the folders it touches (``play_locally``, or Spark's)
Player = Callable[[PlanRun, list[Action], set[str]], PlayedPlan]


def play_locally(run: PlanRun, actions: list[Action], fids: set[str]) -> PlayedPlan:
    """The plays on this machine (``forecast.planner``), on every core (``plan_workers``): a
    store's folders in a few seconds."""
    with cyclic_gc_paused():
        starts = folder_starts(run, fids)
        return play_plan(run.org, starts, run.as_of, run.transits, actions, chunks=forked())


def make_plan(
    data_dir: str | os.PathLike[str],
    texts: Sequence[str],
    *,
    play: Player = play_locally,
    suggest: bool = True,
) -> Plan:
    """Read the run, parse the actions, play the folders they touch (``play``: where), judge, and
    for a plan that is not safe look for safe variants (``suggest`` False: later, by
    :func:`add_suggestions`; the ``/plan`` page shows the verdict before them)."""
    with cyclic_gc_paused():  # see the module's docstring
        run = open_run(data_dir)
        actions = [
            with_backups(run, a) if isinstance(a, Restore) else a for a in parse_plan(texts, run.known)
        ]
        played = play(run, actions, involved_folders(run, actions))
        plan = Plan(run, actions, played, judge(played))
        if suggest:
            add_suggestions(plan)
        return plan


def add_suggestions(plan: Plan) -> None:
    """Safe variants of a plan that is not safe (none for one that is), each tried in this process
    on the folders where it is not (their states read once)."""
    if plan.result.safe or plan.looked:
        return
    with cyclic_gc_paused():
        _look(plan)
    plan.looked = True


def _look(plan: Plan) -> None:
    run, fids = plan.run, at_issue(plan.result)
    if len(fids) > SUGGEST_FOLDERS:
        plan.unsuggested = (
            f"the plan is not safe on {len(fids):,} folders: no suggestion is tried beyond {SUGGEST_FOLDERS}"
        )
        return
    chunks = forked()

    def trial(actions: Sequence[Action], where: set[str]) -> tuple[PlayedPlan, PlanResult]:
        mine = {f: starts[f] for f in where if f in starts}
        played = play_plan(run.org, mine, run.as_of, run.transits, actions, chunks=chunks)
        return played, judge(played)

    with cyclic_gc_paused():
        starts = folder_starts(run, fids)
        topo = run.org.topology
        plan.suggestions = safe_variants(
            plan.actions, plan.played, plan.result, run.as_of, topo, run.known.lists, trial
        )


def involved_folders(run: PlanRun, actions: Iterable[Action]) -> set[str]:
    """The folders where a store the plan acts on as a whole has a fold (from ``replicas``), and
    those whose lists it changes."""
    actions = list(actions)
    stores = sorted(whole_stores(actions))
    rows = _rows(run.path / "replicas", ["fid"], pc.field("store").isin(stores)) if stores else []
    return {r["fid"] for r in rows} | {a.fid for a in actions if isinstance(a, ReplicaChange)}


class StoredStarts(Mapping[str, FolderStart]):
    """Each folder's folds and mail at the run's as-of, as the run keeps them (``_state/folds``),
    made when first asked for: in the forked worker that plays the folder, so a store's thousands
    of states are read on every core (``planner.play_plan``), and the workers do not share them
    with this process."""

    def __init__(self, org: OrgContext, blobs: dict[str, str]):
        self._org = org
        self._blobs = blobs
        self._made: dict[str, FolderStart] = {}

    def __getitem__(self, fid: str) -> FolderStart:
        start = self._made.get(fid)
        if start is None:
            state = load_state(self._blobs[fid])
            folds = {s: f.resume(self._org) for s, f in state.folds.items()}
            start = self._made[fid] = FolderStart(folds, list(state.mail))
        return start

    def __contains__(self, fid: object) -> bool:
        return fid in self._blobs

    def __iter__(self) -> Iterator[str]:
        return iter(self._blobs)

    def __len__(self) -> int:
        return len(self._blobs)

    @property
    def made(self) -> int:
        """How many starts this process has made (read)."""
        return len(self._made)


def folder_starts(run: PlanRun, fids: Iterable[str]) -> StoredStarts:
    """Each folder's folds and mail at the run's as-of, from the run's fold states."""
    fids = sorted(set(fids))
    if not fids:
        return StoredStarts(run.org, {})
    rows = _rows(run.path / STATE_DIR / "folds", ["fid", "blob"], pc.field("fid").isin(fids))
    return StoredStarts(run.org, {r["fid"]: r["blob"] for r in rows})


def with_backups(run: PlanRun, restore: Restore) -> Restore:
    """The restore with what the store held and believed in each folder at the backup's time
    (its ``state_history`` rows up to then); refused when the log does not reach back that far."""
    history = _history(run, restore.store)
    known_from = min(history["at"], default=None)
    if known_from is None or restore.taken_at < known_from:
        since = f"only from {format_ts(known_from)}" if known_from is not None else "nothing"
        raise PlanError(
            f"restore {restore.store} from {format_ts(restore.taken_at)}: the log knows {since} of"
            f" {restore.store}, so not what it held then"
        )
    latest: dict[tuple[str, str], tuple[int, str]] = {}
    for fid, subject, at, text in zip(
        history["fid"], history["subject"], history["at"], history["cnset"], strict=True
    ):
        if at <= restore.taken_at and ((fid, subject) not in latest or at >= latest[(fid, subject)][0]):
            latest[(fid, subject)] = (at, text or "")
    beliefs: dict[str, dict[str, CNSet]] = {}
    for (fid, subject), (_, text) in latest.items():
        beliefs.setdefault(fid, {})[subject] = CNSet.parse(text)
    backups = {fid: Backup(rows.pop(restore.store, CNSet.parse("")), rows) for fid, rows in beliefs.items()}
    return replace(restore, backups=backups)


def _history(run: PlanRun, store: str) -> dict[str, list[Any]]:
    """The store's ``state_history`` rows, times in microseconds."""
    path = run.path / "state_history"
    if not path.exists():
        return {"fid": [], "subject": [], "at": [], "cnset": []}
    table: pa.Table = ds.dataset(str(path), format="parquet").to_table(
        columns=["fid", "subject", "at", "cnset"], filter=pc.field("observer") == store
    )
    at = table.column("at").cast(pa.timestamp("us")).cast(pa.int64())
    return {
        "fid": table.column("fid").to_pylist(),
        "subject": table.column("subject").to_pylist(),
        "at": at.to_pylist(),
        "cnset": table.column("cnset").to_pylist(),
    }


def _rows(path: Path, columns: list[str], where: pc.Expression | None = None) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    table: pa.Table = ds.dataset(str(path), format="parquet").to_table(columns=columns, filter=where)
    rows: list[dict[str, Any]] = table.to_pylist()
    return rows
