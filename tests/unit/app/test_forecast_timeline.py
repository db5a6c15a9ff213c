"""The forecast on the folder page's entry timeline: after the as-of, in hollow grey marks named
"forecast" in the legend and every hover; the as-of marked; the axis reaching every mark."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from pfscope.app.figures import entry_timeline_marks, fig_entry_timeline
from pfscope.app.figures import forecast_timeline as ft

T = pd.Timestamp
AS_OF = T("2026-11-08T23:59:59Z")

FORECAST = pd.DataFrame(
    {
        "store": ["PFSIN02", "PFDUB01", "PFJNB02"],
        "lacks_cnset": ["PFDUB01:6", "PFDUB02:1-2", "PFRED01:1"],
        "in_sync_at": [T("2026-11-10T13:22:04Z"), AS_OF, None],
        "latest_in_sync_at": [T("2026-11-15T10:44:00Z"), AS_OF, None],
        "sources": [["PFDUB01"], ["PFDUB02"], []],
        "blocked_by": [None, None, "PFJNB02 is down"],
    }
)
REQUESTS = pd.DataFrame(
    {
        "entry_id": ["PFSIN02/1-2A43/1", "PFSIN02/1-2A43/1"],
        "observer": ["PFSIN02", "PFSIN02"],
        "attempt": [1, 2],
        "due_at": [T("2026-11-10T12:39:01Z"), T("2026-11-11T12:39:01Z")],
        "source": ["PFDUB01", "PFDUB<b>02"],
        "cnset": ["PFDUB01:6", "PFDUB01:6"],
        "answered_at": [T("2026-11-10T13:22:04Z"), None],
        "outcome": ["answered", "source down: the request waits in its queue"],
    }
)


def utc(value: object) -> pd.Timestamp:
    """A time as plotly keeps it (UTC wall time, tz dropped) back to UTC."""
    ts = pd.Timestamp(value)  # type: ignore[arg-type]
    return ts.tz_localize("UTC") if ts.tzinfo is None else ts


def test_the_marks_are_the_requests_their_replies_and_each_replicas_in_sync_time() -> None:
    marks = ft.forecast_marks(FORECAST, REQUESTS)
    got = list(zip(marks["row"], marks["event"], marks["at"], strict=True))
    assert got == [
        ("PFSIN02 · PFSIN02/1-2A43/1", "request", T("2026-11-10T12:39:01Z")),
        ("PFSIN02 · PFSIN02/1-2A43/1", "reply", T("2026-11-10T13:22:04Z")),
        ("PFSIN02 · PFSIN02/1-2A43/1", "request", T("2026-11-11T12:39:01Z")),
        ("PFDUB01 · in sync (forecast)", "in sync", AS_OF),  # its bound is the same time: no second mark
        ("PFSIN02 · in sync (forecast)", "in sync", T("2026-11-10T13:22:04Z")),
        ("PFSIN02 · in sync (forecast)", "latest", T("2026-11-15T10:44:00Z")),
    ]  # PFJNB02 is blocked: no in-sync mark
    assert all(h.startswith("forecast: ") for h in marks["hover"])
    assert "PFDUB&lt;b&gt;02" in marks["hover"].iloc[2] and "<b>02" not in marks["hover"].iloc[2]
    assert (
        "via PFDUB01" in marks["hover"].iloc[4] and "at the latest Sun 11-15 10:44" in marks["hover"].iloc[4]
    )


def test_the_timeline_draws_the_forecast_after_the_as_of_on_its_entries_rows() -> None:
    entries = pd.DataFrame(
        [
            {
                "entry_id": "PFSIN02/1-2A43/0",
                "observer": "PFSIN02",
                "locality": "remote",
                "opened_at": T("2026-11-05T10:00:00Z"),
                "state": "satisfied",
                "closed_at": T("2026-11-06T10:00:00Z"),
                "cnset_opened": "PFDUB01:1",
                "requests": 1,
                "next_due_at": None,
            }
        ]
    )
    requests = pd.DataFrame(
        columns=["entry_id", "observer", "at", "kind", "attempt", "source", "cnset", "due_at"]
    )
    fig, _ = fig_entry_timeline(entry_timeline_marks(entries, requests))
    before = fig.layout.height
    drawn = ft.with_forecast(fig, FORECAST, REQUESTS, AS_OF)
    assert drawn is fig
    names = [t.name for t in fig.data]
    assert {ft.REQUEST_NAME, ft.REPLY_NAME, ft.IN_SYNC_NAME, ft.LATEST_NAME} <= set(names)
    forecast = [
        t for t in fig.data if t.name in (ft.REQUEST_NAME, ft.REPLY_NAME, ft.IN_SYNC_NAME, ft.LATEST_NAME)
    ]
    # hollow grey marks, every one at or after the as-of, each hover saying it is the forecast
    for trace in forecast:
        assert trace.marker.symbol.endswith("-open") and trace.marker.color == ft.FORECAST_GREY
        assert all(utc(x) >= AS_OF for x in trace.x)
        assert all(str(h).startswith("forecast: ") for h in trace.hovertext)
    # the entries' own rows stay; the forecast's rows come after them, so the chart grows
    rows = ft._rows(fig)
    assert rows[0] == "PFSIN02 · PFSIN02/1-2A43/0" and "PFSIN02 · in sync (forecast)" in rows
    assert fig.layout.height >= before and fig.layout.height == 30 * len(rows) + 120
    # the as-of: a dashed line and its label
    (line,) = [s for s in fig.layout.shapes if s.name == ft.AS_OF_NAME]
    assert utc(line.x0) == AS_OF and line.line.dash == "dash"
    assert any(a.text == "as-of: forecast after it" for a in fig.layout.annotations)


def test_a_folder_without_entries_gets_a_timeline_of_its_forecast_alone() -> None:
    fig = ft.with_forecast(None, FORECAST, REQUESTS.iloc[0:0], AS_OF)
    assert fig is not None and {t.name for t in fig.data} >= {ft.IN_SYNC_NAME, ft.LATEST_NAME}
    assert fig.layout.yaxis.autorange == "reversed"
    # nothing to draw: nothing is made
    assert ft.with_forecast(None, FORECAST.iloc[0:0], REQUESTS.iloc[0:0], AS_OF) is None


def test_the_as_of_label_reads_on_the_side_with_room() -> None:
    """Left of its line when the as-of is late in the chart (else cut at the right edge), right of
    it when early."""
    early = ft.with_forecast(None, FORECAST, REQUESTS, AS_OF)
    assert early is not None
    (label,) = [a for a in early.layout.annotations if a.text == "as-of: forecast after it"]
    assert label.xanchor == "left" and label.xshift > 0
    soon = FORECAST.iloc[[1]].assign(in_sync_at=[AS_OF + pd.Timedelta(minutes=30)])
    late = go.Figure()
    late.add_scatter(x=[T("2026-11-02T00:00:00Z")], y=["PFDUB01 · PFDUB01/1-2A43/1"])
    drawn = ft.with_forecast(late, soon, REQUESTS.iloc[0:0], AS_OF)
    assert drawn is not None
    (label,) = [a for a in drawn.layout.annotations if a.text == "as-of: forecast after it"]
    assert label.xanchor == "right" and label.xshift < 0
