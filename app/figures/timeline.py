"""The organisation's timeline drawn: a chart of its incidents, and the incidents laid on any
time-series chart as Grafana lays its annotations (outages as shaded bands named by their store,
replica-list changes as marked lines), each named in the legend and on hover.

Every colour here has its words beside it (the legend, the band's label, the hover), and the
kinds differ by pattern too, so nothing is told by colour alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from pfscope.app.figures.incidents import KINDS, Incident
from pfscope.app.figures.layout import base_layout, empty_figure
from pfscope.app.figures.outages import span_text
from pfscope.app.figures.palette import BLUE, ORANGE, PURPLE, VERMILLION
from pfscope.app.figures.text import esc

#: per kind: colour and bar pattern (the kinds differ by both)
KIND_STYLE: dict[str, tuple[str, str]] = {
    "outage": (VERMILLION, "/"),
    "lists": (BLUE, ""),
    "mail": (ORANGE, "."),
    "overdue": (PURPLE, "x"),
}
#: the shortest bar drawn, as a share of the chart's span (an instant still shows)
MIN_BAR = 0.006
#: the outage bands' and list lines' legend names
DOWN_NAME, LISTS_NAME = "store down (shaded band)", "replica lists changed (dashed line)"
#: bands and lines laid on one chart at most (the rest are in the incident list)
MAX_ANNOTATIONS = 40


def _hover(x: Incident) -> str:
    return f"<b>{esc(x.label)}</b><br>{esc(span_text(x.start, x.end) if x.end is not None else x.start.strftime('%a %m-%d %H:%M') + ', ongoing')}<br>{esc(x.text)}"


def lanes(items: Sequence[Incident], as_of: pd.Timestamp | None) -> list[int]:
    """A lane per incident so that bars of one kind never overlap (first fit, in start order)."""
    ends: dict[str, list[pd.Timestamp]] = {}
    out = []
    for x in items:
        row = ends.setdefault(x.kind, [])
        end = x.last(as_of)
        lane = next((i for i, e in enumerate(row) if e < x.start), None)
        if lane is None:
            row.append(end)
            lane = len(row) - 1
        else:
            row[lane] = end
        out.append(lane)
    return out


def fig_incident_timeline(
    items: Sequence[Incident], as_of: Any, start: Any = None, height_per_lane: int = 26
) -> go.Figure:
    """One row band per kind (lanes inside it when incidents overlap), a bar per incident from
    its start to its end (to the as-of while it goes on), hover saying what it was."""
    if not items:
        return empty_figure("Nothing happened in the log, up to the as-of")
    ref = pd.Timestamp(as_of).tz_convert("UTC") if as_of is not None and not pd.isna(as_of) else None
    first = min(x.start for x in items)
    left = (
        min(first, pd.Timestamp(start).tz_convert("UTC"))
        if start is not None and not pd.isna(start)
        else first
    )
    right = ref if ref is not None else max(x.last(None) for x in items)
    least = max((right - left) * MIN_BAR, pd.Timedelta(minutes=1))
    lane_of = lanes(items, ref)
    offsets: dict[str, int] = {}
    ticks: list[tuple[float, str]] = []
    y = 0
    for kind in reversed(list(KINDS)):  # outages on top
        used = [lane for x, lane in zip(items, lane_of, strict=True) if x.kind == kind]
        if not used:
            continue
        offsets[kind] = y
        ticks.append((y + (max(used)) / 2, KINDS[kind][0]))
        y += max(used) + 2
    fig = go.Figure()
    for kind in KINDS:
        mine = [(x, lane) for x, lane in zip(items, lane_of, strict=True) if x.kind == kind]
        if not mine:
            continue
        colour, pattern = KIND_STYLE[kind]
        fig.add_bar(
            orientation="h",
            base=[x.start for x, _ in mine],
            x=[max(x.last(ref) - x.start, least).total_seconds() * 1000 for x, _ in mine],
            y=[offsets[kind] + lane for _, lane in mine],
            width=0.8,
            name=KINDS[kind][0],
            marker={"color": colour, "pattern": {"shape": pattern, "fgcolor": "#ffffff", "solidity": 0.3}},
            hovertext=[_hover(x) for x, _ in mine],
            hovertemplate="%{hovertext}<extra></extra>",
            customdata=[f"{x.kind}:{x.start.isoformat()}" for x, _ in mine],
        )
    fig.update_yaxes(
        tickvals=[t for t, _ in ticks],
        ticktext=[label for _, label in ticks],
        range=[-1, y - 1],
        showgrid=False,
        zeroline=False,
    )
    fig.update_xaxes(type="date", range=[left, right + (right - left) * 0.01])
    fig = base_layout(fig, height=max(160, 60 + height_per_lane * y))
    fig.update_layout(barmode="overlay", bargap=0.1, showlegend=True, hovermode="closest")
    return fig


def annotate(
    fig: go.Figure,
    items: Iterable[Incident],
    as_of: Any,
    bands: bool = True,
    lines: bool = True,
    limit: int = MAX_ANNOTATIONS,
) -> go.Figure:
    """Lay the incidents on a time-series ``fig``: each outage a shaded band labelled with its
    store(s), each replica-list change a dashed line labelled with what changed; both in the
    legend (one entry each: click to hide them) and named on hover (a point per annotation at
    the top of the chart). Only the ``limit`` newest of each are laid (the list has them all)."""
    ref = pd.Timestamp(as_of).tz_convert("UTC") if as_of is not None and not pd.isna(as_of) else None
    items = list(items)
    outages = (
        sorted((x for x in items if x.kind == "outage"), key=lambda x: x.start)[-limit:] if bands else []
    )
    changes = sorted((x for x in items if x.kind == "lists"), key=lambda x: x.start)[-limit:] if lines else []
    for i, x in enumerate(outages):
        fig.add_shape(
            type="rect",
            xref="x",
            yref="paper",
            x0=x.start,
            x1=x.last(ref),
            y0=0,
            y1=1,
            fillcolor=VERMILLION,
            opacity=0.12,
            line={"width": 0},
            layer="below",
            name=DOWN_NAME,
            legendgroup="pf-down",
            showlegend=i == 0,
            label={"text": esc(", ".join(x.stores)), "textposition": "top left", "font": {"size": 11}},
        )
    for i, x in enumerate(changes):
        fig.add_shape(
            type="line",
            xref="x",
            yref="paper",
            x0=x.start,
            x1=x.start,
            y0=0,
            y1=1,
            line={"color": BLUE, "width": 1.5, "dash": "dash"},
            name=LISTS_NAME,
            legendgroup="pf-lists",
            showlegend=i == 0,
            label={
                "text": esc(f"lists: {len(x.folders)} folder{'s' if len(x.folders) != 1 else ''}"),
                "textposition": "end",
                "textangle": 0,
                "xanchor": "left",
                "font": {"size": 11},
            },
        )
    marks = [*outages, *changes]
    _keep_labels_inside(fig, marks, ref)
    if marks:
        fig.add_scatter(
            x=[x.start for x in marks],
            y=[1.0] * len(marks),
            yaxis="y99",
            mode="markers",
            marker={
                "size": 9,
                "opacity": 0,
                "color": [VERMILLION if x.kind == "outage" else BLUE for x in marks],
            },
            hovertext=[_hover(x) for x in marks],
            hovertemplate="%{hovertext}<extra></extra>",
            showlegend=False,
            name="annotations",
        )
        fig.update_layout(
            yaxis99={"overlaying": "y", "range": [0, 1.02], "visible": False, "fixedrange": True}
        )
    return fig


def _x_span(fig: go.Figure) -> tuple[pd.Timestamp, pd.Timestamp] | None:
    """The time axis' range: as set, or as its traces' times reach."""
    given = fig.layout.xaxis.range
    if given:
        return pd.Timestamp(given[0]), pd.Timestamp(given[1])
    lines = [list(t.x) for t in fig.data if t.type == "scatter" and t.x is not None and len(t.x)]
    times = [pd.Timestamp(t) for x in lines for t in (x[0], x[-1])]
    times = [t for t in times if not pd.isna(t)]
    return (min(times), max(times)) if times else None


def _keep_labels_inside(fig: go.Figure, marks: Sequence[Incident], ref: pd.Timestamp | None) -> None:
    """A line's label reads to the left of it in the chart's later half (not cut at the edge)."""
    span = _x_span(fig)
    if not marks or span is None:
        return
    first, last = (t.tz_localize("UTC") if t.tzinfo is None else t for t in span)
    middle = first + (last - first) / 2
    for shape in fig.layout.shapes:
        if shape.type == "line" and shape.label and pd.Timestamp(shape.x0) > middle:
            shape.label.xanchor = "right"


def annotation_names(fig: dict[str, Any]) -> list[str]:
    """The band and line labels a plotly JSON figure carries (what a reader sees on it)."""
    return [str((s.get("label") or {}).get("text", "")) for s in (fig.get("layout", {}).get("shapes") or [])]
