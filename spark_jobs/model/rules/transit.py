"""How long mail takes between two stores, and what became of a message no recipient processed
("What a store believes, and what is so": in transit, queued, expired).

A pair's transits are the times between a message's send by ``S`` and its processing by ``R``
(``processed_at - sent_at``), over every message ``R`` processed from ``S`` by the as-of, in
every folder. The published ``transits`` table gives each pair's median and longest; the trace
reads a message's state from the longest (the pair's usual transit), the forecast will play
replies forward with the median.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pfscope.spark_jobs.model.rules.timeouts import QUEUE_EXPIRY
from pfscope.spark_jobs.model.timeutil import HOUR

#: a pair's usual transit when the recipient never processed a message from the sender
NO_TRANSIT_SEEN = HOUR

PROCESSED = "processed"
IN_TRANSIT = "in transit"
QUEUED = "queued"
EXPIRED = "expired"


def median_transit(transits: Sequence[int]) -> int:
    """The pair's median: the lower middle value of its sorted transits (a transit that was
    observed, never a mean of two; the Spark job takes the same element)."""
    if not transits:
        raise ValueError("a pair's median needs at least one transit")
    return sorted(transits)[(len(transits) - 1) // 2]


def usual_transit(longest: int | None) -> int:
    """How long a message from ``S`` to ``R`` may take before it is late: the longest transit
    ``R`` has seen from ``S`` (microseconds), or an hour when it never processed one."""
    return NO_TRANSIT_SEEN if longest is None else max(longest, 0)


@dataclass(frozen=True)
class MessageState:
    """What became of one message for one recipient, as of the run."""

    state: str  # processed, in transit, queued or expired
    expires_at: int | None  # queued: when Exchange expires it (microseconds); else None


def message_state(sent_at: int, processed_at: int | None, as_of: int, usual: int) -> MessageState:
    """The rule: processed if the recipient processed it by the as-of; else in transit while
    younger than the pair's usual transit (:func:`usual_transit`), then queued until
    ``QUEUE_EXPIRY`` after it was sent, then expired."""
    if processed_at is not None and processed_at <= as_of:
        return MessageState(PROCESSED, None)
    age = as_of - sent_at
    if age < usual and age < QUEUE_EXPIRY:
        return MessageState(IN_TRANSIT, None)
    if age < QUEUE_EXPIRY:
        return MessageState(QUEUED, sent_at + QUEUE_EXPIRY)
    return MessageState(EXPIRED, None)
