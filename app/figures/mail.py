"""Mail never processed: what became of it by the model's rule, and its bursts as incidents.

A delivery (a message and one recipient) the recipient had not processed by the as-of is, by
the model's rule (``spark_jobs/model/rules/transit.py``, :func:`message_state`): **in transit**
while younger than the pair's usual transit (the longest the recipient took for the sender's
mail, from the published ``transits``; an hour when it never processed one) and than the queue
expiry, then **queued** until 48 hours after it was sent (Exchange's queue expiry,
``QUEUE_EXPIRY``), then **expired**. :func:`mail_states` is that rule over a frame. The
deliveries to one recipient close in time are a burst, and bursts at the same time one incident.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pandas as pd

from pfscope.app.figures.incidents import (
    RUN_GAP,
    Incident,
    keyed_runs,
    merge_spans,
    named,
    names,
)
from pfscope.app.figures.outages import short_time, span_text
from pfscope.app.figures.text import plural
from pfscope.spark_jobs.model.rules.timeouts import QUEUE_EXPIRY
from pfscope.spark_jobs.model.rules.transit import EXPIRED, IN_TRANSIT, NO_TRANSIT_SEEN, QUEUED
from pfscope.spark_jobs.model.timeutil import SECOND

STATES = (EXPIRED, QUEUED, IN_TRANSIT)
#: Exchange's queue expiry: mail not delivered this long after it was sent is dropped
EXPIRY = pd.Timedelta(microseconds=QUEUE_EXPIRY)
#: deliveries to one recipient make a burst from this many on; fewer are scattered losses
BURST_MIN = 3

STATE_COLUMNS = ["msg", "fid", "sender", "type", "sent_at", "recipient", "transit_s", "state", "expires_at"]


def mail_states(never: pd.DataFrame, transits: pd.DataFrame, as_of: Any) -> pd.DataFrame:
    """``never`` (msg, fid, sender, type, sent_at, recipient: deliveries never processed) with the
    pair's usual transit (``transits``: sender, recipient, longest_transit_s), the state at
    ``as_of`` by the model's rule and when it expires (expired: when it did)."""
    if never.empty:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in STATE_COLUMNS})
    usual = (
        transits.set_index(["sender", "recipient"])["longest_transit_s"].astype("float64")
        if not transits.empty
        else pd.Series(dtype="float64")
    )
    keys = pd.MultiIndex.from_arrays([never["sender"].astype(str), never["recipient"].astype(str)])
    seconds = usual.reindex(keys).to_numpy(dtype="float64") if len(usual) else np.full(len(never), np.nan)
    seconds = np.where(np.isnan(seconds), NO_TRANSIT_SEEN / SECOND, np.maximum(seconds, 0.0))
    sent = pd.to_datetime(never["sent_at"], utc=True)
    age = (pd.Timestamp(as_of).tz_convert("UTC") - sent).dt.total_seconds().to_numpy()
    expiry = QUEUE_EXPIRY / SECOND
    state = np.where((age < seconds) & (age < expiry), IN_TRANSIT, np.where(age < expiry, QUEUED, EXPIRED))
    out = never.assign(sent_at=sent, transit_s=seconds, state=state, expires_at=sent + EXPIRY)
    return out[STATE_COLUMNS].reset_index(drop=True)


def states_text(states: pd.Series, expires: pd.Series | None = None) -> str:
    """``30 expired, 7 queued (expire by Tue 11-10 23:51), 2 in transit``."""
    counts = Counter(states)
    last = expires[states == QUEUED].max() if expires is not None and counts.get(QUEUED) else None
    return counts_text(counts, last)


def counts_text(counts: Counter[str] | dict[str, int], last_queued: Any = None) -> str:
    """:func:`states_text` from the counts per state and when the last queued one expires."""
    parts = []
    for s in STATES:
        n = int(counts.get(s, 0))
        if not n:
            continue
        text = f"{n:,} {s}"
        if s == QUEUED and last_queued is not None and not pd.isna(last_queued):
            text += (
                f" (expire by {short_time(last_queued)})"
                if n > 1
                else f" (expires {short_time(last_queued)})"
            )
        parts.append(text)
    return ", ".join(parts)


