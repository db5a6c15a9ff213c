"""The forecast on the folder page's entry timeline, after the as-of (a dashed line marks it): the
play's requests (due time, to their source), their replies (when the requester processes the
answer), and each lacking replica's in-sync time and bound. Hollow grey marks named "forecast" in
the legend and in every hover: what the model's rules played forward say will happen, never what
happened (``forecast`` and ``forecast_requests``)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.graph_objects as go

from pfscope.app.figures.layout import base_layout
from pfscope.app.figures.outages import short_time
from pfscope.app.figures.text import esc

#: the forecast's marks: a mid grey readable on the light and the dark page (3.9:1 and 4.9:1)
FORECAST_GREY = "#808080"
REQUEST_NAME, REPLY_NAME = "forecast request", "forecast reply"
IN_SYNC_NAME, LATEST_NAME = "forecast: in sync", "forecast: in sync at the latest"
AS_OF_NAME = "as-of"
#: (legend name, symbol) per kind of forecast mark
MARKS: dict[str, tuple[str, str]] = {
    "request": (REQUEST_NAME, "diamond-tall-open"),
    "reply": (REPLY_NAME, "circle-open"),
    "in sync": (IN_SYNC_NAME, "star-open"),
    "latest": (LATEST_NAME, "line-ns-open"),
}


def in_sync_row(store: str) -> str:
    """The timeline row of a replica's forecast in-sync time (its entries have rows of their own)."""
    return f"{store} · in sync (forecast)"


def _at(value: Any) -> pd.Timestamp | None:
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    ts = pd.Timestamp(value)
    return ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")


def forecast_marks(forecast: pd.DataFrame, requests: pd.DataFrame) -> pd.DataFrame:
    """Tidy marks, one per thing the forecast says will happen: each request (at its due time,
    on its entry's row), its reply (when the requester processes it), each lacking replica's
    in-sync time and its bound (on the replica's own row). Columns: row, event, at, hover, pair
    (marks joined by a line: a request and its reply, an in-sync time and its bound)."""
    rows: list[dict[str, Any]] = []
    for r in (
        requests.sort_values(["due_at", "entry_id", "attempt"]).to_dict("records")
        if not requests.empty
        else []
    ):
        row = f"{r['observer']} · {r['entry_id']}"
        due, answered = _at(r.get("due_at")), _at(r.get("answered_at"))
        pair = f"{r['entry_id']}#{r['attempt']}>{r['source']}"
        asks = (
            f"forecast: {esc(r['observer'])} asks {esc(r['source'])} for {esc(r.get('cnset') or '')}"
            f"<br>entry {esc(r['entry_id'])} #{int(r['attempt'])}, due {short_time(due)}"
        )
        outcome = esc(r.get("outcome") or "")
        if due is not None:
            rows.append(
                {"row": row, "event": "request", "at": due, "hover": f"{asks}<br>{outcome}", "pair": pair}
            )
        if answered is not None:
            rows.append(
                {
                    "row": row,
                    "event": "reply",
                    "at": answered,
                    "hover": f"forecast: {esc(r['observer'])} processes {esc(r['source'])}'s reply "
                    f"{short_time(answered)}<br>{outcome}",
                    "pair": pair,
                }
            )
    for r in forecast.sort_values("store").to_dict("records") if not forecast.empty else []:
        at, latest = _at(r.get("in_sync_at")), _at(r.get("latest_in_sync_at"))
        if at is None:
            continue
        store, row = str(r["store"]), in_sync_row(str(r["store"]))
        sources = list(r.get("sources") if r.get("sources") is not None else [])
        via = f" via {esc(', '.join(str(s) for s in sources))}" if sources else ""
        bound = f"<br>at the latest {short_time(latest)} if a reply is lost" if latest is not None else ""
        rows.append(
            {
                "row": row,
                "event": "in sync",
                "at": at,
                "hover": f"forecast: {esc(store)} in sync by ~{short_time(at)}{via}"
                f"<br>lacks {esc(r.get('lacks_cnset') or '')} at the as-of{bound}",
                "pair": store,
            }
        )
        if latest is not None and latest != at:
            rows.append(
                {
                    "row": row,
                    "event": "latest",
                    "at": latest,
                    "hover": f"forecast: {esc(store)} in sync {short_time(latest)} at the latest<br>"
                    "if the first reply to each entry is lost and mail takes its longest transit",
                    "pair": store,
                }
            )
    return pd.DataFrame(rows, columns=["row", "event", "at", "hover", "pair"])


