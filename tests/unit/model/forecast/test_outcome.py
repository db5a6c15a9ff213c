"""How a forecast came true: the first time the store held what it lacked, against the bounds,
and for a miss, what the forecast could not know."""

from __future__ import annotations

from pfscope.spark_jobs.model.cnset import CNSet
from pfscope.spark_jobs.model.forecast.outcome import (
    CAUGHT_UP,
    LATE,
    NOT_YET,
    SLOWER,
    STILL_LACKING,
    WITHIN,
    History,
    Period,
    actual_in_sync,
    back_at,
    came_true,
    cause_kind,
    due_by,
    first_change_after,
    miss_cause,
)
from pfscope.spark_jobs.model.forecast.world import HORIZON
from pfscope.spark_jobs.model.timeutil import US, format_ts

P = CNSet.parse


def test_the_first_owned_set_after_the_as_of_that_holds_them_all() -> None:
    owned = History([(20, "P1:1-3"), (5, "P1:1"), (10, "P1:1-2"), (30, "P1:1-4")])  # any order
    assert actual_in_sync(P("P1:2-3"), owned, after=0) == 20
    assert actual_in_sync(P("P1:2"), owned, after=10) == 20  # only times after the forecast's as-of
    assert actual_in_sync(P("P1:9"), owned, after=0) is None
    assert actual_in_sync(P("P1:1"), None, after=0) is None  # the store has no rows


def test_within_late_not_yet_and_the_blocked_ones() -> None:
    assert came_true(200, 150, 300, 0) == WITHIN
    assert came_true(200, 90, 300, 0) == WITHIN  # earlier than forecast is within too
    assert came_true(200, 250, 300, 0) == LATE
    assert came_true(200, None, 150, 0) == NOT_YET
    assert came_true(200, None, 250, 0) == LATE
    assert came_true(None, None, 900, 0) == STILL_LACKING
    assert came_true(None, 400, 900, 0) == CAUGHT_UP
    # forecast not to catch up within the horizon, and it did not: as forecast
    assert came_true(None, HORIZON + 5, HORIZON + 9, 0) == STILL_LACKING


def test_the_bound_is_the_latest_time_or_the_horizon_or_after_the_return() -> None:
    row = {"in_sync_at": 100, "latest_in_sync_at": 200}
    assert due_by(row, 0, None) == 200
    assert due_by({"in_sync_at": 100, "latest_in_sync_at": None}, 7, None) == 7 + HORIZON
    waits = {"in_sync_at": None, "waits_for": ["P1"], "after_back_s": 60.0, "latest_after_back_s": 3600.0}
    assert due_by(waits, 0, None) is None  # P1 is not back yet
    assert due_by(waits, 0, 5000) == 5000 + 3600 * US
    assert due_by({**waits, "latest_after_back_s": None}, 0, 5000) == 5000 + HORIZON
    assert due_by({"in_sync_at": None, "waits_for": None, "after_back_s": None}, 0, 5000) is None


def test_back_when_the_last_store_waited_for_is_up() -> None:
    periods = [Period("P1", 10, 50), Period("P2", 20, 80), Period("P1", 100, None), Period("P3", 5, 6)]
    assert back_at(["P1", "P2"], periods, made_at=30) == 80
    assert back_at(["P1"], periods, made_at=120) is None  # down again, not back yet
    assert back_at(["P3"], periods, made_at=30) == 30  # not down at the time: back already
    assert back_at(None, periods, made_at=30) is None


def test_a_miss_names_what_the_forecast_assumed_away_first() -> None:
    row = {"store": "P3", "waits_for": None}
    down = [Period("P2", 50, 90)]
    assert miss_cause(LATE, row, 10, 100, ["P1", "P2"], down, None) == (
        f"P2 went down at {format_ts(50)} (the forecast assumes no store changes status)"
    )
    assert miss_cause(LATE, row, 10, 40, ["P1", "P2"], down, None) == SLOWER  # after the catch-up
    assert miss_cause(LATE, row, 10, 100, ["P1"], down, None) == SLOWER  # not the folder's store
    came_back = [Period("P2", 5, 30)]
    assert miss_cause(CAUGHT_UP, row, 10, 100, ["P2"], came_back, None).startswith("P2 came back at")
    assert miss_cause(CAUGHT_UP, {**row, "waits_for": ["P2"]}, 10, 100, ["P2"], came_back, 60).startswith(
        "new changes in the folder from"
    )
    assert miss_cause(WITHIN, row, 10, 100, ["P2"], down, None) is None


def test_a_change_is_a_store_gaining_a_cn_of_its_own() -> None:
    owned = {
        "P1": History([(5, "P1:1"), (40, "P1:1;P2:1"), (60, "P1:1-2;P2:1")]),
        "P2": History([(7, "P2:1"), (50, "P1:1;P2:1")]),
    }
    assert first_change_after(owned, 10) == 60  # P1's own P1:2; receiving P2:1 is no change
    assert first_change_after(owned, 60) is None


def test_a_cause_counts_by_its_kind() -> None:
    assert cause_kind(f"P2 went down at {format_ts(50)} (the forecast assumes no store changes status)") == (
        "a store went down"
    )
    assert cause_kind(f"P2 came back at {format_ts(50)} (…)") == "a store came back"
    assert cause_kind(f"new changes in the folder from {format_ts(50)} (…)") == "new changes in the folder"
    assert cause_kind(SLOWER) == "slower than its bound"
