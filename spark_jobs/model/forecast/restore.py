"""A restore said plainly (issue 37): what the restored store loses (its changes after the backup
that no other replica holds), what it backfills and from whom, and how long the status requests,
time-outs and retries take, from the plan's own plays.

What the model follows of Exchange after a restore, and what it cannot know, is in docs/model.md
("What a restore cannot know").
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from pfscope.spark_jobs.model.cnset import EMPTY, CNSet
from pfscope.spark_jobs.model.forecast.actions import Restore
from pfscope.spark_jobs.model.forecast.folder import duration
from pfscope.spark_jobs.model.forecast.planner import PlayedPlan
from pfscope.spark_jobs.model.forecast.play import RESTORED
from pfscope.spark_jobs.model.forecast.verdict import PlanResult
from pfscope.spark_jobs.model.timeutil import MINUTE, US, format_ts

#: the folders a restore's story names one by one (the rest are counted)
NAMED = 10


@dataclass
class RestoreStory:
    """One restore, folder by folder summed: ``lost`` (fid -> CNs gone with the newer copy),
    ``backfill`` (fid -> CNs it must get again), ``sources`` (store -> folders it supplies),
    ``requests`` and ``retries`` (backfill requests, and those after a first attempt), ``first_due``
    (its first backfill request), ``in_sync`` (the last of its folders in sync), ``never`` (its
    folders not in sync within the horizon)."""

    restore: Restore
    lost: dict[str, CNSet] = field(default_factory=dict)
    backfill: dict[str, CNSet] = field(default_factory=dict)
    sources: Counter[str] = field(default_factory=Counter)
    requests: int = 0
    retries: int = 0
    first_due: int | None = None
    in_sync: int | None = None
    never: int = 0


def restore_stories(played: PlayedPlan, result: PlanResult) -> list[RestoreStory]:
    """Each restore of the plan, from the plays under it."""
    out = []
    for a in played.played:
        if not isinstance(a, Restore):
            continue
        story = RestoreStory(a)
        for risk in result.at_risk:
            if risk.store == a.store and risk.cause == RESTORED and risk.until is None:
                story.lost[risk.fid] = story.lost.get(risk.fid, EMPTY).union(risk.cns)
        for fid, folder in played.planned.items():
            rows = [r for r in folder.forecast if r["store"] == a.store]
            if not rows:
                continue
            (row,) = rows
            story.backfill[fid] = CNSet.parse(row["lacks_cnset"])
            story.sources.update(row["sources"])
            if row["in_sync_at"] is None:
                story.never += 1
            elif story.in_sync is None or row["in_sync_at"] > story.in_sync:
                story.in_sync = row["in_sync_at"]
            for r in folder.requests:
                if r["observer"] == a.store and r["due_at"] >= a.at:
                    story.requests += 1
                    story.retries += r["attempt"] > 1
                    story.first_due = (
                        r["due_at"] if story.first_due is None else min(story.first_due, r["due_at"])
                    )
        out.append(story)
    return out


def story_lines(s: RestoreStory) -> list[str]:
    """The restore in the operator's words, the loss first."""
    a = s.restore
    head = f"restore {a.store} from {format_ts(a.taken_at)} at {format_ts(a.at)}"
    out = [head + ":"]
    if s.lost:
        cns = sum(c.count() for c in s.lost.values())
        out.append(
            f"  loses {_n(cns, 'CN')} in {_n(len(s.lost), 'folder')}: its changes after the backup that no other replica holds"
        )
        out += [f"    {fid}: {c.text()}" for fid, c in sorted(s.lost.items())[:NAMED]]
        if len(s.lost) > NAMED:
            out.append(f"    and {_n(len(s.lost) - NAMED, 'more folder')}")
    else:
        out.append("  loses nothing: every change it made after the backup is held by another replica")
    out.append(
        f"  asks for the status of its folders at {format_ts(a.at + MINUTE)} (a status request each, as"
        " Exchange does after a restore); the answers file its backfill entries"
    )
    if s.backfill:
        cns = sum(c.count() for c in s.backfill.values())
        sources = ", ".join(f"{store} ({_n(n, 'folder')})" for store, n in s.sources.most_common())
        out.append(
            f"  backfills {_n(cns, 'CN')} in {_n(len(s.backfill), 'folder')}, from {sources or 'no store'}"
        )
        if s.first_due is not None:
            wait = duration((s.first_due - a.at) / US)
            out.append(
                f"  {_n(s.requests, 'backfill request')}, the first due at {format_ts(s.first_due)} ({wait} after the"
                f" restore: the entries' time-outs), {s.retries:,} of them retries"
            )
        if s.in_sync is not None:
            out.append(
                f"  in sync again at {format_ts(s.in_sync)} ({duration((s.in_sync - a.at) / US)} after the restore)"
            )
        if s.never:
            out.append(f"  {_n(s.never, 'folder')} not in sync within 14 days")
    return out


def _n(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"
