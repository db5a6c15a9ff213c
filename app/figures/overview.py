"""The overview's frames and figures: replicas by health, lag heatmap, worst folders, headline."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from pfscope.app.figures.layout import MAX_MARKS, base_layout, empty_figure
from pfscope.app.figures.palette import (
    HEALTH_COLOURS,
    HEALTH_ORDER,
    LAG_ABSOLUTE_SCALE,
    LAG_ALARM,
    STORE_DOWN_COLOUR,
    STORE_DOWN_PATTERN,
)
from pfscope.app.figures.text import esc


def stores_by_site(stores: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Stores grouped by site (sites and stores by name), for the overview's store cards."""
    ordered = stores.sort_values(["site", "store"], kind="stable")
    return {str(site): group.reset_index(drop=True) for site, group in ordered.groupby("site", sort=True)}


def health_by_store(replicas: pd.DataFrame, stores: pd.DataFrame | None = None) -> pd.DataFrame:
    """Tidy counts: one row per (store, health) with ``replicas``; every store and health present."""
    names = sorted(set(replicas["store"]) | (set(stores["store"]) if stores is not None else set()))
    counts = replicas.groupby(["store", "health"]).size()
    rows = [
        {"store": s, "health": h, "replicas": int(counts.get((s, h), 0))} for s in names for h in HEALTH_ORDER
    ]
    return pd.DataFrame(rows, columns=["store", "health", "replicas"])


#: the legend's name of a down store's replicas on the overview's bars
STORE_DOWN_LABEL = "store down: out of reach"


def down_label(store: str, down: Collection[str]) -> str:
    """A store's axis label for the overview's charts: its name, marked when it is down (escaped:
    plotly reads tags in labels)."""
    return esc(store) + (" <b>(down)</b>" if store in down else "")


def fig_health_by_store(counts: pd.DataFrame, down: Collection[str] = ()) -> go.Figure:
    """Per store, its replicas stacked by health (horizontal bars, one trace per health).

    A store in ``down`` is out of reach: its replicas (but the deleted) are one crossed grey bar,
    "store down", with their last known health in its hover, never drawn as that health (a
    down store's "in sync" is what it was when it went down); its axis label says "(down)"."""
    if counts.empty:
        return empty_figure("No replicas in this run")
    stores = sorted(counts["store"].unique(), reverse=True)
    down = set(down) & set(stores)
    unreachable = counts["store"].isin(down) & (counts["health"] != "deleted")
    fig = go.Figure()
    for health in HEALTH_ORDER:
        part = counts[(counts["health"] == health) & ~unreachable].set_index("store").reindex(stores)
        fig.add_bar(
            y=stores,
            x=part["replicas"].fillna(0).tolist(),
            name=health.replace("_", " "),
            orientation="h",
            marker_color=HEALTH_COLOURS[health],
            hovertemplate="%{y}: %{x} " + health.replace("_", " ") + "<extra></extra>",
        )
    if down:
        last = counts[unreachable & (counts["replicas"] > 0)]
        known = {
            s: ", ".join(
                f"{n:,} {h.replace('_', ' ')}" for h, n in zip(g["health"], g["replicas"], strict=True)
            )
            for s, g in last.groupby("store")
        }
        totals = last.groupby("store")["replicas"].sum()
        fig.add_bar(
            y=stores,
            x=[int(totals.get(s, 0)) for s in stores],
            name=STORE_DOWN_LABEL,
            orientation="h",
            marker={
                "color": STORE_DOWN_COLOUR,
                "pattern": {"shape": STORE_DOWN_PATTERN, "fgcolor": "#ffffff", "solidity": 0.3},
            },
            text=["store down" if s in down else "" for s in stores],
            textposition="inside",
            insidetextanchor="middle",
            hovertext=[
                f"{esc(s)} is down: {int(totals.get(s, 0)):,} replicas out of reach; last known: "
                f"{known.get(s, 'none')}"
                if s in down
                else ""
                for s in stores
            ],
            hovertemplate="%{hovertext}<extra></extra>",
        )
    fig.update_layout(barmode="stack", xaxis_title="replicas")
    fig.update_yaxes(tickmode="array", tickvals=stores, ticktext=[down_label(s, down) for s in stores])
    fig = base_layout(fig, height=max(220, 28 * len(stores) + 80))
    fig.update_layout(legend_traceorder="normal")
    return fig


