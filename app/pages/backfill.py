"""``/backfill``: every open backfill entry of the organisation in a sortable, filterable grid,
with CSV export of the rows shown. ``?observer=STORE`` narrows it (shareable)."""

from __future__ import annotations

from typing import Any

import dash
import dash_ag_grid as dag
import pandas as pd
from dash import Input, Output, callback, dcc, html

from app import components as c
from app import figures as f
from app.runtime import current_data, settings

dash.register_page(__name__, path="/backfill", name="Backfill", title="pfscope · backfill")

#: rows sent to the browser at most (the grid pages them; the CSV is the rows shown)
MAX_ROWS = 50_000

COLUMNS: list[dict[str, Any]] = [
    {"field": "fid", "headerName": "FID", "cellRenderer": "PfLink", "cellRendererParams": {"base": "/folder/"}},
    {"field": "path", "headerName": "path", "flex": 3, "minWidth": 260, "tooltipField": "path"},
    {"field": "observer", "headerName": "store", "cellRenderer": "PfLink", "cellRendererParams": {"base": "/store/"}},
    {"field": "entry_id", "headerName": "entry"},
    {"field": "opened_at", "headerName": "opened (UTC)"},
    {"field": "open_for", "headerName": "open for"},
    {"field": "locality", "headerName": "locality"},
    {"field": "new_replica", "headerName": "new replica"},
    {"field": "requests", "headerName": "requests", "filter": "agNumberColumnFilter"},
    {"field": "cnset_remaining_count", "headerName": "CNs remaining", "filter": "agNumberColumnFilter"},
    {"field": "cnset_remaining", "headerName": "remaining", "flex": 2, "minWidth": 200, "tooltipField": "cnset_remaining"},
    {"field": "next_due_at", "headerName": "next due (UTC)", "sort": "asc"},
]


def grid_rows(entries: pd.DataFrame, folders: pd.DataFrame, as_of: Any) -> pd.DataFrame:
    """The grid's rows: open entries with their folder path, times as text, and age at the as-of."""
    rows = entries.merge(folders[["fid", "path"]], on="fid", how="left")
    ref = pd.Timestamp(as_of) if as_of is not None else None
    rows["open_for"] = [f.fmt_age((ref - t).total_seconds()) if ref is not None and not pd.isna(t) else ""
                        for t in rows["opened_at"]]
    for col in ("opened_at", "next_due_at"):
        rows[col] = rows[col].map(f.fmt_time)
    keep = [col["field"] for col in COLUMNS]
    return rows[keep].sort_values(["next_due_at", "fid"]).reset_index(drop=True)


def layout(observer: str | None = None, **_query: Any) -> html.Main:
    data = current_data()
    if data is None:
        return c.no_run(str(settings().data_dir))
    entries = data.open_entries()
    stores = sorted(data.stores()["store"])
    note = ""
    if observer:
        if observer not in stores:
            return c.not_found("Store not found", f"observer={observer!r}: this run has no such store.",
                               [(f"Backfill of {s}", f"/backfill?observer={s}") for s, _ in
                                c.suggestions(observer, [(s, s, s) for s in stores])])
        entries = entries[entries["observer"] == observer]
    rows = grid_rows(entries, data.folders(), data.summary().get("as_of"))
    if len(rows) > MAX_ROWS:
        note = f"Showing the {MAX_ROWS:,} soonest due of {len(rows):,} open entries; narrow by store."
        rows = rows.head(MAX_ROWS)
    return html.Main(className="pf-page", children=[
        html.H1("Open backfill entries"),
        html.P(f"{len(rows):,} open entr{'y' if len(rows) == 1 else 'ies'}"
               + (f" of {observer}" if observer else " in the organisation") + ". " + note, id="pf-backfill-count"),
        html.Div(className="pf-toolbar", children=[
            html.Label("Store", htmlFor="backfill-observer"),
            html.Nav([dcc.Link("all", href="/backfill"),
                      *[dcc.Link(s, href=f"/backfill?observer={s}") for s in stores]], className="pf-chips"),
            html.Button("Export CSV", id="backfill-export", n_clicks=0, type="button"),
        ]),
        dag.AgGrid(
            id="backfill-grid",
            rowData=rows.to_dict("records"),
            columnDefs=COLUMNS,
            defaultColDef={"sortable": True, "filter": "agTextColumnFilter", "resizable": True, "floatingFilter": True,
                           "minWidth": 110, "cellDataType": False},
            dashGridOptions={"pagination": True, "paginationPageSize": 100, "enableCellTextSelection": True,
                             "animateRows": False},
            csvExportParams={"fileName": f"pfscope-backfill{'-' + observer if observer else ''}.csv"},
            className="ag-theme-quartz pf-grid",
            style={"height": "70vh"},
        ),
    ])


@callback(Output("backfill-grid", "exportDataAsCsv"), Input("backfill-export", "n_clicks"),
          prevent_initial_call=True)
def export_csv(n_clicks: int) -> bool:
    """The grid writes the rows shown (after its filters and sort) as CSV."""
    return bool(n_clicks)
