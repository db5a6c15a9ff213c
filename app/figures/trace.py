"""The trace of missing CNs: the messages that carried them, who processed each, and in words
what became of them for the store that lacks them (the ``/trace`` page's logic, on frames of the
published ``messages`` table).

A message carries an asked CN when its ``changes`` hold it; when no message carried any of them
as changes, the messages whose ``cnset`` (the sender's set) holds them are listed instead (what
told the stores about them). Set algebra only (``CNSet``), never string matching.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from pfscope.app.figures.text import fmt_time, plural
from pfscope.spark_jobs.model.cnset import CNSet
from pfscope.spark_jobs.model.rules.timeouts import QUEUE_EXPIRY
from pfscope.spark_jobs.model.timeutil import HOUR, SECOND

#: queued replication mail older than this (as of the run) and never processed is lost or expired
EXPIRY = pd.Timedelta(microseconds=QUEUE_EXPIRY)
EXPIRY_TEXT = f"{QUEUE_EXPIRY // HOUR} hours" if QUEUE_EXPIRY % HOUR == 0 else f"{QUEUE_EXPIRY // SECOND} s"

IN_TRANSIT = "in transit"
LOST = "lost or expired"
NOT_SENT = "not sent to it"


@dataclass(frozen=True)
class Recipient:
    store: str
    processed_at: pd.Timestamp | None
    status: str  # processed at T, in transit or lost or expired


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
    status: str  # for the store asked about: processed at T, in transit, lost or expired, not sent to it


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


def status_for(
    processed_at: pd.Timestamp | None, sent_at: pd.Timestamp, as_of: pd.Timestamp, recipient: bool = True
) -> str:
    """What became of a message for one store, as of the run, in words."""
    if not recipient:
        return NOT_SENT
    if processed_at is not None:
        return f"processed at {fmt_time(processed_at)}"
    return IN_TRANSIT if as_of - sent_at < EXPIRY else LOST


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


def trace(messages: pd.DataFrame, asked: CNSet, store: str, as_of: Any) -> Trace:
    """Every message that carried any of ``asked`` (sent to anyone), in time order, with each
    recipient's processing and ``store``'s status; and the one-line summary."""
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
            recips = tuple(
                Recipient(str(r), _time(p), status_for(_time(p), sent, now))
                for r, p in zip(group["recipient"], group["processed_at"], strict=True)
            )
            mine = next((r for r in recips if r.store == store), None)
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
                    mine.status if mine else NOT_SENT,
                )
            )
    return Trace(store, asked.text(), basis, tuple(out), summary_line(store, asked.text(), basis, out))


def summary_line(store: str, asked: str, basis: str, found: list[Carrier]) -> str:
    """``PFRED01 lacks PFDUB03:114-119: carried by 3 messages it never processed, the last sent
    ...; 1 lost or expired, 2 in transit``."""
    head = f"{store} lacks {asked}"
    if not found:
        return f"{head}: no message sent by the as-of carried any of them."
    how = "" if basis == "changes" else " in the sender's set (no message carried them as changes)"
    to_it = [m for m in found if m.status != NOT_SENT]
    if not to_it:
        return f"{head}: {plural(len(found), 'message')} carried them{how}, none of them sent to {store}."
    never = [m for m in to_it if not m.status.startswith("processed")]
    if not never:
        last = max(r.processed_at for m in to_it for r in m.recipients if r.store == store and r.processed_at)
        return (
            f"{head}: carried{how} by {plural(len(to_it), 'message')} sent to it, all processed "
            f"(the last at {fmt_time(last)})."
        )
    lost = sum(m.status == LOST for m in never)
    transit = len(never) - lost
    if transit == 0:
        fate = "it is lost or expired" if len(never) == 1 else "all lost or expired"
    elif lost == 0:
        fate = "it is still in transit" if len(never) == 1 else "all still in transit"
    else:
        fate = f"{lost} lost or expired (the oldest), {transit} still in transit"
    processed = len(to_it) - len(never)
    also = f"; it processed {plural(processed, 'other message')}" if processed else ""
    return (
        f"{head}: carried{how} by {plural(len(never), 'message')} it never processed, the last sent "
        f"{fmt_time(never[-1].sent_at)}; {fate}{also}."
    )
