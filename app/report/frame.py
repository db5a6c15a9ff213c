"""What every report has around its sections: the header (the run and the view), the footer, and a
chart's title."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from pfscope.app.data import RunData
from pfscope.app.report.cells import facts as _facts
from pfscope.app.report.cells import time_text as _time
from pfscope.app.report.html import Html, plotly_text, tag


def titled(fig: go.Figure, title: str) -> go.Figure:
    """A plotly title from data, above whatever the figure keeps over its plot (a top axis, the
    legend). Escaped, since plotly.js reads tags and entities in titles."""
    extra = 90
    margin_t = (fig.layout.margin.t or 10) + extra
    fig.update_layout(
        title={
            "text": plotly_text(title),
            "x": 0,
            "xanchor": "left",
            "xref": "container",
            "y": 1,
            "yanchor": "top",
            "yref": "container",
            "pad": {"t": 10, "l": 8},
        },
        margin={"t": margin_t},
    )
    if fig.layout.height:
        fig.update_layout(height=fig.layout.height + extra)
    return fig


def header(data: RunData, title: str, extra: Sequence[tuple[str, Any]] = ()) -> Html:
    s = data.summary()
    facts = [("run", data.run_id), ("as of", _time(s.get("as_of"))), *extra]
    return tag(
        "header", tag("p", "pfscope report", class_="muted"), tag("h1", title), _facts(facts), class_="report"
    )


def footer(data: RunData) -> Html:
    s = data.summary()
    return tag(
        "footer",
        tag(
            "p",
            f"pfscope report of run {data.run_id}, as of {_time(s.get('as_of'))}. "
            "Times are UTC. Charts are interactive: hover for details, drag to zoom, "
            "double-click to reset.",
        ),
        class_="report",
    )
