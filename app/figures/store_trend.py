"""Backfill entries per store over time, readable at 200 stores: a store × time heatmap of open
entries (the most open in each time bin), worst stores first, with each store's overdue stretches
and down periods drawn on its own row; and the organisation's totals as two lines.

One line per store stops being readable at about ten stores (forty lines repeat their styles);
a heatmap row per store keeps every store's name on its own label at any count.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from pfscope.app.figures.backfill import backfill_trend
from pfscope.app.figures.layout import MAX_MARKS, base_layout, empty_figure
from pfscope.app.figures.palette import BLUE, OPEN_SCALE, VERMILLION
from pfscope.app.figures.text import esc

#: the rows the overview draws before "show all": the worst stores
ROWS = 40
#: a row's height in pixels (its label stays readable)
ROW_PX = 18
#: the longest the time axis is cut into (fewer with many stores: cells stay under MAX_MARKS)
MAX_BINS = 240
OVERDUE_NAME, DOWN_NAME = "overdue entries (bar under the row)", "store down (hatched)"


@dataclass(frozen=True)
class StoreTrend:
    """The heatmap's data: rows worst first, bins, and per row the peaks and the stretches."""

    stores: tuple[str, ...]  # rows, worst first
    edges: pd.DatetimeIndex  # len(bins) + 1
    open_peak: np.ndarray  # rows x bins: the most entries open at once in the bin
    overdue_peak: np.ndarray  # rows x bins
    down: tuple[tuple[str, pd.Timestamp, pd.Timestamp | None], ...]  # store, from, to (None: still)
    hidden: int = 0  # stores not drawn (beyond the rows asked for)

    @property
    def bin(self) -> pd.Timedelta:
        return self.edges[1] - self.edges[0] if len(self.edges) > 1 else pd.Timedelta(hours=1)


def _ns(values: Any) -> np.ndarray:
    return pd.DatetimeIndex(
        pd.to_datetime(
            values if isinstance(values, pd.Series) else pd.Series(list(values), dtype=object), utc=True
        )
    ).asi8