def mail_incidents(states: pd.DataFrame, periods: pd.DataFrame | None = None) -> tuple[list[Incident], int]:
    """Deliveries never processed as incidents: per recipient, deliveries within an hour of each
    other are a burst (:data:`BURST_MIN` or more); bursts at the same time are one incident; the
    rest (scattered losses) one incident a day. Returns them and the deliveries they group."""
    if states.empty:
        return [], 0
    rows = states.assign(_down=_sent_while_down(states, periods))
    rows = rows.assign(_burst=keyed_runs(rows, "recipient", "sent_at", RUN_GAP))
    size = rows.groupby("_burst")["msg"].transform("size")
    bursts, scattered = rows[size >= BURST_MIN], rows[size < BURST_MIN]
    out: list[Incident] = []
    if not bursts.empty:
        spans = bursts.groupby("_burst").agg(
            start=("sent_at", "min"), end=("sent_at", "max"), recipient=("recipient", "first")
        )
        spans = spans.assign(group=merge_spans(spans, RUN_GAP))
        lines = _burst_lines(bursts, spans)
        for _, group in spans.groupby("group", sort=True):
            ordered = group.sort_values(["start", "recipient"]).index
            part = bursts[bursts["_burst"].isin(ordered)]
            out.append(_incident(part, tuple(lines[b] for b in ordered), scattered=False))
    if not scattered.empty:
        for _, part in scattered.groupby(scattered["sent_at"].dt.floor("D"), sort=True):
            out.append(_incident(part, (), scattered=True))
    return out, len(rows)


def _sent_while_down(states: pd.DataFrame, periods: pd.DataFrame | None) -> np.ndarray:
    """Per delivery: sent while its recipient was down (by ``store_periods``)."""
    down = np.zeros(len(states), dtype=bool)
    if periods is None or periods.empty:
        return down
    sent = pd.DatetimeIndex(pd.to_datetime(states["sent_at"], utc=True)).asi8
    recipient = states["recipient"].astype(str).to_numpy()
    for store, start, end in zip(periods["store"], periods["down_at"], periods["up_at"], strict=True):
        mine = (recipient == str(store)) & (sent >= pd.Timestamp(start).value)
        if end is not None and not pd.isna(end):
            mine &= sent < pd.Timestamp(end).value
        down |= mine
    return down


def _burst_lines(bursts: pd.DataFrame, spans: pd.DataFrame) -> dict[Any, str]:
    """``PFSIN02: 33 messages, Tue 11-03 05:50 to 07:51: 33 expired`` per burst, from aggregates
    (one line per store of an incident: hundreds at 200 stores)."""
    counts = pd.crosstab(bursts["_burst"], bursts["state"])
    queued = bursts[bursts["state"] == QUEUED].groupby("_burst")["expires_at"].max()
    out = {}
    for b, r in spans.iterrows():
        mine = counts.loc[b]
        n = int(mine.sum())
        out[b] = (
            f"{r['recipient']}: {plural(n, 'message')}, {span_text(r['start'], r['end'])}: "
            f"{counts_text(mine.to_dict(), queued.get(b))}"
        )
    return out


def _incident(rows: pd.DataFrame, parts: tuple[str, ...], scattered: bool) -> Incident:
    recipients = tuple(sorted(set(rows["recipient"].astype(str))))
    messages = int(rows["msg"].nunique())
    start, end = rows["sent_at"].min(), rows["sent_at"].max()
    to = (
        f"to {recipients[0]}"
        if len(recipients) == 1
        else f"to {len(recipients):,} stores ({names(recipients)})"
    )
    count = plural(messages, "message") + (f" ({len(rows):,} deliveries)" if len(rows) != messages else "")
    senders = Counter(rows["sender"].astype(str))
    down = int(rows["_down"].sum())
    text = (
        f"{count} never processed, {to}"
        + (" (scattered, not in bursts)" if scattered else "")
        + f": {states_text(rows['state'], rows['expires_at'])}"
        + (f"; from {named(senders)}" if not scattered else "")
        + (f"; {down:,} sent while the recipient was down" if down else "")
    )
    lost = bool((rows["state"] != IN_TRANSIT).any())
    return Incident(
        kind="mail",
        start=start,
        end=end,
        text=text,
        tier="warning" if lost and not scattered else "info",
        stores=recipients,
        folders=tuple(dict.fromkeys(rows["fid"].astype(str))),
        events=len(rows),
        parts=parts if len(parts) > 1 else (),
        href=f"/store/{recipients[0]}" if len(recipients) == 1 else None,
    )
