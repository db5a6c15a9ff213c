"""Which responses answer a request (docs/model.md, "Transits and the state of mail"; the model's
"a backfill request is traced like any message: processed by its source or not, and which
backfill responses answered it").

The log does not tie a response to the request it answers, so the rule reads it from the
responder's own log: a response answers the request the responder last processed before
sending it. For one requester ``R``, responder ``S``, folder ``F`` and kind of request:

- a backfill request is answered by the backfill responses ``S`` sent ``R`` for ``F`` from when
  ``S`` processed it until ``S`` processed ``R``'s next backfill request for ``F`` (the next by
  processing time; a request ``S`` never processed opens no window);
- a status request likewise by the status messages ``S`` sent ``R`` alone for ``F`` (a status
  message sent to every replica is the scheduled 24-hour one, no answer);
- requests ``S`` processed at the same time share their responses (the log cannot tell them
  apart); a response sent before ``S`` processed any request answers none.

Both ends of a window and the response's send time are ``S``'s log, so no clock difference
between stores enters. Pure Python (microseconds), applied by the dashboard.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

#: a request's type -> the type of message that answers it
REPLY_TYPE = {"backfill_request": "backfill_response", "status_request": "status"}


@dataclass(frozen=True)
class Asked:
    """One request as its responder's log has it."""

    msg: str
    processed_at: int | None  # when the responder processed it; None: not by the as-of


@dataclass(frozen=True)
class Reply:
    """One response the responder sent the requester for the folder."""

    msg: str
    sent_at: int


def is_reply(request_type: str, reply_type: str, recipients: Iterable[str], requester: str) -> bool:
    """Whether a message of ``reply_type`` sent to ``recipients`` can answer ``requester``'s
    request of ``request_type``: the answering type, sent to the requester (a status message
    to the requester alone)."""
    if REPLY_TYPE.get(request_type) != reply_type:
        return False
    to = set(recipients)
    return to == {requester} if reply_type == "status" else requester in to


def answers(requests: Sequence[Asked], replies: Sequence[Reply]) -> dict[str, tuple[str, ...]]:
    """Each request's answering replies, in send order, for one requester, responder, folder and
    kind (every request has a key; one never processed answers to none)."""
    starts = sorted({r.processed_at for r in requests if r.processed_at is not None})
    by_start: dict[int, list[str]] = {t: [] for t in starts}
    for reply in sorted(replies, key=lambda r: (r.sent_at, r.msg)):
        i = bisect_right(starts, reply.sent_at) - 1
        if i >= 0:
            by_start[starts[i]].append(reply.msg)
    return {r.msg: tuple(by_start[r.processed_at]) if r.processed_at is not None else () for r in requests}
