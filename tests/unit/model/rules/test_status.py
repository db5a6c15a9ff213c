"""Status messages: the first 00:15 or 12:15 UTC at or after the last change + 24 h."""

from __future__ import annotations

import pytest

from pfscope.spark_jobs.model.rules.status import next_status_at, status_due
from pfscope.spark_jobs.model.timeutil import parse_ts

T = parse_ts


@pytest.mark.parametrize(
    ("last_change", "due"),
    [
        # exactly at a run: + 24 h lands on 00:15 or 12:15, which is "at or after"
        ("2026-11-02T00:15:00Z", "2026-11-03T00:15:00Z"),
        ("2026-11-02T12:15:00Z", "2026-11-03T12:15:00Z"),
        # just after a run: the next one
        ("2026-11-02T00:15:00.000001Z", "2026-11-03T12:15:00Z"),
        ("2026-11-02T12:15:01Z", "2026-11-04T00:15:00Z"),
        # between runs
        ("2026-11-02T08:00:00Z", "2026-11-03T12:15:00Z"),
        ("2026-11-02T00:00:00Z", "2026-11-03T00:15:00Z"),
        # across midnight: after 12:15 the next run is tomorrow's 00:15
        ("2026-11-02T23:59:00Z", "2026-11-04T00:15:00Z"),
        ("2026-11-02T13:00:00Z", "2026-11-04T00:15:00Z"),
        # across a month and a year
        ("2026-12-31T18:00:00Z", "2027-01-02T00:15:00Z"),
        # an offset other than Z means the same instant in UTC
        ("2026-11-02T10:00:00+02:00", "2026-11-03T12:15:00Z"),
    ],
)
def test_status_due_first_run_at_or_after_a_day_later(last_change: str, due: str) -> None:
    assert status_due(T(last_change)) == T(due)


def test_next_status_at_none_when_never_changed() -> None:
    assert next_status_at(None, T("2026-11-02T00:00:00Z")) is None


def test_next_status_at_pending_when_after_as_of() -> None:
    u = T("2026-11-02T08:00:00Z")
    assert next_status_at(u, T("2026-11-03T12:14:59Z")) == T("2026-11-03T12:15:00Z")


def test_next_status_at_none_when_exactly_at_as_of() -> None:
    u = T("2026-11-02T08:00:00Z")
    assert next_status_at(u, T("2026-11-03T12:15:00Z")) is None


def test_next_status_at_none_when_before_as_of() -> None:
    u = T("2026-11-02T08:00:00Z")
    assert next_status_at(u, T("2026-11-05T00:00:00Z")) is None
