"""A folder's forecast rows: for every replica on the list that lacks CNs at the as-of, when it
will hold them (as the world is assumed, and with the first reply of each entry lost), the
requests it takes and the stores that supply them, or what blocks it; and the requests of the
play, each with its answer or why there is none (the ``forecast`` and ``forecast_requests``
tables)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pfscope.spark_jobs.model.cnset import EMPTY, CNSet
from pfscope.spark_jobs.model.engine import SentRequest
from pfscope.spark_jobs.model.events import Message
from pfscope.spark_jobs.model.fold import FolderFold
from pfscope.spark_jobs.model.forecast.actions import Action
from pfscope.spark_jobs.model.forecast.play import FoldSnapshot, Play, PlayResult, Risk, Traffic
from pfscope.spark_jobs.model.forecast.world import Transits
from pfscope.spark_jobs.model.org import OrgContext
from pfscope.spark_jobs.model.rules.health import DELETED
from pfscope.spark_jobs.model.rules.reality import lacks
from pfscope.spark_jobs.model.timeutil import US, format_ts


@dataclass
class FolderForecast:
    """The folder's ``forecast`` and ``forecast_requests`` rows; under a plan, also the replicas it
    removed, the content it put at risk and the traffic of its play (the planner's)."""

    forecast: list[dict[str, Any]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    removed: set[str] = field(default_factory=set)
    risks: list[Risk] = field(default_factory=list)
    traffic: dict[tuple[str, str], Traffic] = field(default_factory=dict)
    #: the plan changed one of its plays (``PlayResult.diverged``); False: the baseline's rows
    diverged: bool = False


def targets_of(folds: Mapping[str, FolderFold]) -> dict[str, CNSet]:
    """What each replica on the list lacks at the as-of (``rules.reality.lacks``), where it lacks any."""
    listed = {s: f.owned for s, f in folds.items() if f.on_list and f.lifecycle != DELETED}
    out = {}
    for store in sorted(listed):
        lacking = lacks(listed[store], listed.values())
        if lacking:
            out[store] = lacking
    return out


class FolderStartPlays:
    """What every play of a folder starts from, made once for all of them (a plan plays each
    folder under the plan and without it): what each replica lacks at the as-of, the mail on its
    way in order, and the folds pickled (``FoldSnapshot``, when a play first needs them)."""

    def __init__(self, folds: Mapping[str, FolderFold], in_flight: Iterable[tuple[Message, str]]):
        self.folds = folds
        self.targets = targets_of(folds)
        self._in_flight = in_flight
        self._mail: list[tuple[Message, str]] | None = None
        self._snapshot: FoldSnapshot | None = None

    @property
    def mail(self) -> list[tuple[Message, str]]:
        if self._mail is None:
            self._mail = mail_in_order(self._in_flight)
        return self._mail

    @property
    def snapshot(self) -> FoldSnapshot:
        if self._snapshot is None:
            self._snapshot = FoldSnapshot(self.folds)
        return self._snapshot


def forecast_folder(
    org: OrgContext,
    fid: str,
    folds: Mapping[str, FolderFold],
    in_flight: Iterable[tuple[Message, str]],
    as_of: int,
    transits: Transits,
    actions: Sequence[Action] = (),
    *,
    always: bool = False,
    bound: bool = True,
    start: FolderStartPlays | None = None,
) -> FolderForecast:
    """``folds``: every store's fold of ``fid`` at the as-of (not changed); ``in_flight``: the
    messages of ``fid`` sent within the queue expiry before the as-of that a recipient had not
    processed, with that recipient; ``actions``: a plan's (none: the baseline forecast);
    ``always``: play the folder even when no replica lacks anything (a plan's baseline traffic);
    ``bound`` False: only the plays ``in_sync_at`` and the plan's verdict need (no
    ``latest_in_sync_at``, no time after a down store's return: a plan shows neither);
    ``start``: ``folds`` and ``in_flight`` made ready by another play of the folder (the same)."""
    start = start or FolderStartPlays(folds, in_flight)
    initial = targets = start.targets
    if not targets and not actions and not always:
        return FolderForecast()
    mail = start.mail
    snapshot = start.snapshot  # pickled once for all the folder's plays
    base = Play(org, fid, snapshot, targets, as_of, transits, actions=actions).play(mail)
    targets = base.targets  # a plan's play adds the replicas it adds or restores
    out = FolderForecast(removed=base.removed, risks=base.risks, traffic=base.traffic, diverged=base.diverged)
    if not targets:  # nothing lacking, before or under the plan: no row, no bound to play
        return out
    if bound:
        latest = Play(
            org, fid, snapshot, initial, as_of, transits, lose_first_reply=True, actions=actions
        ).play(mail)
        out.diverged |= latest.diverged
    waits = {s: waits_for(s, t, folds, base) for s, t in targets.items() if s not in base.in_sync_at}
    back = sorted({s for stores in waits.values() for s in stores}) if bound else []
    if back:  # what the down stores' return would do: the same plays with them back at the as-of
        back_base = Play(org, fid, snapshot, targets, as_of, transits, back=back, actions=actions).play(mail)
        back_bound = Play(
            org, fid, snapshot, targets, as_of, transits, lose_first_reply=True, back=back, actions=actions
        ).play(mail)
        out.diverged |= back_base.diverged or back_bound.diverged
    for store, target in sorted(targets.items()):
        done = base.in_sync_at.get(store)
        asked = [r for r in base.requests if r.store == store and (done is None or r.at <= done)]
        row: dict[str, Any] = {
            "store": store,
            "fid": fid,
            "lacks_cnset": target.text(),
            "lacks_count": target.count(),
            "in_sync_at": done,
            "latest_in_sync_at": latest.in_sync_at.get(store) if bound else None,
            "requests": len(asked),
            "sources": sorted(base.sources[store]),
            "blocked_by": None,
            "waits_for": None,
            "after_back_s": None,
            "latest_after_back_s": None,
        }
        if done is None:
            row["blocked_by"] = blocked_by(store, target, folds, base, org, as_of)
            if waits.get(store):
                row["waits_for"] = waits[store]
            if waits.get(store) and bound:
                row["after_back_s"] = _seconds_after(back_base.in_sync_at.get(store), as_of)
                row["latest_after_back_s"] = _seconds_after(back_bound.in_sync_at.get(store), as_of)
                row["blocked_by"] += "; " + unblock_text(row)
        out.forecast.append(row)
    out.requests = [request_row(r, base) for r in base.requests]
    return out


def mail_in_order(in_flight: Iterable[tuple[Message, str]]) -> list[tuple[Message, str]]:
    """The mail on its way in the order it was sent (the job's partitions meet it in another order
    than the log): every play of a folder takes it so."""
    return sorted(in_flight, key=lambda pair: (pair[0].sent_at, pair[0].seq, pair[1]))


def request_row(r: SentRequest, play: PlayResult) -> dict[str, Any]:
    asked = CNSet.parse(r.cnset)
    answer = play.answers.get(r.msg) if r.msg else None
    return {
        "entry_id": r.entry_id,
        "observer": r.store,
        "fid": r.fid,
        "attempt": r.attempt,
        "due_at": r.at,
        "source": r.source,
        "cnset": r.cnset,
        "cnset_count": asked.count(),
        "answered_at": answer.at if answer else None,
        "outcome": outcome(r, asked, play),
    }


def outcome(r: SentRequest, asked: CNSet, play: PlayResult) -> str:
    """What became of one request of the play, in words."""
    answer = play.answers.get(r.msg) if r.msg else None
    if answer is not None:
        got = answer.cns.intersection(asked)
        if got == asked:
            return "answered"
        if got:
            return f"answered in part: the source held {got.count()} of the {asked.count()} CNs"
        return "answered: the source held none of them"
    if r.msg in play.lost:
        return "reply lost (the bound's assumption)"
    if not play.up.get(r.source, True):
        return "source down: the request waits in its queue, and expires 48 hours after it was sent"
    if r.msg in play.processed:
        return "processed by the source; no reply within the horizon"
    return "not processed within the horizon"


def blocked_by(
    store: str, target: CNSet, folds: Mapping[str, FolderFold], play: PlayResult, org: OrgContext, as_of: int
) -> str:
    """Why ``store`` is not in sync within the horizon: it is down; CNs only stores that are down
    hold (or none); CNs it was never told of; or a backfill no source answers."""
    remaining = target.difference(play.held.get(store, EMPTY))
    parts: list[str] = []
    if not play.up.get(store, True):
        parts.append(f"{store} is down{_since(org, store, as_of)}: it processes nothing until it is back")
    up_held = EMPTY
    down_held: dict[str, CNSet] = {}
    for other, fold in sorted(folds.items()):
        if other == store:
            continue
        part = fold.owned.intersection(remaining)
        if not part:
            continue
        if play.up.get(other, True):
            up_held = up_held.union(part)
        else:
            down_held[other] = part
    out_of_reach = remaining.difference(up_held)
    for other, part in down_held.items():
        only = part.intersection(out_of_reach)
        if only:
            parts.append(f"only {other} holds {only.text()}: down{_since(org, other, as_of)}")
    nobody = out_of_reach.difference(_union(down_held.values()))
    if nobody:
        parts.append(f"no store holds {nobody.text()}: that content is lost")
    reachable = remaining.intersection(up_held)
    if reachable and play.up.get(store, True):
        known = reachable.intersection(play.missing.get(store, EMPTY))
        untold = reachable.difference(known)
        if known:
            parts.append(f"backfill of {known.text()} is never answered by a store that holds it")
        if untold:
            parts.append(
                f"nothing on its way tells {store} of {untold.text()} (no change, status message or reply is due)"
            )
    return "; ".join(parts) if parts else f"{store} still lacks {remaining.text()} at the horizon"


def waits_for(store: str, target: CNSet, folds: Mapping[str, FolderFold], play: PlayResult) -> list[str]:
    """The stores down at the as-of whose return a replica not in sync waits for: its own, and
    those holding CNs it still lacks."""
    remaining = target.difference(play.held.get(store, EMPTY))
    return sorted(
        s
        for s, fold in folds.items()
        if not play.up.get(s, True) and (s == store or fold.owned.intersection(remaining))
    )


def unblock_text(row: Mapping[str, Any]) -> str:
    """``in sync ~2 h after PFJNB02 is back, 14 h at the latest if its queued mail expires first or
    a reply is lost``."""
    who, verb = stores_are(list(row["waits_for"]))
    after, latest = row["after_back_s"], row["latest_after_back_s"]
    if after is None:
        return f"still not in sync within 14 days once {who} {verb} back"
    lost = "if its queued mail expires first or a reply is lost"
    if latest is None:
        bound = f", and not within 14 days {lost}"
    elif latest - after < 60:
        bound = " (a lost reply would not delay it)"
    else:
        bound = f", {duration(latest)} at the latest {lost}"
    if after < 60:
        return f"in sync as soon as {who} {verb} back{bound}"
    return f"in sync ~{duration(after)} after {who} {verb} back{bound}"


def stores_are(stores: list[str]) -> tuple[str, str]:
    """``("PFS1", "is")``, ``("PFS1, PFS2 and PFS3", "are")``: stores named in a sentence."""
    if len(stores) == 1:
        return stores[0], "is"
    return ", ".join(stores[:-1]) + f" and {stores[-1]}", "are"


def duration(seconds: float) -> str:
    """``5 min``, ``2 h``, ``2 h 30 min``, ``3 d 4 h``: how long, as an operator reads it."""
    minutes = max(round(seconds / 60), 0)
    days, rest = divmod(minutes, 24 * 60)
    hours, mins = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h" if hours else f"{days} d"
    if hours:
        return f"{hours} h {mins} min" if mins else f"{hours} h"
    return f"{mins} min"


def _seconds_after(at: int | None, as_of: int) -> float | None:
    return None if at is None else (at - as_of) / US


def _since(org: OrgContext, store: str, as_of: int) -> str:
    since = org.down_since(store, as_of)
    return f" since {format_ts(since)}" if since is not None else ""


def _union(sets: Iterable[CNSet]) -> CNSet:
    out = EMPTY
    for s in sets:
        out = out.union(s)
    return out
