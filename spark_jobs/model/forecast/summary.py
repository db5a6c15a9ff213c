"""A plan's result as ``pfscope plan`` says it: the verdict first, then why; or one JSON object for
scripts (the data contract's fields, and more: what each risk is and how long it lasts, the traffic
per store pair, when a decommissioned store goes down)."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

from pfscope.spark_jobs.model.forecast.actions import (
    Action,
    Decommission,
    ReplicaChange,
    Restore,
    StoreStatus,
)
from pfscope.spark_jobs.model.forecast.planner import PlayedPlan
from pfscope.spark_jobs.model.forecast.play import Traffic
from pfscope.spark_jobs.model.forecast.restore import restore_stories, story_lines
from pfscope.spark_jobs.model.forecast.suggest import Suggestion
from pfscope.spark_jobs.model.forecast.verdict import PlanResult
from pfscope.spark_jobs.model.timeutil import format_ts


def action_text(a: Action) -> str:
    """An action as the operator writes it, with absolute times."""
    if isinstance(a, StoreStatus):
        return f"{'up' if a.up else 'down'} {a.store} at {format_ts(a.at)}"
    if isinstance(a, ReplicaChange):
        return f"{'add' if a.added else 'remove'} {a.store} {'to' if a.added else 'from'} {a.fid} at {format_ts(a.at)}"
    if isinstance(a, Restore):
        return f"restore {a.store} from {format_ts(a.taken_at)} at {format_ts(a.at)}"
    assert isinstance(a, Decommission)
    return f"decommission {a.store} at {format_ts(a.at)}" + (" immediately" if a.at_once else "")


def suggestion_texts(s: Suggestion) -> list[str]:
    """A suggestion's actions as ``--action`` values (open them as a plan)."""
    return [action_text(a) for a in s.actions]


def _ts(us: int | None) -> str | None:
    return format_ts(us) if us is not None else None


def _traffic(t: Traffic) -> dict[str, int]:
    return {"messages": t.messages, "requests": t.requests, "responses": t.responses, "cns": t.cns}


def plan_json(
    run_id: str,
    as_of: int,
    played: PlayedPlan,
    result: PlanResult,
    suggestions: Sequence[Suggestion] = (),
    unsuggested: str | None = None,
) -> dict[str, Any]:
    """The object ``pfscope plan --json`` prints."""
    return {
        "verdict": result.verdict,
        "reasons": list(result.reasons),
        "at_risk": [
            {
                "store": r.store,
                "fid": r.fid,
                "cnset": r.cns.text(),
                "cnset_count": r.cns.count(),
                "cause": r.cause,
                "at": format_ts(r.at),
                "until": _ts(r.until),
                "survives": r.until is not None,
            }
            for r in result.at_risk
        ],
        "settles_at": _ts(result.settles_at),
        "changed": [
            {
                "store": m.store,
                "fid": m.fid,
                "in_sync_at_before": _ts(m.before),
                "in_sync_at_after": _ts(m.after),
                "removed": m.removed,
                "lacked_before": m.lacked_before,
            }
            for m in result.changed
        ],
        "traffic": [
            {
                "sender": t.sender,
                "recipient": t.recipient,
                "before": _traffic(t.before),
                "after": _traffic(t.after),
            }
            for t in result.traffic
        ],
        "decommissioned": [
            {"store": d.store, "removed_at": format_ts(d.removed_at), "down_at": _ts(d.down_at)}
            for d in played.decommissioned
        ],
        "restores": [
            {
                "store": r.restore.store,
                "taken_at": format_ts(r.restore.taken_at),
                "at": format_ts(r.restore.at),
                "loses": {fid: c.text() for fid, c in sorted(r.lost.items())},
                "backfills": {fid: c.text() for fid, c in sorted(r.backfill.items())},
                "sources": dict(r.sources.most_common()),
                "requests": r.requests,
                "retries": r.retries,
                "first_request_at": _ts(r.first_due),
                "in_sync_at": _ts(r.in_sync) if not r.never else None,
                "folders_not_in_sync": r.never,
            }
            for r in restore_stories(played, result)
        ],
        "suggestions": [{"why": x.why, "actions": suggestion_texts(x)} for x in suggestions],
        "unsuggested": unsuggested,
        "run_id": run_id,
        "as_of": format_ts(as_of),
        "actions": [action_text(a) for a in played.actions],
        "played": [action_text(a) for a in played.played],
        "folders": len(played.planned),
    }


def plan_lines(
    run_id: str,
    as_of: int,
    played: PlayedPlan,
    result: PlanResult,
    suggestions: Sequence[Suggestion] = (),
    unsuggested: str | None = None,
) -> list[str]:
    """The verdict first, then why, then what would be safe, then the details an operator attaches
    to a change request."""
    head = "safe" if result.safe else f"not safe: {result.reasons[0]}"
    out = [
        head,
        f"plan on run {run_id} (as of {format_ts(as_of)}); {len(played.planned)} folder{'' if len(played.planned) == 1 else 's'} played",
    ]
    out += [f"  action: {action_text(a)}" for a in played.actions]
    if len(result.reasons) > 1:
        out.append("why:")
        out += [f"  - {r}" for r in result.reasons]
    for story in restore_stories(played, result):
        out += story_lines(story)
    for x in suggestions:
        out.append(f"safe instead: {x.why}")
        out.append("  " + " ".join(f"--action {shlex.quote(t)}" for t in suggestion_texts(x)))
    if unsuggested:
        out.append(f"no suggestion: {unsuggested}")
    for d in played.decommissioned:
        down = f"down at {format_ts(d.down_at)}" if d.down_at is not None else "not down within 14 days"
        out.append(f"{d.store}: removed from its lists at {format_ts(d.removed_at)}, {down}")
    if result.changed:
        out.append(f"replicas the plan moves ({len(result.changed)}): in sync before -> after")
        added = {(a.store, a.fid) for a in played.played if isinstance(a, ReplicaChange) and a.added}
        for m in result.changed:
            before = _when(m.before) if m.lacked_before else "lacks nothing"
            if (m.store, m.fid) in added and not m.lacked_before:
                before = "not on the list"
            after = "removed from the list" if m.removed else _when(m.after)
            out.append(f"  {m.store} on {m.fid}: {before} -> {after}")
    if result.traffic:
        out.append("backfill per store pair, before -> after (requests, responses, CNs, messages)")
        for t in result.traffic:
            b, a = t.before, t.after
            out.append(
                f"  {t.sender} -> {t.recipient}: {b.requests} -> {a.requests}, {b.responses} -> {a.responses},"
                f" {b.cns} -> {a.cns}, {b.messages} -> {a.messages}"
            )
    settles = _when(result.settles_at) if result.settles_at is not None else "not within 14 days"
    out.append(f"settles: {settles}")
    return out


def _when(us: int | None) -> str:
    return format_ts(us) if us is not None else "not within 14 days"
