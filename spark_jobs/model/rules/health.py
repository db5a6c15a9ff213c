"""Replica health at the as-of time: the first state that holds."""

from __future__ import annotations

from collections.abc import Iterable

DELETED = "deleted"
DELETE_PENDING = "delete_pending"
OVERDUE = "overdue"
BACKFILLING = "backfilling"
IN_SYNC = "in_sync"
HEALTH_STATES = (DELETED, DELETE_PENDING, OVERDUE, BACKFILLING, IN_SYNC)


def replica_health(lifecycle: str, open_entry_requests: Iterable[int]) -> str:
    """``lifecycle`` is ``active``, ``delete_pending`` or ``deleted``; the open entries give their
    request counts. Overdue: an open entry's first request did not fill it (two or more)."""
    if lifecycle == DELETED:
        return DELETED
    if lifecycle == DELETE_PENDING:
        return DELETE_PENDING
    counts = list(open_entry_requests)
    if any(n >= 2 for n in counts):
        return OVERDUE
    if counts:
        return BACKFILLING
    return IN_SYNC
