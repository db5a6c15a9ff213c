"""How a forecast came true: the first time the store held what it lacked, against the bounds."""

from __future__ import annotations

from pfscope.spark_jobs.model.cnset import CNSet
from pfscope.spark_jobs.model.forecast.outcome import (
    CAUGHT_UP,
    LATE,
    NOT_YET,
    STILL_LACKING,
    WITHIN,
    actual_in_sync,
    came_true,
)

P = CNSet.parse


def test_the_first_owned_set_after_the_as_of_that_holds_them_all() -> None:
    owned = [(5, P("P1:1")), (10, P("P1:1-2")), (20, P("P1:1-3")), (30, P("P1:1-4"))]
    assert actual_in_sync(P("P1:2-3"), owned, after=0) == 20
    assert actual_in_sync(P("P1:2"), owned, after=10) == 20  # only times after the forecast's as-of
    assert actual_in_sync(P("P1:9"), owned, after=0) is None


def test_within_late_not_yet_and_the_blocked_ones() -> None:
    assert came_true(100, 200, 150, 300) == WITHIN
    assert came_true(100, 200, 90, 300) == WITHIN  # earlier than forecast is within too
    assert came_true(100, 200, 250, 300) == LATE
    assert came_true(100, None, 120, 300) == LATE  # no bound: its own time is the bound
    assert came_true(100, 200, None, 150) == NOT_YET
    assert came_true(100, 200, None, 250) == LATE
    assert came_true(None, None, None, 900) == STILL_LACKING
    assert came_true(None, None, 400, 900) == CAUGHT_UP
