"""What became of one message for one recipient, in words: the model's rule
(``rules.transit.message_state``) with the pair's usual transit from the published ``transits``.

Every page that says a message was processed, is in transit, queued or expired reads it here, so
the dashboard keeps one rule: the trace of missing CNs, the trace of requests and the folder
page's entry timeline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from pfscope.app.figures.text import fmt_age, fmt_time
from pfscope.spark_jobs.model.rules.timeouts import QUEUE_EXPIRY
from pfscope.spark_jobs.model.rules.transit import (
    EXPIRED,
    IN_TRANSIT,
    NO_TRANSIT_SEEN,
    PROCESSED,
    QUEUED,
    message_state,
    usual_transit,
)
from pfscope.spark_jobs.model.timeutil import HOUR, SECOND

#: Exchange's queue expiry in words
EXPIRY_TEXT = f"{QUEUE_EXPIRY // HOUR} hours" if QUEUE_EXPIRY % HOUR == 0 else fmt_age(QUEUE_EXPIRY / SECOND)
#: a run published without ``transits`` (an earlier pfscope): mail not processed and younger than
#: the queue expiry is in transit or queued, which the run cannot tell
PENDING = "in transit or queued"
NO_TRANSITS = "this run has no transits table (an earlier pfscope): its usual transit is unknown"
#: a store a message was not addressed to
NOT_SENT = "not sent to it"
#: a request the model expects but the log has no message for
EXPECTED = "expected"
EXPECTED_TEXT = "expected by the rules; no such message in the log"

#: (sender, recipient) -> the longest transit the recipient processed from the sender (µs)
Usual = dict[tuple[str, str], int]


def usual_transits(transits: pd.DataFrame | None) -> Usual | None:
    """The published ``transits`` as a look-up of each pair's longest transit (microseconds);
    None for a run published without the table (pass None then)."""
    if transits is None:
        return None
    if transits.empty or "longest_transit_s" not in transits.columns:
        return {}
    return {
        (str(s), str(r)): round(float(t) * SECOND)
        for s, r, t in zip(
            transits["sender"], transits["recipient"], transits["longest_transit_s"], strict=True
        )
        if pd.notna(t)
    }


def micros(value: Any) -> int | None:
    """A time as microseconds since the epoch (None for a missing one)."""
    if value is None or (not isinstance(value, (list, tuple)) and pd.isna(value)):
        return None
    ts = pd.Timestamp(value)
    if ts.tzinfo is None:
        ts = ts.tz_localize("UTC")
    return int(ts.value // 1000)


def stamp(us: int | None) -> pd.Timestamp | None:
    return None if us is None else pd.Timestamp(us * 1000, tz="UTC")


@dataclass(frozen=True)
class Delivery:
    """One message for one recipient as of the run: the rule's state and its words."""

    state: str  # processed, in transit, queued, expired (rules.transit), or not sent to it
    text: str  # "processed at T", "in transit", "queued (expires T)", "expired (at T)"
    processed_at: pd.Timestamp | None
    expires_at: pd.Timestamp | None  # queued: when it expires; expired: when it did
    usual: str = ""  # the pair's usual transit in words, for mail not processed


def duration(us: int) -> str:
    """A transit in words: ``40 min``, ``5 h``, ``2 h 5 min``, ``30 s`` (at least a second)."""
    return fmt_age(max(us, SECOND) / SECOND).removesuffix(" 0 min")


def usual_text(sender: str, recipient: str, usual: Usual | None) -> str:
    """``PFDUB01 usually processes PFRED01's mail within 40 min`` (or that it never did, or that
    the run cannot say)."""
    if usual is None:
        return NO_TRANSITS
    longest = usual.get((sender, recipient))
    if longest is None:
        return (
            f"{recipient} never processed mail from {sender}: "
            f"{duration(NO_TRANSIT_SEEN)} is taken as its usual transit"
        )
    return f"{recipient} usually processes {sender}'s mail within {duration(longest)}"


def delivery(
    sender: str, recipient: str, sent_at: Any, processed_at: Any, as_of: Any, usual: Usual | None
) -> Delivery:
    """The rule for one message and recipient, in words (``sent_at``, ``processed_at``, ``as_of``:
    times; ``processed_at`` None when the recipient had not processed it by the as-of; ``usual``
    None: the run has no ``transits``, so in transit and queued are one :data:`PENDING`)."""
    sent, done, now = micros(sent_at), micros(processed_at), micros(as_of)
    assert sent is not None and now is not None, "a message's send time and the run's as-of"
    longest = usual.get((sender, recipient)) if usual is not None else 0
    got = message_state(sent, done, now, usual_transit(longest))
    if got.state == PROCESSED:
        return Delivery(PROCESSED, f"processed at {fmt_time(stamp(done))}", stamp(done), None)
    words = usual_text(sender, recipient, usual)
    if got.state == IN_TRANSIT:
        return Delivery(IN_TRANSIT, IN_TRANSIT, None, None, words)
    if got.state == QUEUED:
        at = stamp(got.expires_at)
        if usual is None:  # a usual transit of 0 made it queued: the run cannot tell which
            return Delivery(PENDING, f"{PENDING} (expires {fmt_time(at)})", None, at, words)
        return Delivery(QUEUED, f"queued (expires {fmt_time(at)})", None, at, words)
    at = stamp(sent + QUEUE_EXPIRY)
    return Delivery(EXPIRED, f"expired (at {fmt_time(at)})", None, at, words)


def not_sent() -> Delivery:
    return Delivery(NOT_SENT, NOT_SENT, None, None)


def expected() -> Delivery:
    """A request of the model's own: no message, so no state of mail."""
    return Delivery(EXPECTED, EXPECTED_TEXT, None, None)


STATES = (PROCESSED, IN_TRANSIT, QUEUED, EXPIRED)
#: a message its recipient has not processed, by the rule (or the run cannot split the first two)
NOT_PROCESSED = (IN_TRANSIT, QUEUED, EXPIRED, PENDING)
