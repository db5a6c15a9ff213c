"""The record of forecasts: the previous run's forecasts added once while they do not move, kept
7 days, and each judged again by every run."""

from __future__ import annotations

from typing import Any

from pfscope.spark_jobs.model.forecast.outcome import LATE, NOT_YET, STILL_LACKING, WITHIN
from pfscope.spark_jobs.model.forecast.record import RECORD_SPAN, Happened, carried, judged
from pfscope.spark_jobs.model.timeutil import HOUR

FID = "1-123"


def forecast(store: str, in_sync: int | None, latest: int | None, **extra: Any) -> dict[str, Any]:
    return {
        "store": store,
        "fid": FID,
        "lacks_cnset": "P1:1-3",
        "lacks_count": 3,
        "in_sync_at": in_sync,
        "latest_in_sync_at": latest,
        "blocked_by": None,
        "waits_for": None,
        "after_back_s": None,
        "latest_after_back_s": None,
        "requests": 1,  # the forecast's own columns the record does not keep
        **extra,
    }


def test_a_forecast_that_did_not_move_is_recorded_once() -> None:
    first = carried([], [forecast("P2", 10 * HOUR, 20 * HOUR)], 0, HOUR)
    assert [(r["made_at"], r["store"]) for r in first] == [(0, "P2")]
    assert "requests" not in first[0]
    again = carried(first, [forecast("P2", 10 * HOUR, 20 * HOUR)], HOUR, 2 * HOUR)
    assert again == first
    moved = carried(first, [forecast("P2", 11 * HOUR, 20 * HOUR)], HOUR, 2 * HOUR)
    assert [(r["made_at"], r["in_sync_at"]) for r in moved] == [(0, 10 * HOUR), (HOUR, 11 * HOUR)]


def test_the_record_keeps_seven_days() -> None:
    old = carried([], [forecast("P2", 10 * HOUR, 20 * HOUR)], 0, HOUR)
    assert carried(old, [], None, RECORD_SPAN) == old
    assert carried(old, [], None, RECORD_SPAN + 1) == []
    # a previous run older than the span adds nothing
    assert carried([], [forecast("P3", None, None)], 0, RECORD_SPAN + 1) == []


def test_each_forecast_judged_against_what_happened() -> None:
    rows = carried(
        [],
        [
            forecast("P2", 10 * HOUR, 20 * HOUR),
            forecast("P3", 10 * HOUR, 12 * HOUR),
            forecast("P4", None, None),
        ],
        0,
        HOUR,
    )
    owned = {
        "P2": [(15 * HOUR, "P1:1-3")],  # in sync at 15 h: within its bound (20 h)
        "P3": [(5 * HOUR, "P1:1"), (13 * HOUR, "P1:1-3")],  # at 13 h: late for its 12 h
    }
    happened = Happened.from_rows(
        [{"observer": s, "fid": FID, "at": at, "cnset": c} for s, seq in owned.items() for at, c in seq],
        [{"store": "P1", "down_at": 11 * HOUR, "up_at": None}],
        [{"fid": FID, "replicas": ["P1", "P2", "P3", "P4"]}],
    )
    out = {r["store"]: r for r in judged(rows, happened, 30 * HOUR)}
    assert (out["P2"]["outcome"], out["P2"]["actual_in_sync_at"], out["P2"]["due_at"]) == (
        WITHIN,
        15 * HOUR,
        20 * HOUR,
    )
    assert out["P3"]["outcome"] == LATE and out["P3"]["cause"].startswith("P1 went down at")
    assert out["P4"]["outcome"] == STILL_LACKING and out["P4"]["cause"] is None
    # judged by a run at 14 h (which knows nothing after it), the forecast of P2 was not yet due
    at_14 = Happened.from_rows([], [], [{"fid": FID, "replicas": ["P1", "P2", "P3", "P4"]}])
    assert {r["store"]: r["outcome"] for r in judged(rows, at_14, 14 * HOUR)}["P2"] == NOT_YET