def bin_size(span: pd.Timedelta, rows: int) -> pd.Timedelta:
    """Whole hours, as few as keep the cells under :data:`MAX_MARKS` and :data:`MAX_BINS`."""
    bins = max(1, min(MAX_BINS, MAX_MARKS // max(1, rows)))
    hours = max(1, math.ceil(span / pd.Timedelta(hours=1) / bins))
    return pd.Timedelta(hours=hours)


def peaks(start_ns: np.ndarray, stop_ns: np.ndarray, edges_ns: np.ndarray) -> np.ndarray:
    """The most intervals open at once in each bin: an interval counts from its start until its
    stop (``NaT``'s int: still open); at a time where one closes and another opens, the close
    comes first (the state just after the time, as the trend counts)."""
    nat = np.iinfo(np.int64).min
    bins = len(edges_ns) - 1
    out = np.zeros(bins, dtype="int64")
    if not len(start_ns) or bins <= 0:
        return out
    closed = stop_ns != nat
    times = np.concatenate([start_ns, stop_ns[closed]])
    deltas = np.concatenate([np.ones(len(start_ns), "int64"), -np.ones(int(closed.sum()), "int64")])
    order = np.lexsort((deltas, times))
    times, level = times[order], np.cumsum(deltas[order])
    # open at each bin's start: the level after the last event at or before it
    before = np.searchsorted(times, edges_ns[:-1], side="right") - 1
    out = np.where(before >= 0, level[np.clip(before, 0, None)], 0)
    inside = (times >= edges_ns[0]) & (times < edges_ns[-1])
    where = np.searchsorted(edges_ns, times[inside], side="right") - 1
    np.maximum.at(out, where, level[inside])
    return np.asarray(out, dtype="int64")


def store_trend(
    entries: pd.DataFrame,
    stores: Iterable[str],
    periods: pd.DataFrame,
    end: Any,
    rows: int | None = ROWS,
) -> StoreTrend:
    """``entries``: observer, opened_at, closed_at, overdue_at (NaT: never); ``periods``:
    store, down_at, up_at. Rows: every store, worst first (the most overdue at once, then the
    most open at once, then the most entry-hours open, then by name); only ``rows`` of them
    (None: all) and every store that was down, the rest counted in ``hidden``."""
    names = sorted({str(s) for s in stores} | set(entries["observer"].astype(str)))
    opened, closed, overdue = (_ns(entries[c]) for c in ("opened_at", "closed_at", "overdue_at"))
    nat = np.iinfo(np.int64).min
    downs = [
        (str(s), pd.Timestamp(a).tz_convert("UTC"), None if pd.isna(b) else pd.Timestamp(b).tz_convert("UTC"))
        for s, a, b in zip(periods["store"], periods["down_at"], periods["up_at"], strict=True)
        if not pd.isna(a)
    ]
    last = pd.Timestamp(end).tz_convert("UTC") if end is not None and not pd.isna(end) else None
    firsts = [t for t in (opened.min() if len(opened) else None,) if t is not None]
    firsts += [d.value for _, d, _ in downs]
    if not firsts:
        return StoreTrend((), pd.DatetimeIndex([]), np.zeros((0, 0)), np.zeros((0, 0)), ())
    first = pd.Timestamp(min(firsts), tz="UTC").floor("h")
    if last is None:
        last = pd.Timestamp(max(np.concatenate([opened, closed[closed != nat], [first.value]])), tz="UTC")
    size = bin_size(max(last - first, pd.Timedelta(hours=1)), min(len(names), rows or len(names)))
    count = max(1, math.ceil((last - first) / size))
    edges = pd.DatetimeIndex([first + size * i for i in range(count + 1)])
    e = edges.asi8
    observer = entries["observer"].astype(str).to_numpy()
    late = overdue != nat
    open_rows, over_rows, area = [], [], []
    for name in names:
        mine = observer == name
        open_rows.append(peaks(opened[mine], closed[mine], e))
        over_rows.append(peaks(overdue[mine & late], closed[mine & late], e))
        stop = np.where(closed[mine] == nat, last.value, closed[mine])
        area.append(float(np.clip(stop - opened[mine], 0, None).sum()))
    open_peak, over_peak = (
        np.array(open_rows).reshape(len(names), count),
        np.array(over_rows).reshape(len(names), count),
    )
    order = sorted(
        range(len(names)),
        key=lambda i: (
            -int(over_peak[i].max(initial=0)),
            -int(open_peak[i].max(initial=0)),
            -area[i],
            names[i],
        ),
    )
    # a store that was down keeps its row (its outage is drawn there), in its place by the order
    was_down = {s for s, _, _ in downs}
    top = set(order if rows is None else order[:rows])
    keep = [i for i in order if i in top or names[i] in was_down]
    shown = {names[i] for i in keep}
    return StoreTrend(
        stores=tuple(names[i] for i in keep),
        edges=edges,
        open_peak=open_peak[keep],
        overdue_peak=over_peak[keep],
        down=tuple(d for d in downs if d[0] in shown),
        hidden=len(names) - len(keep),
    )


def _stretches(row: np.ndarray, edges: pd.DatetimeIndex) -> list[tuple[pd.Timestamp, pd.Timestamp, int]]:
    """Contiguous bins where ``row`` is above zero: (from, to, peak)."""
    out: list[tuple[pd.Timestamp, pd.Timestamp, int]] = []
    on = np.flatnonzero(row > 0)
    if not len(on):
        return out
    breaks = np.flatnonzero(np.diff(on) > 1)
    for a, b in zip(np.r_[on[0], on[breaks + 1]], np.r_[on[breaks], on[-1]], strict=True):
        out.append((edges[a], edges[b + 1], int(row[a : b + 1].max())))
    return out


def fig_store_trend(trend: StoreTrend, as_of: Any = None) -> go.Figure:
    """The heatmap: a row per store (its name on its own label, worst on top), a cell per time
    bin coloured by the most entries open at once (blank: none), its overdue stretches as a
    vermillion bar under the row and its down periods hatched over it; hover says it all."""
    if not trend.stores:
        return empty_figure("No backfill entry and no outage in this run")
    n = len(trend.stores)
    rows = [esc(s) for s in trend.stores]  # the y categories: a store's name, markup as text
    # float32 and int16: sent as typed arrays (base64), far fewer bytes than numbers as text
    z = np.where(trend.open_peak > 0, trend.open_peak, np.nan).astype("float32")
    hours = int(trend.bin / pd.Timedelta(hours=1))
    fig = go.Figure()
    fig.add_heatmap(
        x=trend.edges[:-1],
        xperiod=int(trend.bin / pd.Timedelta(milliseconds=1)),
        xperiodalignment="start",
        y=rows,
        z=z,
        customdata=np.clip(trend.overdue_peak, 0, 32767).astype("int16"),
        zmin=0,
        zmax=max(1, int(np.nanmax(z)) if np.isfinite(z).any() else 1),
        colorscale=OPEN_SCALE,
        colorbar={
            "title": {"text": "open entries<br>(most at once)"},
            "thickness": 12,
            "len": min(1.0, 300 / (n * ROW_PX + 1)),
        },
        # one template, no text per cell: the figure stays small at 200 stores
        hovertemplate=f"<b>%{{y}}</b> · %{{x|%a %m-%d %H:%M}} + {hours} h: %{{z}} open at most, "
        "%{customdata} overdue<extra></extra>",
        hoverongaps=False,
        name="open entries",
        xgap=0,
        ygap=1,
    )
    over_x, over_base, over_y, over_text = [], [], [], []
    for i, s in enumerate(trend.stores):
        for a, b, peak in _stretches(trend.overdue_peak[i], trend.edges):
            over_base.append(a)
            over_x.append((b - a).total_seconds() * 1000)
            over_y.append(rows[i])
            over_text.append(
                f"{esc(s)}: overdue entries from {a:%a %m-%d %H:%M} to {b:%a %m-%d %H:%M} (at most {peak})"
            )
    fig.add_bar(
        orientation="h",
        base=over_base,
        x=over_x,
        y=over_y,
        width=0.22,
        offset=0.2,  # under the row's middle (the axis runs top to bottom)
        marker={"color": VERMILLION},
        name=OVERDUE_NAME,
        hovertext=over_text,
        hovertemplate="%{hovertext}<extra></extra>",
        showlegend=True,
    )
    ref = (
        pd.Timestamp(as_of).tz_convert("UTC") if as_of is not None and not pd.isna(as_of) else trend.edges[-1]
    )
    row_of = dict(zip(trend.stores, rows, strict=True))
    downs = [(s, a, b if b is not None else ref) for s, a, b in trend.down]
    fig.add_bar(
        orientation="h",
        base=[a for _, a, _ in downs],
        x=[(b - a).total_seconds() * 1000 for _, a, b in downs],
        y=[row_of[s] for s, _, _ in downs],
        width=0.9,
        offset=-0.45,
        marker={
            "color": "rgba(0,0,0,0)",
            "line": {"color": "#5b6470", "width": 1},
            "pattern": {"shape": "/", "fgcolor": "#5b6470", "size": 6, "solidity": 0.25},
        },
        name=DOWN_NAME,
        hovertext=[
            f"{esc(s)} down {a:%a %m-%d %H:%M} to "
            + ("the as-of (still down)" if b0 is None else f"{b:%a %m-%d %H:%M}")
            for (s, a, b), (_, _, b0) in zip(downs, trend.down, strict=True)
        ],
        hovertemplate="%{hovertext}<extra></extra>",
        showlegend=True,
    )
    fig.update_yaxes(
        type="category",
        categoryorder="array",
        categoryarray=rows,
        autorange="reversed",
        showgrid=False,
        zeroline=False,
        tickfont={"size": 11},
    )
    fig.update_xaxes(type="date", range=[trend.edges[0], trend.edges[-1]], showgrid=False)
    fig = base_layout(fig, height=110 + ROW_PX * n)
    fig.update_layout(barmode="overlay", hovermode="closest", margin={"l": 10, "r": 10, "t": 40, "b": 10})
    return fig


def org_totals(entries: pd.DataFrame, end: Any = None) -> pd.DataFrame:
    """The organisation's open and overdue entries over time (at, open, overdue): every store's
    entries counted as one (``entries``: observer, opened_at, closed_at, overdue_at)."""
    if entries.empty:
        return pd.DataFrame({c: pd.Series(dtype="int64") for c in ("at", "open", "overdue")})
    whole = backfill_trend(entries.assign(observer="all"), ["all"], end=end)
    return whole[["at", "open", "overdue"]].reset_index(drop=True)


def fig_org_totals(totals: pd.DataFrame) -> go.Figure:
    """Two step lines: every store's open entries, and the overdue among them (whose view: what
    each store's own entries were, summed)."""
    if totals.empty:
        return empty_figure("No backfill entry in this run")
    fig = go.Figure()
    for column, name, colour, dash in (
        ("open", "open entries, all stores", BLUE, "solid"),
        ("overdue", "overdue entries, all stores", VERMILLION, "dot"),
    ):
        fig.add_scatter(
            x=totals["at"],
            y=totals[column],
            mode="lines",
            name=name,
            line={"color": colour, "dash": dash, "shape": "hv", "width": 2},
            hovertemplate=f"{name}: %{{y}} at %{{x}}<extra></extra>",
        )
    fig.update_yaxes(rangemode="tozero", title_text="entries")
    fig = base_layout(fig, height=300)
    fig.update_layout(hovermode="x unified", margin={"l": 10, "r": 10, "t": 60, "b": 10})
    return fig


def row_labels(fig: dict[str, Any]) -> Sequence[str]:
    """The store labels of a drawn heatmap (plotly JSON), top to bottom."""
    return list((fig.get("layout", {}).get("yaxis") or {}).get("categoryarray") or [])