def worst_folders(
    replicas: pd.DataFrame, entries: pd.DataFrame, as_of: Any = None, limit: int = 15
) -> pd.DataFrame:
    """The folders that need attention first: content at risk, most missing CNs, overdue, oldest entry.

    ``replicas``: store, fid, path, health, missing_count, at_risk_count (what is so: the same
    number everywhere, whatever the stores believe); ``entries``: the open backfill entries
    (observer, fid, opened_at).
    """
    cols = [
        "fid",
        "path",
        "missing_count",
        "at_risk_count",
        "overdue",
        "open_entries",
        "oldest_open_at",
        "oldest_open_age_s",
    ]
    if replicas.empty:
        return pd.DataFrame(columns=cols)
    r = replicas.copy()
    r["at_risk"] = at_risk_cns(r)
    r["is_overdue"] = (r["health"] == "overdue").astype("int64")
    per = r.groupby("fid").agg(
        path=("path", "first"),
        missing_count=("missing_count", "sum"),
        at_risk_count=("at_risk", "sum"),
        overdue=("is_overdue", "sum"),
    )
    if not entries.empty:
        e = entries.groupby("fid").agg(
            open_entries=("opened_at", "size"), oldest_open_at=("opened_at", "min")
        )
        per = per.join(e, how="left")
    else:
        per["open_entries"] = 0
        per["oldest_open_at"] = pd.Series(pd.NaT, index=per.index, dtype="datetime64[ns, UTC]")
    per["open_entries"] = per["open_entries"].fillna(0).astype("int64")
    ref = pd.Timestamp(as_of) if as_of is not None else None
    per["oldest_open_age_s"] = (
        (ref - per["oldest_open_at"]).dt.total_seconds() if ref is not None else float("nan")
    )
    per = per[
        (per["missing_count"] > 0)
        | (per["at_risk_count"] > 0)
        | (per["overdue"] > 0)
        | (per["open_entries"] > 0)
    ]
    per = per.sort_values(
        ["at_risk_count", "overdue", "missing_count", "oldest_open_at"],
        ascending=[False, False, False, True],
        na_position="last",
    )
    out = per.reset_index()[cols].head(limit)
    for c in ("missing_count", "at_risk_count", "overdue"):
        out[c] = out[c].astype("int64")
    return out.reset_index(drop=True)


def lag_heatmap_frame(lag_pairs: pd.DataFrame, stores: Sequence[str]) -> pd.DataFrame:
    """Observer (rows) by subject (columns) total knowledge lag, stores in the given order."""
    names = list(stores)
    if lag_pairs.empty:
        return pd.DataFrame(
            0, index=pd.Index(names, name="observer"), columns=pd.Index(names, name="subject")
        )
    pivot = lag_pairs.pivot_table(index="observer", columns="subject", values="lag_count", aggfunc="sum")
    return pivot.reindex(index=names, columns=names).rename_axis(index="observer", columns="subject")


