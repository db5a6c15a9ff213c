"""Status messages: due 24 h after the last change, at the next 00:15 or 12:15 UTC run of the
replication status thread (seed 003, "Replication Status Thread")."""

from __future__ import annotations

from pfscope.spark_jobs.model.timeutil import DAY, HOUR, MINUTE

_STATUS_TIMEOUT = 24 * HOUR
_RUNS = (15 * MINUTE, 12 * HOUR + 15 * MINUTE)  # offsets of the thread's runs within a UTC day


def status_due(last_change_at: int) -> int:
    """The first 00:15 or 12:15 UTC at or after ``last_change_at + 24 h``."""
    t = last_change_at + _STATUS_TIMEOUT
    day = t - t % DAY
    for offset in (*_RUNS, DAY + _RUNS[0]):
        if day + offset >= t:
            return day + offset
    raise AssertionError("unreachable")


def next_status_at(last_change_at: int | None, as_of: int) -> int | None:
    """The pending status message's time, or None when there was never a change or it is past."""
    if last_change_at is None:
        return None
    due = status_due(last_change_at)
    return due if due > as_of else None
