"""The trace of missing CNs: the messages that carried them, who processed each, and in words
what became of them for the store that lacks them (the ``/trace`` page's logic, on frames of the
published ``messages`` table). What became of a message is the model's rule, in words
(``figures.delivery``): processed at T, in transit, queued (expires T), expired (at T).

A message carries an asked CN when its ``changes`` hold it; when no message carried any of them
as changes, the messages whose ``cnset`` (the sender's set) holds them are listed instead (what
told the stores about them). Set algebra only (``CNSet``), never string matching.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from pfscope.app.figures.delivery import NOT_SENT, PENDING, Delivery, Usual, delivery, not_sent
from pfscope.app.figures.text import fmt_time, plural
from pfscope.spark_jobs.model.cnset import CNSet
from pfscope.spark_jobs.model.rules.transit import EXPIRED, IN_TRANSIT, PROCESSED, QUEUED


@dataclass(frozen=True)
class Recipient:
    store: str
    processed_at: pd.Timestamp | None
    status: str  # processed at T, in transit, queued (expires T), expired (at T): the rule's words
    state: str = PROCESSED  # the rule's state (rules.transit), or not sent to it
    usual: str = ""  # the pair's usual transit in words, when it has not processed it


@dataclass(frozen=True)
class Carrier:
    """One message that carried some of the asked CNs."""

    msg: str
    sender: str
    type: str
    sent_at: pd.Timestamp
    carried: str  # canonical text: the asked CNs it carried
    carried_count: int
    recipients: tuple[Recipient, ...]
    status: str  # for the store asked about: as a recipient's, or not sent to it
    state: str = NOT_SENT
    usual: str = ""
    expires_at: pd.Timestamp | None = None


@dataclass(frozen=True)
class Trace:
    store: str
    asked: str  # canonical text
    basis: str  # "changes", "cnset", or "" when no message carried any of them
    carriers: tuple[Carrier, ...] = field(default_factory=tuple)
    summary: str = ""


def _time(value: Any) -> pd.Timestamp | None:
    if value is None or (not isinstance(value, (list, tuple)) and pd.isna(value)):
        return None
    ts = pd.Timestamp(value)
    return ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")


def _recipient(store: str, d: Delivery) -> Recipient:
    return Recipient(store, d.processed_at, d.text, d.state, d.usual)


def carriers(messages: pd.DataFrame, asked: CNSet) -> tuple[str, pd.DataFrame]:
    """(basis, rows): the rows of ``messages`` (one per message and recipient) of the messages
    whose ``changes`` intersect ``asked``, or if none, whose ``cnset`` does; with ``carried``."""
    if messages.empty or not asked:
        return "", messages.assign(carried=pd.Series(dtype=object))
    for basis in ("changes", "cnset"):
        texts = messages[basis].fillna("").astype(str)
        parsed = {t: asked.intersection(CNSet.parse(t)) for t in pd.unique(texts)}
        carried = texts.map(lambda t, p=parsed: p[t].text())
        hit = carried != ""
        if hit.any():
            return basis, messages[hit].assign(carried=carried[hit])
    return "", messages.iloc[0:0].assign(carried=pd.Series(dtype=object))


def trace(messages: pd.DataFrame, asked: CNSet, store: str, as_of: Any, usual: Usual | None) -> Trace:
    """Every message that carried any of ``asked`` (sent to anyone), in time order, with what
    became of it for each recipient by the model's rule (``usual``: the pairs' usual transits,
    :func:`figures.delivery.usual_transits`) and for ``store``; and the one-line summary."""
    now = _time(as_of)
    assert now is not None, "the run's as-of time"
    basis, rows = carriers(messages, asked)
    out: list[Carrier] = []
    if not rows.empty:
        rows = rows.assign(_sent=pd.to_datetime(rows["sent_at"], utc=True))
        rows = rows.sort_values(["_sent", "msg", "recipient"], kind="stable")
        for msg, group in rows.groupby("msg", sort=False):
            first = group.iloc[0]
            sent = _time(first["_sent"])
            assert sent is not None
            sender = str(first["sender"])
            fates = {
                str(r): delivery(sender, str(r), sent, _time(p), now, usual)
                for r, p in zip(group["recipient"], group["processed_at"], strict=True)
            }
            recips = tuple(_recipient(r, d) for r, d in fates.items())
            mine = fates.get(store, not_sent())
            carried = CNSet.parse(str(first["carried"]))
            out.append(
                Carrier(
                    str(msg),
                    str(first["sender"]),
                    str(first["type"]),
                    sent,
                    carried.text(),
                    carried.count(),
                    recips,
                    mine.text,
                    mine.state,
                    mine.usual,
                    mine.expires_at,
                )
            )
    return Trace(store, asked.text(), basis, tuple(out), summary_line(store, asked.text(), basis, out))


def fates_text(never: list[Carrier]) -> str:
    """``1 expired (the oldest), 1 queued (expires T), 1 still in transit``; one message: ``it is
    queued (expires T)``."""
    if len(never) == 1:
        m = never[0]
        return "it is still in transit" if m.state == IN_TRANSIT else f"it is {m.status}"
    counts = {s: [m for m in never if m.state == s] for s in (EXPIRED, QUEUED, PENDING, IN_TRANSIT)}
    if len([s for s, ms in counts.items() if ms]) == 1:
        only = next(s for s, ms in counts.items() if ms)
        if only in (QUEUED, PENDING):
            last = max(m.expires_at for m in never if m.expires_at)
            return f"all {only} (the last expires {fmt_time(last)})"
        return "all still in transit" if only == IN_TRANSIT else "all expired"
    parts = []
    if counts[EXPIRED]:
        parts.append(f"{len(counts[EXPIRED])} expired (the oldest)")
    if counts[QUEUED]:
        last = max(m.expires_at for m in counts[QUEUED] if m.expires_at)
        word = "expires" if len(counts[QUEUED]) == 1 else "the last expires"
        parts.append(f"{len(counts[QUEUED])} queued ({word} {fmt_time(last)})")
    if counts[PENDING]:
        last = max(m.expires_at for m in counts[PENDING] if m.expires_at)
        word = "expires" if len(counts[PENDING]) == 1 else "the last expires"
        parts.append(f"{len(counts[PENDING])} {PENDING} ({word} {fmt_time(last)})")
    if counts[IN_TRANSIT]:
        parts.append(f"{len(counts[IN_TRANSIT])} still in transit")
    return ", ".join(parts)


def summary_line(store: str, asked: str, basis: str, found: list[Carrier]) -> str:
    """``PFRED01 lacks PFDUB03:114-119: carried by 3 messages it never processed, the last sent
    ...; 1 expired (the oldest), 1 queued (expires ...), 1 still in transit; PFRED01 usually
    processes PFDUB03's mail within 20 min``."""
    head = f"{store} lacks {asked}"
    if not found:
        return f"{head}: no message sent by the as-of carried any of them."
    how = "" if basis == "changes" else " in the sender's set (no message carried them as changes)"
    to_it = [m for m in found if m.state != NOT_SENT]
    if not to_it:
        return f"{head}: {plural(len(found), 'message')} carried them{how}, none of them sent to {store}."
    never = [m for m in to_it if m.state != PROCESSED]
    if not never:
        last = max(r.processed_at for m in to_it for r in m.recipients if r.store == store and r.processed_at)
        return (
            f"{head}: carried{how} by {plural(len(to_it), 'message')} sent to it, all processed "
            f"(the last at {fmt_time(last)})."
        )
    processed = len(to_it) - len(never)
    also = f"; it processed {plural(processed, 'other message')}" if processed else ""
    # the pair's usual transit says why mail not processed is late (one sender: one pair)
    senders = {m.sender for m in never}
    late = [m for m in never if m.state in (QUEUED, PENDING, IN_TRANSIT)]
    usual = f"; {late[0].usual}" if late and len(senders) == 1 and late[0].usual else ""
    return (
        f"{head}: carried{how} by {plural(len(never), 'message')} it never processed, the last sent "
        f"{fmt_time(never[-1].sent_at)}; {fates_text(never)}{also}{usual}."
    )
