"""A plan played: each folder it touches played forward twice, without the plan (the baseline)
and under it, from the same folds at the as-of ("A plan" in the replication model).

A decommission is played as what it is made of: the store removed from every list it is on at
its time, then down once nothing of it is at risk. That time is found by a first play with the
removals alone (the latest time any folder's content of the store reached another replica); the
plays are deterministic, so the second play, with the store down from then on, is the first up to
that time.

The folders' plays are independent: ``play_plan`` hands them to a ``ChunkMap`` in chunks (in
turn in this process by default; ``compute.planning`` forks workers for a store's thousands).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pfscope.spark_jobs.model.events import Message
from pfscope.spark_jobs.model.fold import FolderFold
from pfscope.spark_jobs.model.forecast.actions import (
    Action,
    ByFolder,
    Decommission,
    ReplicaChange,
    Restore,
    StoreStatus,
    in_order,
    whole_stores,
)
from pfscope.spark_jobs.model.forecast.folder import (
    FolderForecast,
    FolderStartPlays,
    forecast_folder,
    mail_in_order,
    targets_of,
)
from pfscope.spark_jobs.model.forecast.play import REMOVED, Play
from pfscope.spark_jobs.model.forecast.world import Transits
from pfscope.spark_jobs.model.org import OrgContext
from pfscope.spark_jobs.model.rules.health import DELETED
from pfscope.spark_jobs.model.rules.reality import really_unique
from pfscope.spark_jobs.model.timeutil import SECOND

R = TypeVar("R")
#: runs ``work`` over ``fids`` cut in chunks and gives each chunk's result (in any order): the
#: plays of different folders share nothing, so they may run in other processes
ChunkMap = Callable[[Callable[[list[str]], Any], list[str]], list[Any]]


def in_turn(work: Callable[[list[str]], R], fids: list[str]) -> list[R]:
    """Every folder in this process, as one chunk."""
    return [work(fids)]


@dataclass
class FolderStart:
    """What a folder's play starts from: every store's fold at the as-of and its mail on its way."""

    folds: Mapping[str, FolderFold]
    mail: Sequence[tuple[Message, str]] = ()


@dataclass
class Decommissioned:
    """When a decommissioned store goes down (None: something of it is still at risk at the
    horizon, so it never does within it)."""

    store: str
    removed_at: int
    down_at: int | None


@dataclass
class PlayedPlan:
    """Each touched folder's forecast without the plan and under it, and the plan as played
    (decommissions made of their list changes and down)."""

    actions: list[Action]
    played: list[Action]
    baseline: dict[str, FolderForecast] = field(default_factory=dict)
    planned: dict[str, FolderForecast] = field(default_factory=dict)
    decommissioned: list[Decommissioned] = field(default_factory=list)


def touched(starts: Mapping[str, FolderStart], actions: Iterable[Action]) -> list[str]:
    """The folders a plan can change: those where a store it acts on has a copy or a place on the
    list, and those whose lists it changes."""
    actions = list(actions)
    stores = whole_stores(actions)
    named = {a.fid for a in actions if isinstance(a, ReplicaChange)}
    return sorted(
        fid
        for fid, start in starts.items()
        if fid in named or any(_involved(start.folds.get(s)) for s in stores)
    )


def _involved(fold: FolderFold | None) -> bool:
    return fold is not None and (fold.lifecycle not in (None, DELETED) or bool(fold.owned))


def play_plan(
    org: OrgContext,
    starts: Mapping[str, FolderStart],
    as_of: int,
    transits: Transits,
    actions: Sequence[Action],
    *,
    shortcut: bool = True,
    chunks: ChunkMap = in_turn,
    bounds: bool = False,
) -> PlayedPlan:
    """The plan's folders played without it and under it (``starts``: at least every folder it
    touches; ``shortcut`` False: the baseline played for every folder, as the tests compare;
    ``chunks``: where the folders' plays run; ``bounds``: the forecast rows' bounds played too,
    ``latest_in_sync_at`` and the times after a down store's return, which no verdict reads)."""
    # which folders the plan touches is found where they are played (a worker reads their starts
    # itself, ``compute.planning.StoredStarts``), unless a decommission needs them all first
    decommissions = any(isinstance(a, Decommission) for a in actions)
    fids = touched(starts, actions) if decommissions else sorted(starts)
    played: list[Action] = [a for a in in_order(actions) if not isinstance(a, Decommission)]
    out = PlayedPlan(list(actions), played)
    for d in (a for a in in_order(actions) if isinstance(a, Decommission)):
        removals = [
            ReplicaChange(d.at, d.store, fid, False)
            for fid in fids
            if (fold := starts[fid].folds.get(d.store)) is not None and fold.on_list
        ]
        if d.at_once:
            down_at: int | None = d.at
        else:
            so_far = [*played, *removals]

            def safe_from(chunk: list[str], so_far: list[Action] = so_far, d: Decommission = d) -> int | None:
                return stop_time(org, {f: starts[f] for f in chunk}, as_of, transits, so_far, d)

            down_at = latest_stop(d.at, chunks(safe_from, fids))
        played += removals
        if down_at is not None:
            played.append(StoreStatus(down_at, d.store, False))
        out.decommissioned.append(Decommissioned(d.store, d.at, down_at))
    out.played = in_order(played)
    by_folder = ByFolder(out.played)

    def play(chunk: list[str]) -> list[tuple[str, tuple[FolderForecast, FolderForecast]]]:
        mine = chunk if decommissions else touched({f: starts[f] for f in chunk}, actions)
        return [
            (fid, play_folder(org, starts[fid], fid, as_of, transits, by_folder.of(fid), shortcut, bounds))
            for fid in mine
        ]

    both = dict(pair for part in chunks(play, fids) for pair in part)
    for fid in fids:
        if fid in both:  # a folder the plan touches
            out.planned[fid], out.baseline[fid] = both[fid]
    return out


