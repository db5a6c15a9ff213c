"""The organisation report's forecast: when the replicas that lack CNs will be in sync, by the
model's rules played forward from the as-of (what is so, under what it assumes), as the overview
draws it (:mod:`app.figures.recovery`): a sentence, the recovery chart, its numbers day by day (a
printed report has no hover), and the replicas that will not catch up, grouped by why."""

from __future__ import annotations

from typing import Any

import pandas as pd

from pfscope.app.data import RunData
from pfscope.app.figures import recovery as rc
from pfscope.app.figures.forecast import record_text
from pfscope.app.report.cells import int_text as _int
from pfscope.app.report.cells import rows, section
from pfscope.app.report.cells import time_text as _time
from pfscope.app.report.document import Document
from pfscope.app.report.html import Html, table, tag

TITLE = "When will it be in sync? The forecast"


def forecast_section(doc: Document, data: RunData) -> Html:
    """The forecast of every replica that lacks CNs at the as-of."""
    if "forecast" in data.missing():
        return section(
            "forecast",
            TITLE,
            tag("p", "Unknown: this run was published by an earlier pfscope, without the forecast."),
        )
    r = rc.recovery(data.forecast_summary(), data.summary().get("as_of"))
    body: list[Any] = [
        tag("p", rc.recovery_text(r), id="forecast-summary", class_="count"),
        tag(
            "p",
            f"A forecast of what is so, not a store's belief: {rc.ASSUMES}. The solid line steps down when "
            "each replica will hold every CN it lacks; the dashed line is the bound to plan with, the same "
            f"with the first reply of each backfill entry lost; the shaded floor, the replicas that will not "
            f"catch up within {rc.HORIZON_DAYS} days.",
            class_="note",
        ),
    ]
    body.append(
        tag(
            "p",
            "How far to trust it: ",
            record_text(data.forecast_record(["outcome", "cause"])),
            id="forecast-record",
        )
    )
    if r.total:
        body.append(
            doc.figure(rc.fig_recovery(r), "Replicas still lacking CNs over the coming days, by the forecast")
        )
        body.append(_milestones(rc.recovery_milestones(r)))
    if r.why:
        body.append(tag("h3", "Will not catch up, by why"))
        body.append(
            tag(
                "ul",
                *[tag("li", f"{n:,} {'replica' if n == 1 else 'replicas'}: ", text) for text, n in r.why],
                id="forecast-blocked",
            )
        )
    return section("forecast", TITLE, *body)


def _milestones(frame: pd.DataFrame) -> Html:
    cells = rows(
        frame,
        [
            lambda x: _time(x["at"]),
            lambda x: _int(x["by_forecast"]),
            lambda x: _int(x["at_the_latest"]),
        ],
    )
    if cells:
        cells[0][0] = f"{cells[0][0]} (the as-of)"
    return table(
        ["time (UTC)", "still lacking CNs, by the forecast", "at the latest (a reply lost)"],
        cells,
        numeric=[1, 2],
        caption="The chart's numbers, day by day",
    )
