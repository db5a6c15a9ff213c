"""A plan played: each folder it touches played forward twice, without the plan (the baseline)
and under it, from the same folds at the as-of ("A plan" in the replication model).

A decommission is played as what it is made of: the store removed from every list it is on at
its time, then down once nothing of it is at risk. That time is found by a first play with the
removals alone (the latest time any folder's content of the store reached another replica); the
plays are deterministic, so the second play, with the store down from then on, is the first up to
that time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from pfscope.spark_jobs.model.events import Message
from pfscope.spark_jobs.model.fold import FolderFold
from pfscope.spark_jobs.model.forecast.actions import (
    Action,
    ByFolder,
    Decommission,
    ReplicaChange,
    StoreStatus,
    in_order,
    whole_stores,
)
from pfscope.spark_jobs.model.forecast.folder import (
    FolderForecast,
    forecast_folder,
    mail_in_order,
    targets_of,
)
from pfscope.spark_jobs.model.forecast.play import REMOVED, Play
from pfscope.spark_jobs.model.forecast.world import Transits
from pfscope.spark_jobs.model.org import OrgContext
from pfscope.spark_jobs.model.rules.health import DELETED
from pfscope.spark_jobs.model.timeutil import SECOND


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
) -> PlayedPlan:
    """The plan's folders played without it and under it (``starts``: at least every folder it
    touches; ``shortcut`` False: the baseline played for every folder, as the tests compare)."""
    fids = touched(starts, actions)
    played: list[Action] = [a for a in in_order(actions) if not isinstance(a, Decommission)]
    out = PlayedPlan(list(actions), played)
    for d in (a for a in in_order(actions) if isinstance(a, Decommission)):
        removals = [
            ReplicaChange(d.at, d.store, fid, False)
            for fid in fids
            if (fold := starts[fid].folds.get(d.store)) is not None and fold.on_list
        ]
        down_at = d.at if d.at_once else stop_time(org, starts, as_of, transits, [*played, *removals], d)
        played += removals
        if down_at is not None:
            played.append(StoreStatus(down_at, d.store, False))
        out.decommissioned.append(Decommissioned(d.store, d.at, down_at))
    out.played = in_order(played)
    by_folder = ByFolder(out.played)
    for fid in fids:
        mine = by_folder.of(fid)
        out.planned[fid], out.baseline[fid] = play_folder(
            org, starts[fid], fid, as_of, transits, mine, shortcut
        )
    return out


def play_folder(
    org: OrgContext,
    start: FolderStart,
    fid: str,
    as_of: int,
    transits: Transits,
    actions: Sequence[Action],
    shortcut: bool,
) -> tuple[FolderForecast, FolderForecast]:
    """A folder under the plan (``actions``: the folder's own) and without it. A play the plan did not change (no event ran while
    it held a store's status, no list change or restore applied: ``diverged`` False) is the
    baseline's own play, event for event, so the baseline is not played again (``shortcut``)."""
    planned = forecast_folder(org, fid, start.folds, start.mail, as_of, transits, actions)
    if shortcut and not planned.diverged:
        return planned, FolderForecast(planned.forecast, planned.requests, traffic=planned.traffic)
    return planned, forecast_folder(org, fid, start.folds, start.mail, as_of, transits, always=True)


def stop_time(
    org: OrgContext,
    starts: Mapping[str, FolderStart],
    as_of: int,
    transits: Transits,
    actions: list[Action],
    d: Decommission,
) -> int | None:
    """When the decommissioned store holds nothing only it holds, in every folder, with the plan's
    actions so far (None: not within the horizon): the base play of each folder says it."""
    latest = d.at
    by_folder = ByFolder(actions)
    for fid in touched(starts, actions):
        start = starts[fid]
        mine = by_folder.of(fid)
        play = Play(org, fid, start.folds, targets_of(start.folds), as_of, transits, actions=mine)
        for risk in play.play(mail_in_order(start.mail)).risks:
            if risk.store == d.store and risk.cause == REMOVED:
                if risk.until is None:
                    return None
                latest = max(latest, risk.until + SECOND)  # after the message that made it safe
    return latest
