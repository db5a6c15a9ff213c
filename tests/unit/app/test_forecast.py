"""The forecast in words: a replica's line, and the record's (how far to trust it)."""

from __future__ import annotations

import pandas as pd

from pfscope.app.figures.forecast import forecast_text, record_text, replica_record
from pfscope.spark_jobs.model.forecast.outcome import CAUGHT_UP, LATE, NOT_YET, SLOWER, STILL_LACKING, WITHIN


def test_the_record_in_one_line_with_the_misses_by_cause() -> None:
    record = pd.DataFrame(
        {
            "outcome": [WITHIN] * 3 + [STILL_LACKING, NOT_YET, LATE, LATE, CAUGHT_UP],
            "cause": [None] * 5
            + [
                "PFS2 went down at 2026-11-03T06:00:00Z (the forecast assumes no store changes status)",
                SLOWER,
                "new changes in the folder from 2026-11-03T07:00:00Z (the forecast assumes none)",
            ],
        }
    )
    assert record_text(record) == (
        "forecasts of the last 7 days: 4 of 7 within their bounds (1 not yet due); the 3 that missed: "
        "a store went down (1), new changes in the folder (1), slower than its bound (1)"
    )


def test_all_within_and_none_yet() -> None:
    assert record_text(pd.DataFrame({"outcome": [WITHIN, WITHIN], "cause": [None, None]})) == (
        "forecasts of the last 7 days: 2 of 2 within their bounds"
    )
    assert record_text(pd.DataFrame({"outcome": [], "cause": []})).startswith(
        "forecasts of the last 7 days: none judged yet"
    )


def test_a_replica_waiting_for_a_store_says_so_first() -> None:
    row = {
        "in_sync_at": None,
        "latest_in_sync_at": None,
        "blocked_by": "PFS2 is down since …: it processes nothing until it is back; in sync as soon as PFS2 is back",
        "waits_for": ["PFS2"],
        "after_back_s": 0.0,
    }
    assert forecast_text(row) == f"forecast: not in sync until PFS2 is back: {row['blocked_by']}"
    # not within 14 days even once back: it says so as before
    assert forecast_text({**row, "after_back_s": float("nan")}).startswith(
        "forecast: will not catch up within 14 days"
    )
    assert forecast_text({**row, "waits_for": None}).startswith("forecast: will not catch up within 14 days")


def test_a_replicas_record_newest_first_with_how_each_came_true() -> None:
    t = pd.Timestamp
    record = pd.DataFrame(
        {
            "made_at": [t("2026-11-05T10:00Z"), t("2026-11-06T10:00Z"), t("2026-11-06T10:00Z")],
            "store": ["PFS2", "PFS2", "PFS3"],
            "fid": ["1-123"] * 3,
            "in_sync_at": [t("2026-11-05T12:00Z"), None, t("2026-11-06T11:00Z")],
            "due_at": [t("2026-11-05T14:00Z"), None, t("2026-11-06T12:00Z")],
            "actual_in_sync_at": [t("2026-11-05T15:00Z"), None, None],
            "outcome": [LATE, STILL_LACKING, NOT_YET],
            "cause": [SLOWER, None, None],
        }
    )
    rows = replica_record(record, "PFS2", "1-123")
    assert [r["made"] for r in rows] == ["Fri 11-06 10:00", "Thu 11-05 10:00"]
    assert rows[0] == {
        "made": "Fri 11-06 10:00",
        "said": "not within 14 days",
        "due": "none",
        "actual": "not yet",
        "outcome": STILL_LACKING,
    }
    assert rows[1]["said"] == "~Thu 11-05 12:00" and rows[1]["outcome"] == f"{LATE}: {SLOWER}"
    assert replica_record(record.iloc[0:0], "PFS2", "1-123") == []
