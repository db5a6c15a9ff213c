"""How a forecast came true: for a replica a run forecast, the first time it actually held every
CN it then lacked (from a later run's ``state_history``: its store's own row), against the
forecast's ``in_sync_at`` and ``latest_in_sync_at``."""

from __future__ import annotations

from collections.abc import Iterable

from pfscope.spark_jobs.model.cnset import CNSet

WITHIN = "within its bounds"
LATE = "late"
NOT_YET = "not yet due"
STILL_LACKING = "still lacking, as forecast"
CAUGHT_UP = "caught up, though forecast not to"


def actual_in_sync(lacked: CNSet, owned: Iterable[tuple[int, CNSet]], after: int) -> int | None:
    """The first time after ``after`` that the store's owned set (its self row's changes, ``(at,
    cnset)`` in time order) holds every CN of ``lacked``; None when it never does."""
    for at, cns in owned:
        if at > after and lacked.issubset(cns):
            return at
    return None


def came_true(in_sync_at: int | None, latest: int | None, actual: int | None, seen_until: int) -> str:
    """A forecast against what happened by ``seen_until`` (the later run's as-of): within its bounds
    (in sync by its latest time, or by its time when it had no bound), late, not yet due (not in
    sync, but its time has not come), still lacking as forecast, or caught up though forecast not to."""
    if in_sync_at is None:
        return STILL_LACKING if actual is None else CAUGHT_UP
    due = latest if latest is not None else in_sync_at
    if actual is None:
        return NOT_YET if seen_until < due else LATE
    return WITHIN if actual <= due else LATE