def fig_lag_heatmap(
    matrix: pd.DataFrame, max_marks: int = MAX_MARKS, down: Collection[str] = ()
) -> go.Figure:
    """The store × store knowledge-lag heatmap on an absolute scale (see :data:`LAG_ALARM`): a
    healthy organisation's small lag stays pale. The diagonal says "self"; a blank cell: no
    shared folder. Each cell carries its (observer, subject) as customdata, for clicks.

    A store in ``down`` is labelled "(down)" as row and column, and its cells' hover says what
    that means (its row: what it knew when it went down; its column: a store out of reach).

    More than ``sqrt(max_marks)`` stores: only the stores with the most lag (as observer or
    subject) are drawn, the down stores first, and the title says so.
    """
    if matrix.empty:
        return empty_figure("No stores")
    side = int(max_marks**0.5)
    title = None
    down = set(down) & set(matrix.index)
    if len(matrix.index) > side:
        totals = matrix.fillna(0).sum(axis=1) + matrix.fillna(0).sum(axis=0).reindex(matrix.index).fillna(0)
        ranked = totals.sort_values(ascending=False, kind="stable").index
        keep = sorted(([s for s in ranked if s in down] + [s for s in ranked if s not in down])[:side])
        title = f"The {side} stores with the most lag, of {len(matrix.index)}"
        matrix = matrix.loc[keep, keep]
    z = matrix.to_numpy(dtype="float64")
    rows, cols = list(matrix.index), list(matrix.columns)
    text = [
        ["self" if o == s else "" if pd.isna(v) else f"{int(v):,}" for s, v in zip(cols, row, strict=True)]
        for o, row in zip(rows, z, strict=True)
    ]
    custom = [[[o, s, _down_note(o, s, down)] for s in cols] for o in rows]
    ticks = [0, LAG_ALARM // 10, LAG_ALARM // 4, LAG_ALARM // 2, LAG_ALARM]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=cols,
            y=rows,
            text=text,
            texttemplate="%{text}",
            customdata=custom,
            colorscale=LAG_ABSOLUTE_SCALE,
            zmin=0,
            zmax=LAG_ALARM,
            hoverongaps=False,
            # the scale lies under the chart (the x axis is on top): the cells get the whole width,
            # so ten stores' columns fit a phone's 390 px
            colorbar={
                "title": {"text": "knowledge lag (CNs)", "side": "top"},
                "tickvals": ticks,
                "ticktext": [f"{t:,}" for t in ticks[:-1]] + [f"{LAG_ALARM:,}+"],
                "orientation": "h",
                "x": 0,
                "xanchor": "left",
                "y": -0.02,
                "yanchor": "top",
                "len": 1,
                "lenmode": "fraction",
                "thickness": 12,
            },
            textfont={"size": 12},
            hovertemplate="%{y}'s knowledge of %{x} lags %{x}'s real state by %{z:,} CNs%{customdata[2]}"
            "<extra></extra>",
        )
    )
    # the diagonal: a store about itself has no lag; drawn grey with "self", not left blank
    diagonal = [[1.0 if o == s else None for s in cols] for o in rows]
    # its own labels on the diagonal only: the numbers show through its gaps (plotly.js draws a text
    # node per cell and label; the full grid twice cost half the chart's drawing at 40 stores)
    selfs = [["self" if o == s else "" for s in cols] for o in rows]
    fig.add_trace(
        go.Heatmap(
            z=diagonal,
            x=cols,
            y=rows,
            colorscale=[[0, "#d0d7de"], [1, "#d0d7de"]],
            showscale=False,
            hoverinfo="skip",
            text=selfs,
            texttemplate="%{text}",
            textfont={"size": 12},
            hoverongaps=False,
            name="self",
        )
    )
    fig.update_xaxes(
        title="subject (the store believed about)",
        side="top",
        tickmode="array",
        tickvals=cols,
        ticktext=[down_label(str(s), down) for s in cols],
    )
    fig.update_yaxes(
        title="observer",
        autorange="reversed",
        tickmode="array",
        tickvals=rows,
        ticktext=[down_label(str(o), down) for o in rows],
    )
    return base_layout(fig, title=title, height=max(300, 34 * len(matrix.index) + 190))


def _down_note(observer: str, subject: str, down: Collection[str]) -> str:
    """The hover's last line for a heatmap cell of a down store: whose view is frozen, or out of reach."""
    notes = []
    if observer in down:
        notes.append(f"{esc(observer)} is down: this is what it knew when it went down")
    if subject in down:
        notes.append(f"{esc(subject)} is down: out of reach, it sends nothing")
    return "".join("<br>" + n for n in notes)


