"""``/backfill``: every open backfill entry of the organisation in a sortable, filterable grid,
with CSV export of the rows shown. ``?observer=STORE`` narrows it (shareable)."""

from __future__ import annotations

from typing import Any

import dash
import dash_ag_grid as dag
import pandas as pd
from dash import Input, Output, callback, dcc, html

from pfscope.app import components as c
from pfscope.app import figures as f
from pfscope.app.figures import recovery as rc
from pfscope.app.runtime import current_data, settings

dash.register_page(__name__, path="/backfill", name="Backfill", title="pfscope · backfill")

#: rows sent to the browser at most (the grid pages them; the CSV is the rows shown)
MAX_ROWS = 50_000
#: the id of the phone's card column (not a field of the rows)
CARD = "card"

#: a column's text wraps and its row grows to hold it (nothing is cut off with an ellipsis)
WRAP: dict[str, Any] = {"wrapText": True, "autoHeight": True}

#: the wide grid (a desktop): every shown column fits 1440 px. Flex columns share the width left
#: over; their ``minWidth`` values add up to less than the grid's width at 1440 px, so nothing is
#: pushed off screen. The folder's path keeps its own name in view (``PfPath``: the start of the
#: path is elided, never the end). Columns with ``hide`` are not shown but go to the CSV export.
COLUMNS: list[dict[str, Any]] = [
    {
        "field": "fid",
        "headerName": "FID",
        "cellRenderer": "PfLink",
        "cellRendererParams": {"base": "/folder/"},
        "minWidth": 84,
        "width": 88,
        "pinned": "left",
    },
    {
        "field": "path",
        "headerName": "path",
        "flex": 2.4,
        "minWidth": 150,
        "cellRenderer": "PfPath",
        "tooltipField": "path",
        "headerTooltip": "the folder's path; a long one loses its start, never the folder's own name "
        "(the whole path on hover)",
        **WRAP,
    },
    {
        "field": "observer",
        "headerName": "store",
        "cellRenderer": "PfLink",
        "cellRendererParams": {"base": "/store/"},
        "minWidth": 84,
        "flex": 0.7,
    },
    {
        "field": "overdue",
        "headerName": "overdue",
        "minWidth": 124,
        "flex": 0.7,
        "sort": "desc",
        "sortIndex": 0,
        "headerTooltip": "overdue: retried (two requests or more), its first request did not fill it",
        "cellClassRules": {"pf-grid-overdue": "params.value === 'yes'"},
    },
    {
        "field": "health",
        "headerName": "health",
        "minWidth": 120,
        "flex": 1,
        "cellRenderer": "PfHealth",
        "headerTooltip": "the replica's health; on a down store, as last known",
        **WRAP,
    },
    {
        "field": "open_for",
        "headerName": "open for",
        "minWidth": 112,
        "flex": 0.8,
        "sort": "desc",
        "sortIndex": 1,
        "comparator": {"function": "PfOpenFor"},
        "headerTooltip": "time from opening to the run's as-of; sorts as a duration",
        **WRAP,
    },
    {
        "field": "open_for_s",
        "headerName": "open for (s)",
        "hide": True,
        "headerTooltip": "open for, in seconds (the CSV export's sortable duration)",
    },
    {
        "field": "requests",
        "headerName": "requests",
        "filter": "agNumberColumnFilter",
        "minWidth": 84,
        "flex": 0.6,
    },
    {
        "field": "cnset_remaining_count",
        "headerName": "CNs remaining",
        "filter": "agNumberColumnFilter",
        "minWidth": 120,
        "flex": 1.4,
        "cellRenderer": "PfRemaining",
        "tooltipField": "cnset_remaining",
        "headerTooltip": "how many CNs the entry still waits for, and which (sorts and filters by the count)",
        **WRAP,
    },
    {"field": "next_due_at", "headerName": "next due (UTC)", "minWidth": 100, "flex": 0.8, **WRAP},
    {
        "field": "forecast",
        "headerName": "forecast",
        "minWidth": 112,
        "flex": 1.1,
        "comparator": {"function": "PfForecast"},
        "cellRenderer": "PfForecastLink",  # to its explanation: /forecast?fid=&store=
        "tooltipField": "forecast_detail",
        "headerTooltip": "when the entry's replica will hold every CN it lacks, by the forecast (the model's rules "
        "played forward from the as-of; the bound: if a reply is lost), or why not within 14 days; sorts by "
        "time, those that will not catch up last",
        **WRAP,
    },
    {
        "field": "next_request",
        "headerName": "next request",
        "flex": 2.4,
        "minWidth": 136,
        "tooltipField": "next_request",
        "headerTooltip": "where the next backfill request will go (the model's source rules as of the run); "
        "it waits while its store is down",
        **WRAP,
    },
    {
        "field": "entry_id",
        "headerName": "entry",
        "minWidth": 140,
        "flex": 1.4,
        "comparator": {"function": "PfNatural"},
        "cellRenderer": "PfEntry",
        "headerTooltip": "the backfill entry (store/folder/number), whether it is local or remote, "
        "whether it was opened for a new replica, and when it was opened (UTC)",
        **WRAP,
    },
    {"field": "locality", "headerName": "locality", "hide": True},
    {"field": "new_replica", "headerName": "new replica", "hide": True},
    # shown in the entry column (PfEntry): "remote, opened 2026-11-06 12:47:50Z"
    {"field": "opened_at", "headerName": "opened (UTC)", "hide": True},
    {"field": "cnset_remaining", "headerName": "remaining", "hide": True},
    {"field": "forecast_in_sync_at", "headerName": "forecast: in sync by (UTC)", "hide": True},
    {"field": "forecast_latest_at", "headerName": "forecast: at the latest (UTC)", "hide": True},
    {"field": "forecast_detail", "headerName": "forecast, in words", "hide": True},
    {
        # a phone's one column (assets/dashAgGridFunctions.js, PfPhoneColumns): each entry as a
        # card with every value in full; hidden on a wider screen, never exported
        "colId": CARD,
        "headerName": "open entries: overdue first, then the longest open",
        "hide": True,
        "flex": 1,
        "sortable": False,
        "filter": False,
        "floatingFilter": False,
        "resizable": False,
        "cellRenderer": "PfEntryCard",
        "cellClass": "pf-entry-card-cell",
        **WRAP,
    },
]
#: fields sent to the browser but not shown (sort keys); hidden columns are still exported to CSV
HIDDEN: list[str] = ["forecast_s"]
#: the rows' fields, in the grid's order (the CSV export's columns)
FIELDS: list[str] = [col["field"] for col in COLUMNS if "field" in col]


