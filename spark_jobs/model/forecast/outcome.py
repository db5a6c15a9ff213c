"""How a forecast came true: for a replica a run forecast, the first time it actually held every
CN it then lacked (from a later run's ``state_history``: its store's own rows), against the
forecast's bounds, and for a miss, what the forecast could not know (a store went down, a store
came back, new changes in the folder) or that the world was slower than its bound.

A forecast's bound is ``latest_in_sync_at``, or the horizon when its bound is not within it; a
forecast that waits for stores that are down (``waits_for``) is judged from when the last of them
was back, by its ``latest_after_back_s``; a forecast not to catch up is judged at the horizon.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pfscope.spark_jobs.model.cnset import CNSet
from pfscope.spark_jobs.model.forecast.world import HORIZON
from pfscope.spark_jobs.model.timeutil import US, format_ts

WITHIN = "within its bounds"
LATE = "late"
NOT_YET = "not yet due"
STILL_LACKING = "still lacking, as forecast"
CAUGHT_UP = "caught up, though forecast not to"

#: every outcome, in the order they are said
OUTCOMES = (WITHIN, LATE, NOT_YET, STILL_LACKING, CAUGHT_UP)

#: outcomes a later run can still change (the replica has not caught up yet)
OPEN = frozenset({NOT_YET, STILL_LACKING})

SLOWER = "slower than its bound: mail took longer than the pair's longest transit, or was lost"


@dataclass(frozen=True)
class Period:
    """A store's down period as a later run knows it (``store_periods``); ``up_at`` None: still down."""

    store: str
    down_at: int
    up_at: int | None


class History:
    """A store's own rows of one folder (``state_history`` where observer is subject), in time
    order, as ``(at, cnset text)``: a judge reads few of them, so a CN set is parsed when read."""

    def __init__(self, rows: Iterable[tuple[int, str]]):
        ordered = sorted(rows, key=lambda r: r[0])
        self.ats = [at for at, _ in ordered]
        self.texts = [text for _, text in ordered]
        self._sets: dict[int, CNSet] = {}

    def cns(self, i: int) -> CNSet:
        got = self._sets.get(i)
        if got is None:
            got = self._sets[i] = CNSet.parse_canonical(self.texts[i])
        return got

    def after(self, t: int) -> Iterator[tuple[int, CNSet]]:
        """The rows after ``t``, in time order."""
        for i in range(bisect_right(self.ats, t), len(self.ats)):
            yield self.ats[i], self.cns(i)

    def own_high(self, origin: str, after: int) -> tuple[int, list[tuple[int, int]]]:
        """The highest CN of ``origin``'s own (``origin``: the store) at ``after``, and each later
        row's (at, highest) while it does not rise above it, then the first that does."""
        i = bisect_right(self.ats, after)
        before = self.cns(i - 1).max_cn(origin) or 0 if i else 0
        later = []
        for j in range(i, len(self.ats)):
            high = self.cns(j).max_cn(origin) or 0
            later.append((self.ats[j], high))
            if high > before:
                break
        return before, later


def actual_in_sync(lacked: CNSet, owned: History | None, after: int) -> int | None:
    """The first time after ``after`` that the store's owned set holds every CN of ``lacked``;
    None when it never does (or the store has no rows)."""
    for at, cns in owned.after(after) if owned is not None else ():
        if lacked.issubset(cns):
            return at
    return None


def back_at(waits_for: Sequence[str] | None, periods: Iterable[Period], made_at: int) -> int | None:
    """When the last of the stores a forecast waited for was back (each store's down period that
    held at ``made_at``); None while one of them is still down (or it waited for none)."""
    if not waits_for:
        return None
    latest = made_at
    for store in waits_for:
        mine = [p for p in periods if p.store == store and p.down_at <= made_at]
        if not mine:
            continue  # not down at the time (a later run knows better): back already
        last = max(mine, key=lambda p: p.down_at)
        if last.up_at is None:
            return None
        latest = max(latest, last.up_at)
    return latest


def due_by(row: Mapping[str, Any], made_at: int, back: int | None) -> int | None:
    """The time by which the forecast said the replica would be in sync at the latest; None when
    it said it would not (within the horizon, or until stores that are still down are back)."""
    if row.get("in_sync_at") is not None:
        latest = row.get("latest_in_sync_at")
        return latest if latest is not None else made_at + HORIZON
    if back is not None and row.get("after_back_s") is not None:
        latest_s = row.get("latest_after_back_s")
        return back + (round(latest_s * US) if latest_s is not None else HORIZON)
    return None


def came_true(due: int | None, actual: int | None, seen_until: int, made_at: int) -> str:
    """A forecast against what happened by ``seen_until`` (the later run's as-of): within its bounds
    (in sync by ``due``), late, not yet due (not in sync, but its time has not come), still lacking
    as forecast, or caught up though forecast not to (within the horizon)."""
    if due is None:
        caught = actual is not None and actual <= made_at + HORIZON
        return CAUGHT_UP if caught else STILL_LACKING
    if actual is None:
        return NOT_YET if seen_until < due else LATE
    return WITHIN if actual <= due else LATE


def miss_cause(
    outcome: str,
    row: Mapping[str, Any],
    made_at: int,
    until: int,
    members: Iterable[str],
    periods: Iterable[Period],
    changed_at: int | None,
) -> str | None:
    """Why a forecast missed, from what a later run knows, the causes the forecast assumes away
    first: a store of the folder went down, or one that was down came back (no forecast waited for
    it), between the forecast and ``until`` (the catch-up, or the later run's as-of); new changes
    in the folder (``changed_at``: the first after the forecast); else the world was slower than
    the bound. None for a forecast that did not miss."""
    if outcome not in (LATE, CAUGHT_UP):
        return None
    scope = set(members) | {row["store"]}
    for p in sorted(periods, key=lambda p: (p.down_at, p.store)):
        if p.store in scope and made_at < p.down_at <= until:
            return f"{p.store} went down at {format_ts(p.down_at)} (the forecast assumes no store changes status)"
    if outcome == CAUGHT_UP:
        waited = set(row.get("waits_for") or ())
        for p in sorted(periods, key=lambda p: (p.up_at or 0, p.store)):
            if p.store in scope - waited and p.up_at is not None and made_at < p.up_at <= until:
                return f"{p.store} came back at {format_ts(p.up_at)} (the forecast assumes no store changes status)"
    if changed_at is not None and made_at < changed_at <= until:
        return f"new changes in the folder from {format_ts(changed_at)} (the forecast assumes none)"
    return SLOWER if outcome == LATE else "caught up by a message the forecast did not play"


def first_change_after(owned: Mapping[str, History], made_at: int) -> int | None:
    """The first time after ``made_at`` that a store made a change in the folder: its own rows
    (``owned``: each store's) gain a CN of its own."""
    first: int | None = None
    for store, rows in owned.items():
        before, later = rows.own_high(store, made_at)
        for at, high in later:
            if high > before:
                first = at if first is None else min(first, at)
                break
    return first


def cause_kind(cause: str) -> str:
    """``PFSIN02 went down at …`` -> ``a store went down``: a miss's cause, as a kind to count."""
    if " went down at " in cause:
        return "a store went down"
    if " came back at " in cause:
        return "a store came back"
    if cause.startswith("new changes"):
        return "new changes in the folder"
    return cause.split(":")[0]