#: a lag heatmap column narrower than this (px) would not hold its numbers: below it the chart scrolls
LAG_COLUMN_PX = 26


def lag_heatmap_min_width(stores: int) -> str:
    """The lag heatmap's narrowest readable width: its columns plus the observer names."""
    return f"{100 + LAG_COLUMN_PX * max(stores, 1)}px"


def lag_click_target(point: dict[str, Any] | None) -> str | None:
    """Where a click on the lag heatmap goes: the observer's store page, at its partners behind."""
    if not point:
        return None
    custom = point.get("customdata")
    observer = custom[0] if isinstance(custom, (list, tuple)) and custom else point.get("y")
    if not observer:
        return None
    from urllib.parse import quote

    return f"/store/{quote(str(observer), safe='')}#pf-behind-section"


@dataclass(frozen=True)
class Headline:
    """One count of the overview's first screen, and the view that lists what it counts."""

    key: str
    count: int
    label: str
    href: str
    term: str | None = None
    #: how urgent a non-zero count is: critical (content at risk, a store down), warning (a
    #: failing backfill, rejected lines) or info (backfill under way: normal between messages)
    tier: str = "warning"

    @property
    def alarm(self) -> bool:
        return self.count > 0


def at_risk_cns(replicas: pd.DataFrame) -> pd.Series:
    """Per replica row, the CNs at risk: its published ``at_risk_count`` (what is so: the CNs no
    other store on the list really holds, of a delete-pending replica or of a replica on a store
    that is down). Never its store's belief (``unique_count``); null (a run published before the
    column) counts 0."""
    if "at_risk_count" not in replicas.columns:
        return pd.Series(0, index=replicas.index, dtype="int64")
    return pd.to_numeric(replicas["at_risk_count"], errors="coerce").fillna(0).astype("int64")


#: the view the headline's "content at risk" opens: the replicas holding it
AT_RISK_HREF = "/replicas?at_risk=1"


def headline_counts(
    stores: pd.DataFrame, replicas: pd.DataFrame, entries: pd.DataFrame, rejected: Any
) -> list[Headline]:
    """The overview's headline: what is wrong, worst first, each a link to the filtered view.

    ``replicas``: store, health, at_risk_count; ``entries``: the open backfill entries.
    """
    down = len(down_stores(stores))
    overdue = int((replicas["health"] == "overdue").sum()) if not replicas.empty else 0
    at_risk = int(at_risk_cns(replicas).sum()) if not replicas.empty else 0
    rejected_n = int(rejected or 0)
    return [
        Headline(
            "stores-down",
            down,
            "store down" if down == 1 else "stores down",
            "/?status=down#pf-stores",
            "down",
            tier="critical",
        ),
        Headline(
            "overdue",
            overdue,
            "overdue replica" if overdue == 1 else "overdue replicas",
            "/backfill?overdue=1",
            "overdue",
        ),
        Headline(
            "at-risk",
            at_risk,
            f"CN{'' if at_risk == 1 else 's'} of content at risk",
            AT_RISK_HREF,
            "content-at-risk",
            tier="critical",
        ),
        Headline(
            "open-entries",
            len(entries),
            "open backfill entry" if len(entries) == 1 else "open backfill entries",
            "/backfill",
            "backfill-entry",
            tier="info",
        ),
        Headline(
            "rejected",
            rejected_n,
            "rejected input line" if rejected_n == 1 else "rejected input lines",
            "/rejects",
            "rejected-line",
        ),
    ]


def down_stores(stores: pd.DataFrame) -> set[str]:
    """The stores that are down as of the run."""
    return set(stores.loc[stores["status"] == "down", "store"]) if "status" in stores.columns else set()


def run_age_s(summary: dict[str, Any], now: pd.Timestamp) -> float | None:
    """Seconds since the run finished (or since its as-of time when no finish time was recorded)."""
    ref = summary.get("finished_at") or summary.get("as_of")
    if ref is None or pd.isna(ref):
        return None
    return float((pd.Timestamp(now) - pd.Timestamp(ref)).total_seconds())