def latest_stop(at: int, answers: Iterable[int | None]) -> int | None:
    """A decommission's down from each chunk's ``stop_time`` (each at least ``at``; None: something
    of the store stays at risk there): the latest, or never."""
    out = at
    for until in answers:
        if until is None:
            return None
        out = max(out, until)
    return out


def play_folder(
    org: OrgContext,
    start: FolderStart,
    fid: str,
    as_of: int,
    transits: Transits,
    actions: Sequence[Action],
    shortcut: bool,
    bounds: bool = False,
) -> tuple[FolderForecast, FolderForecast]:
    """A folder under the plan (``actions``: the folder's own) and without it. A play the plan did not change (no event ran while
    it held a store's status, no list change or restore applied: ``diverged`` False) is the
    baseline's own play, event for event, so the baseline is not played again (``shortcut``)."""
    ready = FolderStartPlays(start.folds, start.mail)  # the two plays' common start, made once
    planned = forecast_folder(
        org, fid, start.folds, start.mail, as_of, transits, actions, bound=bounds, start=ready
    )
    if shortcut and not planned.diverged:
        return planned, FolderForecast(planned.forecast, planned.requests, traffic=planned.traffic)
    return planned, forecast_folder(
        org, fid, start.folds, start.mail, as_of, transits, always=True, bound=bounds, start=ready
    )


def stop_time(
    org: OrgContext,
    starts: Mapping[str, FolderStart],
    as_of: int,
    transits: Transits,
    actions: list[Action],
    d: Decommission,
    *,
    skip: bool = True,
) -> int | None:
    """When the decommissioned store holds nothing only it holds, in every folder, with the plan's
    actions so far (None: not within the horizon): the base play of each folder says it, but of a
    folder where its removal cannot put anything at risk (``skip``; False: every folder played,
    as the tests compare)."""
    latest = d.at
    by_folder = ByFolder(actions)
    for fid in touched(starts, actions):
        start = starts[fid]
        mine = by_folder.of(fid)
        if skip and never_at_risk(start, d.store, mine):
            continue
        play = Play(org, fid, start.folds, targets_of(start.folds), as_of, transits, actions=mine)
        for risk in play.play(mail_in_order(start.mail)).risks:
            if risk.store == d.store and risk.cause == REMOVED:
                if risk.until is None:
                    return None
                latest = max(latest, risk.until + SECOND)  # after the message that made it safe
    return latest


def never_at_risk(start: FolderStart, store: str, actions: Sequence[Action]) -> bool:
    """No play of the folder can put ``store``'s content at risk when it is taken off the list: at
    the as-of it holds nothing that no other store on the list holds, and none of the folder's
    actions takes another store off the list or restores a copy. Until then every store's
    holdings only grow and the list only gains (mail adds, nothing deletes), so whenever the
    removal comes, another replica holds all it holds (``Play._put_at_risk``'s rule)."""
    if any(
        isinstance(a, Restore) or (isinstance(a, ReplicaChange) and not a.added and a.store != store)
        for a in actions
    ):
        return False
    fold = start.folds.get(store)
    if fold is None:
        return True  # it holds nothing of the folder
    listed = next(iter(start.folds.values())).replicas  # the play's list (``Play.replicas``)
    others = [f.owned for s, f in start.folds.items() if s != store and s in listed]
    return not really_unique(fold.owned, others)