def _rows(fig: go.Figure) -> list[str]:
    """The y categories a figure's traces use, in first use order."""
    out: dict[str, None] = {}
    for trace in fig.data:
        for y in trace.y if getattr(trace, "y", None) is not None else []:
            if isinstance(y, str):
                out[y] = None
    return list(out)


def _late(fig: go.Figure, ref: pd.Timestamp) -> bool:
    """Whether ``ref`` falls in the later half of the times the figure's traces reach."""
    times = [_at(x) for trace in fig.data for x in (trace.x if trace.x is not None else []) if x is not None]
    known = [t for t in times if t is not None]
    if not known:
        return False
    first, last = min(known), max(known)
    return ref > first + (last - first) / 2


def with_forecast(
    fig: go.Figure | None, forecast: pd.DataFrame, requests: pd.DataFrame, as_of: Any
) -> go.Figure | None:
    """``fig`` (the entry timeline; None: the folder has no entry) with the forecast after the
    as-of: its marks (:func:`forecast_marks`) in hollow grey, a dotted line from each request to
    its reply and from each in-sync time to its bound, and the as-of as a dashed line. None when
    there is nothing to draw on no timeline."""
    marks = forecast_marks(forecast, requests)
    if marks.empty:
        return fig
    if fig is None:
        fig = base_layout(go.Figure())
        fig.update_yaxes(autorange="reversed", title=None)
        fig.update_xaxes(title="time (UTC)")
    xs: list[Any] = []
    ys: list[Any] = []
    for _, g in marks.groupby("pair", sort=False):
        if len(g) > 1:
            xs += [g["at"].min(), g["at"].max(), None]
            ys += [g["row"].iloc[0], g["row"].iloc[0], None]
    if xs:
        fig.add_scatter(
            x=xs,
            y=ys,
            mode="lines",
            name="forecast",
            line={"color": FORECAST_GREY, "dash": "dot", "width": 1},
            hoverinfo="skip",
            showlegend=False,
        )
    for event, (name, symbol) in MARKS.items():
        part = marks[marks["event"] == event]
        if part.empty:
            continue
        fig.add_scatter(
            x=part["at"],
            y=part["row"],
            mode="markers",
            name=name,
            hovertext=part["hover"].tolist(),
            hoverinfo="text",
            marker={
                "symbol": symbol,
                "color": FORECAST_GREY,
                "size": 12,
                "line": {"width": 2, "color": FORECAST_GREY},
            },
        )
    ref = _at(as_of)
    if ref is not None:
        fig.add_shape(
            type="line",
            xref="x",
            yref="paper",
            x0=ref,
            x1=ref,
            y0=0,
            y1=1,
            line={"color": FORECAST_GREY, "width": 1.5, "dash": "dash"},
            name=AS_OF_NAME,
        )
        fig.add_annotation(
            x=ref,
            y=1,
            yref="paper",
            text="as-of: forecast after it",
            showarrow=False,
            # beside the line, on the side with room (not cut at the chart's right edge)
            xanchor="right" if _late(fig, ref) else "left",
            xshift=-4 if _late(fig, ref) else 4,
            yanchor="top",  # inside the plot, under the legend
            font={"size": 11},
        )
    fig.update_layout(
        height=max(int(fig.layout.height or 0), 30 * len(_rows(fig)) + 120), hovermode="closest"
    )
    return fig
