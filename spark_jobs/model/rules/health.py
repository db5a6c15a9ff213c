"""Replica health at the as-of time: the first state that holds."""

from __future__ import annotations

from collections.abc import Iterable

DELETED = "deleted"
DELETE_PENDING = "delete_pending"
OVERDUE = "overdue"
BACKFILLING = "backfilling"
IN_SYNC = "in_sync"
HEALTH_STATES = (DELETED, DELETE_PENDING, OVERDUE, BACKFILLING, IN_SYNC)

#: an open entry is overdue once it has had this many requests (its first did not fill it)
OVERDUE_REQUESTS = 2


def entry_overdue(requests: int) -> bool:
    """The one place the dashboard, the metrics and the health rule learn what overdue means."""
    return requests >= OVERDUE_REQUESTS


def replica_health(lifecycle: str, open_entry_requests: Iterable[int]) -> str:
    """``lifecycle`` is ``active``, ``delete_pending`` or ``deleted``; the open entries give their
    request counts. Overdue: an open entry's first request did not fill it (two or more)."""
    if lifecycle == DELETED:
        return DELETED
    if lifecycle == DELETE_PENDING:
        return DELETE_PENDING
    counts = list(open_entry_requests)
    if any(entry_overdue(n) for n in counts):
        return OVERDUE
    if counts:
        return BACKFILLING
    return IN_SYNC
