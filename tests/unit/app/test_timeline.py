"""The timeline drawn (app/figures/timeline.py): a bar per incident in lanes per kind, and the
incidents laid on a time-series chart as annotations: outages as bands named by their store,
replica-list changes as dashed lines, each in the legend and on hover."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from pfscope.app.figures import incidents as inc
from pfscope.app.figures import timeline as tl

T = pd.Timestamp
AS_OF = T("2026-11-08T23:59:59Z")

OUTAGE = inc.Incident(
    "outage", T("2026-11-03T06:00Z"), T("2026-11-05T08:00Z"), "PFSIN02 down 50 h", stores=("PFSIN02",)
)
ONGOING = inc.Incident(
    "outage", T("2026-11-07T00:00Z"), None, "PFJNB02 down", tier="critical", stores=("PFJNB02",)
)
LISTS = inc.Incident(
    "lists", T("2026-11-04T09:00Z"), T("2026-11-04T10:00Z"), "lists", folders=("1-2A4C", "1-2A4F")
)
MAIL = inc.Incident(
    "mail", T("2026-11-03T05:50Z"), T("2026-11-03T07:51Z"), "<b>33</b> messages", stores=("PFSIN02",)
)
MAIL2 = inc.Incident("mail", T("2026-11-03T07:00Z"), T("2026-11-03T09:00Z"), "more", stores=("PFRED01",))


def test_overlapping_incidents_of_a_kind_take_separate_lanes() -> None:
    items = [MAIL, OUTAGE, MAIL2, ONGOING]
    assert tl.lanes(items, AS_OF) == [0, 0, 1, 0]


def test_the_timeline_has_a_bar_per_incident_up_to_the_as_of_while_it_goes_on() -> None:
    fig = tl.fig_incident_timeline([OUTAGE, LISTS, MAIL, ONGOING], AS_OF).to_plotly_json()
    bars = {t["name"]: t for t in fig["data"]}
    assert list(bars) == ["store down", "replica lists changed", "mail never processed"]
    down = bars["store down"]
    assert [pd.Timestamp(b) for b in down["base"]] == [OUTAGE.start, ONGOING.start]
    ends = [
        pd.Timestamp(b) + pd.Timedelta(milliseconds=x) for b, x in zip(down["base"], down["x"], strict=True)
    ]
    assert ends == [OUTAGE.end, AS_OF]
    # an instant still shows, and every bar says what it was on hover, markup as text
    assert min(bars["replica lists changed"]["x"]) > 0
    assert "&lt;b&gt;33&lt;/b&gt; messages" in bars["mail never processed"]["hovertext"][0]
    assert "ongoing" in down["hovertext"][1]
    patterns = {t["marker"]["pattern"]["shape"] for t in fig["data"]}
    assert len(patterns) == 3  # the kinds differ by pattern, not by colour alone
    # bottom to top: outages on top
    assert fig["layout"]["yaxis"]["ticktext"] == [
        "mail never processed",
        "replica lists changed",
        "store down",
    ]
    assert tl.fig_incident_timeline([], AS_OF).layout.annotations


def test_annotations_name_the_outage_and_mark_the_list_change_in_the_legend_and_on_hover() -> None:
    fig = go.Figure(go.Scatter(x=[T("2026-11-02T00:00Z"), AS_OF], y=[0, 5], name="open"))
    fig = tl.annotate(fig, [OUTAGE, LISTS, MAIL, ONGOING], AS_OF).to_plotly_json()
    shapes = fig["layout"]["shapes"]
    bands = [s for s in shapes if s["type"] == "rect"]
    lines = [s for s in shapes if s["type"] == "line"]
    assert [s["label"]["text"] for s in bands] == ["PFSIN02", "PFJNB02"]
    assert pd.Timestamp(bands[1]["x1"]) == AS_OF  # still down: shaded to the as-of
    assert [s["label"]["text"] for s in lines] == ["lists: 2 folders"] and lines[0]["line"]["dash"] == "dash"
    # one legend entry per kind of annotation
    assert [(s["name"], s["showlegend"]) for s in shapes] == [
        (tl.DOWN_NAME, True),
        (tl.DOWN_NAME, False),
        (tl.LISTS_NAME, True),
    ]
    assert tl.annotation_names(fig) == ["PFSIN02", "PFJNB02", "lists: 2 folders"]
    hover = fig["data"][-1]
    assert len(hover["hovertext"]) == 3 and "PFSIN02 down 50 h" in hover["hovertext"][0]
    # the chart's own traces are kept
    assert fig["data"][0]["name"] == "open"


def test_annotations_can_leave_the_bands_out_and_are_capped() -> None:
    many = [
        inc.Incident("lists", T("2026-11-02T00:00Z") + pd.Timedelta(hours=h), None, "l", folders=("f",))
        for h in range(50)
    ]
    fig = tl.annotate(go.Figure(), [OUTAGE, *many], AS_OF, bands=False, limit=10).to_plotly_json()
    assert [s["type"] for s in fig["layout"]["shapes"]] == ["line"] * 10
    assert tl.annotation_names(fig)[-1] == "lists: 1 folder"