def grid_rows(
    entries: pd.DataFrame,
    folders: pd.DataFrame,
    as_of: Any,
    replicas: pd.DataFrame | None = None,
    stores: pd.DataFrame | None = None,
    forecast: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The grid's columns of :func:`app.figures.backfill_rows` (attention first), with each
    entry's replica's forecast (``forecast``: the table's rows; none: empty)."""
    rows = f.backfill_rows(entries, folders, as_of, replicas, stores)
    rows = rc.forecast_columns(rows, forecast if forecast is not None else pd.DataFrame(), store="observer")
    return rows[FIELDS + HIDDEN]


def layout(observer: str | None = None, overdue: str | None = None, **_query: Any) -> html.Main:
    data = current_data()
    if data is None:
        return c.no_run(str(settings().data_dir))
    entries = data.open_entries()
    stores_frame = data.stores()
    stores = sorted(stores_frame["store"])
    note = ""
    if observer:
        if observer not in stores:
            return _store_not_found(observer, stores)
        entries = entries[entries["observer"] == observer]
    only_overdue = overdue in ("1", "yes", "true")
    if only_overdue:
        entries = entries[entries["requests"].fillna(0) >= 2]
    entries = f.with_next_request(entries, data.next_requests())
    rows = grid_rows(
        entries,
        data.folders(),
        data.summary().get("as_of"),
        data.replica_summary(),
        stores_frame,
        data.forecast_summary(),
    )
    if len(rows) > MAX_ROWS:
        note = f"Showing the {MAX_ROWS:,} most urgent of {len(rows):,} open entries; narrow by store."
        rows = rows.head(MAX_ROWS)
    return html.Main(
        className="pf-page",
        children=[
            html.H1("Overdue backfill entries" if only_overdue else "Open backfill entries"),
            _count_line(rows, observer, only_overdue, note),
            _toolbar(stores, observer, only_overdue),
            _grid(rows, observer, only_overdue),
        ],
    )


def _store_not_found(observer: str, stores: list[str]) -> html.Main:
    return c.not_found(
        "Store not found",
        f"observer={observer!r}: this run has no such store.",
        [
            (f"Backfill of {s}", f"/backfill?observer={s}")
            for s, _ in c.suggestions(observer, [(s, s, s) for s in stores])
        ],
    )


def _count_line(rows: pd.DataFrame, observer: str | None, only_overdue: bool, note: str) -> html.P:
    """How many entries are shown, of which store, how many of them overdue."""
    overdue_n = int((rows["overdue"] == "yes").sum())
    what = ("overdue open entr" if only_overdue else "open entr") + ("y" if len(rows) == 1 else "ies")
    return html.P(
        [
            f"{len(rows):,} {what}"
            + (f" of {observer}" if observer else " in the organisation")
            + (f", {overdue_n:,} of them overdue" if not only_overdue else "")
            + ". ",
            c.term_link("overdue", "What is overdue?"),
            " Overdue first, then the longest open. " + note,
        ],
        id="pf-backfill-count",
    )


def _toolbar(stores: list[str], observer: str | None, only_overdue: bool) -> html.Div:
    """The store and overdue chips (each a link to its view), and the CSV export."""

    def chip(label: str, obs: str | None, od: bool) -> dcc.Link:
        q = "&".join(p for p in (f"observer={obs}" if obs else "", "overdue=1" if od else "") if p)
        current = (obs or None) == (observer or None) and od == only_overdue
        return dcc.Link(
            label,
            href="/backfill" + (f"?{q}" if q else ""),
            className="pf-chip" + (" pf-chip-on" if current else ""),
            title="shown" if current else None,
        )

    return html.Div(
        className="pf-toolbar",
        children=[
            html.Span("Store", className="pf-toolbar-label"),
            html.Nav(
                [chip("all", None, only_overdue), *[chip(s, s, only_overdue) for s in stores]],
                className="pf-chips",
                **c.html_attrs({"aria-label": "store"}),
            ),
            html.Nav(
                [chip("every open entry", observer, False), chip("overdue only", observer, True)],
                className="pf-chips",
                **c.html_attrs({"aria-label": "overdue"}),
            ),
            html.Button("Export CSV", id="backfill-export", n_clicks=0, type="button"),
        ],
    )


def _grid(rows: pd.DataFrame, observer: str | None, only_overdue: bool) -> dag.AgGrid:
    """The entries, sortable and filterable, a page of 100 at a time."""
    return dag.AgGrid(
        id="backfill-grid",
        rowData=rows.to_dict("records"),
        columnDefs=COLUMNS,
        defaultColDef={
            "sortable": True,
            "filter": "agTextColumnFilter",
            "resizable": True,
            "floatingFilter": True,
            "minWidth": 80,
            "cellDataType": False,
            "wrapHeaderText": True,  # "CNs remaining", "next due (UTC)": on two lines, not cut
            "autoHeaderHeight": True,
        },
        dashGridOptions={
            "pagination": True,
            "paginationPageSize": 100,
            "enableCellTextSelection": True,
            "animateRows": False,
            "tooltipShowDelay": 300,
        },
        csvExportParams={
            "columnKeys": FIELDS,  # hidden columns too; not the phone's card column
            "fileName": f"pfscope-backfill{'-' + observer if observer else ''}"
            f"{'-overdue' if only_overdue else ''}.csv",
        },
        # a phone sees one column of cards: assets/dashAgGridFunctions.js, PfPhoneColumns
        className="ag-theme-quartz pf-grid",
        style={"height": "70vh"},
    )


@callback(
    Output("backfill-grid", "exportDataAsCsv"),
    Input("backfill-export", "n_clicks"),
    prevent_initial_call=True,
)
def export_csv(n_clicks: int) -> bool:
    """The grid writes the rows shown (after its filters and sort) as CSV."""
    return bool(n_clicks)
