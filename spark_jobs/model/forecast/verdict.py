"""A plan's result beside the baseline, and its verdict (``pfscope plan``'s JSON, the ``/plan``
page): the replicas whose ``in_sync_at`` it moves, the content it puts at risk and whether it
survives, the backfill traffic it causes per store pair, when everything settles, and safe or not,
and why.

A plan is **safe** when it puts no content at risk and leaves no replica unable to get in sync
that the baseline gets in sync (the data contract's ``pfscope plan``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pfscope.spark_jobs.model.forecast.planner import PlayedPlan
from pfscope.spark_jobs.model.forecast.play import DOWN, REMOVED, Risk, Traffic
from pfscope.spark_jobs.model.timeutil import format_ts


@dataclass(frozen=True)
class Moved:
    """A replica whose ``in_sync_at`` the plan moves (``removed``: the plan takes it off the list)."""

    store: str
    fid: str
    before: int | None
    after: int | None
    removed: bool = False
    lacked_before: bool = True  # False: the baseline has it lacking nothing (no forecast row)


@dataclass(frozen=True)
class PairTraffic:
    """The folder messages from ``sender`` to ``recipient``, without the plan and under it."""

    sender: str
    recipient: str
    before: Traffic
    after: Traffic


@dataclass
class PlanResult:
    """A plan against the baseline. ``settles_at``: when every replica it touches is in sync and
    everything it put at risk is safe again (None: not within the horizon)."""

    changed: list[Moved] = field(default_factory=list)
    at_risk: list[Risk] = field(default_factory=list)
    traffic: list[PairTraffic] = field(default_factory=list)
    settles_at: int | None = None
    reasons: list[str] = field(default_factory=list)

    @property
    def safe(self) -> bool:
        return not self.reasons

    @property
    def verdict(self) -> str:
        return "safe" if self.safe else "not safe"


def compare(
    baseline: Sequence[Mapping[str, Any]],
    planned: Sequence[Mapping[str, Any]],
    removed: Collection[tuple[str, str]] = (),
) -> PlanResult:
    """The ``forecast`` rows under a plan beside the baseline's (``removed``: the (store, fid) the
    plan takes off a list): not safe when a replica no longer gets in sync that the baseline gets
    in sync."""
    before = {(r["store"], r["fid"]): r.get("in_sync_at") for r in baseline}
    after = {(r["store"], r["fid"]): r.get("in_sync_at") for r in planned}
    out = PlanResult()
    for key in sorted(set(before) | set(after) | set(removed)):
        gone = key in removed
        b, a = before.get(key), None if gone else after.get(key)
        if b == a and not gone:
            continue
        out.changed.append(Moved(key[0], key[1], b, a, gone, key in before))
        if b is not None and a is None and not gone:
            out.reasons.append(
                f"{key[0]} would not get in sync on {key[1]} within 14 days (it does without the plan)"
            )
    ends = [m.after for m in out.changed if not m.removed]
    out.settles_at = None if None in ends else max((e for e in ends if e is not None), default=None)
    return out


def judge(played: PlayedPlan) -> PlanResult:
    """The whole plan: every touched folder's rows compared, its risks weighed, its traffic."""
    baseline = [r for f in played.baseline.values() for r in f.forecast]
    planned = [r for f in played.planned.values() for r in f.forecast]
    removed = {(s, fid) for fid, f in played.planned.items() for s in f.removed}
    out = compare(baseline, planned, removed)
    out.at_risk = sorted(
        (r for f in played.planned.values() for r in f.risks), key=lambda r: (r.at, r.fid, r.store)
    )
    out.reasons[:0] = [risk_text(r) for r in out.at_risk]
    for d in played.decommissioned:
        if d.down_at is None:
            out.reasons.append(
                f"{d.store} cannot be taken down within 14 days of its removal: it still holds content no other replica holds"
            )
    ends = [m.after for m in out.changed if not m.removed] + [r.until for r in out.at_risk]
    done = max((a.at for a in played.played), default=None)  # a plan that moves nothing: its last action
    out.settles_at = None if None in ends else max([e for e in ends if e is not None], default=done)
    out.traffic = traffic(played)
    return out


def risk_text(r: Risk) -> str:
    """``1-2A45 would lose PFS2:40-52: held only on PFS2 when it is removed (...)``, or how long
    the content is at risk when it survives."""
    event = {DOWN: "goes down", REMOVED: "is removed from the list"}.get(r.cause, "is restored to its backup")
    only = f"held only on {r.store} when it {event} at {format_ts(r.at)}"
    if r.until is not None:
        return (
            f"{r.fid}: {r.cns.text()} is at risk from {format_ts(r.at)} until {format_ts(r.until)} ({only})"
        )
    if r.cause == DOWN:
        return f"{r.fid} would lose {r.cns.text()} while {r.store} stays down: {only}, and the plan does not bring it back"
    return (
        f"{r.fid} would lose {r.cns.text()}: {only}, and no other replica that is up holds it within 14 days"
    )


def traffic(played: PlayedPlan) -> list[PairTraffic]:
    """The backfill per store pair without the plan and under it, where it differs."""
    before: dict[tuple[str, str], Traffic] = {}
    after: dict[tuple[str, str], Traffic] = {}
    for side, folders in ((before, played.baseline), (after, played.planned)):
        for f in folders.values():
            for pair, t in f.traffic.items():
                total = side.setdefault(pair, Traffic())
                total.messages += t.messages
                total.requests += t.requests
                total.responses += t.responses
                total.cns += t.cns
    return [
        PairTraffic(s, r, before.get((s, r), Traffic()), after.get((s, r), Traffic()))
        for s, r in sorted(set(before) | set(after))
        if before.get((s, r)) != after.get((s, r))
    ]
