"""A store page's frames and figure: where its backfill requests go and the partners it believes behind."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from pfscope.app.figures.layout import base_layout, empty_figure
from pfscope.app.figures.matrix import with_derived
from pfscope.app.figures.palette import (
    ORANGE,
    VERMILLION,
)
from pfscope.spark_jobs.model.cnset import CNSet


def requests_by_source(requests: pd.DataFrame) -> pd.DataFrame:
    """Where a store's backfill requests go: per source and kind, requests and CNs asked."""
    cols = ["source", "kind", "requests", "cns"]
    if requests.empty:
        return pd.DataFrame(columns=cols)
    r = requests[requests["source"].notna() & (requests["source"] != "")]
    out = r.groupby(["source", "kind"], as_index=False).agg(
        requests=("at", "size"), cns=("cnset_count", "sum")
    )
    return out.sort_values(["requests", "source"], ascending=[False, True]).reset_index(drop=True)[cols]


def fig_requests_by_source(frame: pd.DataFrame) -> go.Figure:
    if frame.empty:
        return empty_figure("This store sent no backfill requests")
    fig = go.Figure()
    for kind, colour in (("expected", ORANGE), ("observed", VERMILLION)):
        part = frame[frame["kind"] == kind]
        if not part.empty:
            fig.add_bar(
                x=part["source"],
                y=part["requests"],
                name=kind,
                marker_color=colour,
                customdata=part["cns"],
                hovertemplate="%{x}: %{y} requests, %{customdata} CNs<extra></extra>",
            )
    fig.update_layout(barmode="stack", yaxis_title="requests")
    return base_layout(fig, height=280)


def partners_behind(state_table: pd.DataFrame) -> pd.DataFrame:
    """For one observer: each partner it believes lacks CNs the observer owns (per folder rows summed).

    ``state_table`` holds the observer's rows (self rows included) for any number of folders.
    ``derived_folders``: of those folders, how many believed sets are derived (lower bounds, so the
    partner may be less behind than believed).
    """
    cols = ["subject", "folders_behind", "cns_behind", "folders", "real_lag_count", "derived_folders"]
    if state_table.empty:
        return pd.DataFrame(columns=cols)
    state_table = with_derived(state_table)
    own = {
        r.fid: CNSet.parse(r.cnset or "") for r in state_table[state_table["is_self"]].itertuples(index=False)
    }
    acc: dict[str, list[int]] = {}
    for r in state_table[~state_table["is_self"].astype(bool)].itertuples(index=False):
        mine = own.get(r.fid)
        behind = mine.difference(CNSet.parse(r.cnset or "")).count() if mine is not None else 0
        a = acc.setdefault(r.subject, [0, 0, 0, 0, 0])
        a[0] += 1 if behind else 0
        a[1] += behind
        a[2] += 1
        a[3] += int(r.lag_count or 0) if not pd.isna(r.lag_count) else 0
        a[4] += 1 if r.derived else 0
    rows = [
        {
            "subject": s,
            "folders_behind": v[0],
            "cns_behind": v[1],
            "folders": v[2],
            "real_lag_count": v[3],
            "derived_folders": v[4],
        }
        for s, v in acc.items()
    ]
    out = pd.DataFrame(rows, columns=cols)
    return out.sort_values(["cns_behind", "subject"], ascending=[False, True]).reset_index(drop=True)
