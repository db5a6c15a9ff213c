"""Suggestions where a plan is not safe: the smallest changes to it that are, each a plan the
operator can open (issue 37's "bring store X back first; wait until T; add a replica on Y"), in
the manner of Ceph's ``ok-to-stop`` saying what would make a stop safe.

Each candidate is played on the folders where the plan is not safe (those with content at risk or
a replica it leaves unable to get in sync) and kept when it is safe there; opening it plays it on
every folder it touches, and that verdict is the whole plan's.

- **wait**: the plan's actions later, all shifted alike (a maintenance keeps its length), by the
  first of a fixed ladder of delays (15 min to 7 days) after which the content at risk has
  reached another replica on its own;
- **bring X back first**: stores that are down at the as-of and alone hold what a replica needs
  are brought back at the as-of, before the plan;
- **add a replica first**: where content is at risk, a replica on another store (the same site
  first) added at the as-of, and the plan's actions after it holds the folder.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from pfscope.spark_jobs.model.forecast.actions import Action, ReplicaChange, StoreStatus, in_order
from pfscope.spark_jobs.model.forecast.folder import duration, stores_are
from pfscope.spark_jobs.model.forecast.planner import PlayedPlan
from pfscope.spark_jobs.model.forecast.verdict import PlanResult
from pfscope.spark_jobs.model.timeutil import DAY, HOUR, MINUTE, format_ts
from pfscope.spark_jobs.model.topology import Topology

#: the delays a "wait" tries, shortest first
LADDER = (
    15 * MINUTE,
    30 * MINUTE,
    HOUR,
    2 * HOUR,
    4 * HOUR,
    8 * HOUR,
    12 * HOUR,
    DAY,
    2 * DAY,
    3 * DAY,
    7 * DAY,
)

#: plays the plan's actions on some folders and judges them there
Trial = Callable[[Sequence[Action], set[str]], tuple[PlayedPlan, PlanResult]]


@dataclass(frozen=True)
class Suggestion:
    """A plan that is safe where the plan asked for is not: ``why`` in one sentence, ``actions``
    as they would be played (open them as a plan)."""

    why: str
    actions: list[Action]


def at_issue(result: PlanResult) -> set[str]:
    """The folders where the plan is not safe: content at risk, or a replica it leaves lacking."""
    return {r.fid for r in result.at_risk} | {
        m.fid for m in result.changed if m.after is None and not m.removed and m.before is not None
    }


def suggest(
    actions: Sequence[Action],
    played: PlayedPlan,
    result: PlanResult,
    as_of: int,
    topo: Topology,
    lists: Mapping[str, tuple[str, ...]],
    trial: Trial,
) -> list[Suggestion]:
    """The safe variants of a plan that is not safe (none when it is, or when none is found)."""
    if result.safe:
        return []
    q = _Asked(actions, played, result, as_of, topo, lists, at_issue(result), trial)
    out = []
    for make in (_bring_back, _wait, _add_replica):
        found = make(q)
        if found is not None:
            out.append(found)
    return out


@dataclass(frozen=True)
class _Asked:
    """The plan a suggestion starts from, and how to try a variant (on the folders at issue)."""

    actions: Sequence[Action]
    played: PlayedPlan
    result: PlanResult
    as_of: int
    topo: Topology
    lists: Mapping[str, tuple[str, ...]]
    fids: set[str]
    trial: Trial


def _safe_on(trial: Trial, actions: Sequence[Action], fids: set[str]) -> tuple[PlayedPlan, PlanResult] | None:
    played, result = trial(actions, fids)
    return (played, result) if result.safe else None


def _wait(q: _Asked) -> Suggestion | None:
    if not q.result.at_risk:
        return None  # waiting does not make a replica get in sync that cannot
    first = min(a.at for a in q.actions)
    for delay in LADDER:
        later = [replace(a, at=a.at + delay) for a in q.actions]
        if _safe_on(q.trial, later, q.fids) is not None:
            return Suggestion(
                f"wait {duration(delay / 1_000_000)}: start at {format_ts(first + delay)}, once what only"
                " the plan's stores hold has reached another replica",
                in_order(later),
            )
    return None


def _bring_back(q: _Asked) -> Suggestion | None:
    acted = {a.store for a in q.actions}
    waiting = sorted(
        {
            store
            for fid in q.fids
            for row in q.played.planned[fid].forecast
            for store in row.get("waits_for") or ()
            if store not in acted
        }
    )
    if not waiting:
        return None
    first = [StoreStatus(q.as_of, store, True) for store in waiting]
    plan = in_order([*first, *q.actions])
    if _safe_on(q.trial, plan, q.fids) is None:
        return None
    who, _ = stores_are(waiting)
    return Suggestion(
        f"bring {who} back first: the replicas that need what only {'it holds' if len(waiting) == 1 else 'they hold'}"
        " then get in sync",
        plan,
    )


def _add_replica(q: _Asked) -> Suggestion | None:
    if not q.result.at_risk:
        return None
    adds: list[Action] = []
    for risk in q.result.at_risk:
        on_list = q.lists.get(risk.fid, ())
        site = q.topo.stores[risk.store].site
        others = [
            s for s in sorted(q.topo.stores) if s not in on_list and s not in {a.store for a in q.actions}
        ]
        others.sort(key=lambda s: q.topo.stores[s].site != site)
        if not others:
            return None
        adds.append(ReplicaChange(q.as_of, others[0], risk.fid, True))
    adds = list({(a.store, a.fid): a for a in adds if isinstance(a, ReplicaChange)}.values())
    first_played, _ = q.trial(adds, q.fids)
    rows = [r for f in first_played.planned.values() for r in f.forecast]
    added = {(a.store, a.fid) for a in adds if isinstance(a, ReplicaChange)}
    ready = [r["in_sync_at"] for r in rows if (r["store"], r["fid"]) in added]
    if len(ready) < len(added) or None in ready:
        return None
    start = min(a.at for a in q.actions)
    delay = max(0, max(ready) + MINUTE - start)
    plan = in_order([*adds, *(replace(a, at=a.at + delay) for a in q.actions)])
    if _safe_on(q.trial, plan, q.fids) is None:
        return None
    where = ", ".join(f"{a.store} on {a.fid}" for a in adds if isinstance(a, ReplicaChange))
    return Suggestion(
        f"add a replica first ({where}), and start once it holds the folder ({format_ts(start + delay)})",
        plan,
    )
