"""``/``: the organisation at a glance. First what is wrong (a headline of counts, each a link to
the view listing it), then stores by site, replica health, the worst folders and knowledge lag.

The page is a list of self-contained sections (:data:`SECTIONS`, each ``(data, summary, query) ->
component``): a new section is one function and one line in the list.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dash
import pandas as pd
from dash import Input, Output, callback, dcc, html

from pfscope.app import components as c
from pfscope.app import figures as f
from pfscope.app.data import RunData
from pfscope.app.runtime import current_data, settings

dash.register_page(__name__, path="/", name="Overview", title="pfscope · overview")

#: rows of "Folders needing attention" shown on the overview
WORST_ROWS = 15

Section = Callable[[RunData, dict[str, Any], dict[str, Any]], Any]


def _graph(fig: dict[str, Any], id: str, **props: Any) -> dcc.Graph:
    return dcc.Graph(
        id=id, figure=fig, config={"displaylogo": False}, className="pf-figure pf-clickable", **props
    )


def headline_section(data: RunData, summary: dict[str, Any], _query: dict[str, Any]) -> Any:
    items = data.memo(
        "headline",
        (),
        lambda: f.headline_counts(
            data.stores(), data.replica_summary(), data.open_entries(), summary.get("rejected")
        ),
    )
    return c.headline(items)


def causes_section(data: RunData, summary: dict[str, Any], _query: dict[str, Any]) -> Any:
    """What is wrong, by cause: the headline's counts grouped under what explains them."""
    found = data.memo(
        "causes",
        (),
        lambda: f.causes(
            data.stores(),
            data.replica_summary(),
            data.open_entries(),
            data.next_requests(),
            summary.get("as_of"),
        ),
    )
    if not found:
        return c.section(
            "What is wrong, by cause", html.P("Nothing: every replica is in sync.", id="pf-causes")
        )
    items = [
        html.Li(
            className=f"pf-cause pf-verdict-{x.tier}",
            children=[
                dcc.Link(x.title, href=x.href, className="pf-cause-title"),
                html.Ul([html.Li(line) for line in x.consequences]),
            ],
        )
        for x in found
    ]
    return c.section(
        "What is wrong, by cause",
        html.Ul(items, id="pf-causes", className="pf-verdict"),
        help="Each cause with the consequences it explains, most urgent first: critical (a store "
        "down, content only one store holds), warning (a backfill failing), information "
        "(backfill under way). Content at risk is what is so; what a store believes only it "
        "holds is said to be its belief.",
        term="content-at-risk",
    )


#: outages the overview lists (newest first); the store pages have every one
OUTAGE_ROWS = 10


def happened_section(data: RunData, summary: dict[str, Any], _query: dict[str, Any]) -> Any:
    """What happened: the stores' down periods from ``store_periods``, newest first, those that are
    over too (a store's status says only how it is at the as-of)."""
    rows = data.memo("outage_rows", (), lambda: f.outage_rows(data.store_periods(), summary.get("as_of")))
    if rows.empty:
        body: list[Any] = [html.P("No store was down in the log, up to the as-of.", id="pf-outages")]
    else:
        more = len(rows) - OUTAGE_ROWS
        body = [
            c.table(
                rows,
                [("store", "store"), ("from", "down from"), ("to", "back up"), ("down_for", "down for")],
                {"store": c.link_store},
                id="pf-outages",
                limit=OUTAGE_ROWS,
            ),
            html.P(
                f"The {OUTAGE_ROWS} newest of {len(rows):,}; each store's page lists all of its own.",
                className="pf-muted",
            )
            if more > 0
            else "",
        ]
    return c.section(
        "What happened: stores down",
        *body,
        id="pf-happened",
        help="Every period a store was down, newest first, up to the as-of (UTC).",
        term="down-period",
    )


def rejects_banner_section(_data: RunData, summary: dict[str, Any], _query: dict[str, Any]) -> Any:
    rejected = int(summary.get("rejected") or 0)
    if not rejected:
        return None
    return html.Div(
        role="alert",
        className="pf-banner",
        id="pf-rejects-banner",
        children=[
            f"{f.plural(rejected, 'input line')} of this run could not be used. ",
            dcc.Link("See the rejected lines", href="/rejects"),
            ".",
        ],
    )


def stores_section(data: RunData, summary: dict[str, Any], query: dict[str, Any]) -> Any:
    stores = data.stores()
    as_of = summary.get("as_of")
    status = query.get("status")
    note: list[Any] = []
    if status:
        stores = stores[stores["status"] == status]
        note = [
            html.P(
                [
                    f"Only the stores that are {status}: {len(stores):,}. ",
                    dcc.Link("Show every store", href="/#pf-stores"),
                ],
                id="pf-stores-filter",
            )
        ]
    sites = []
    for site, group in f.stores_by_site(stores).items():
        sites.append(
            html.Div(
                className="pf-card",
                children=[
                    html.H3(site),
                    c.table(
                        group,
                        [
                            ("store", "store"),
                            ("server", "server"),
                            ("version", "version"),
                            ("status", c.with_term("status", "down")),
                        ],
                        {
                            "store": c.link_store,
                            "status": lambda v, r: (
                                html.Span([c.status_badge(v), " ", f.down_text(r.get("down_since"), as_of)])
                                if f.down_text(r.get("down_since"), as_of)
                                else c.status_badge(v)
                            ),
                        },
                    ),
                ],
            )
        )
    return c.section("Stores by site", *note, html.Div(sites, className="pf-cards"), id="pf-stores")


def health_section(data: RunData, _summary: dict[str, Any], _query: dict[str, Any]) -> Any:
    def health_fig() -> dict[str, Any]:
        return f.fig_health_by_store(
            f.health_by_store(data.replica_summary(), data.stores())
        ).to_plotly_json()

    return c.section(
        "Replicas by health",
        c.health_legend(),
        _graph(data.memo("fig_health", (), health_fig), "pf-health-fig"),
        id="pf-health",
        help="Click a bar to open its store.",
    )


def trend_section(data: RunData, _summary: dict[str, Any], _query: dict[str, Any]) -> Any:
    """Open and overdue backfill entries per store over the run: better or worse, at a glance."""
    fig = data.memo(
        "fig_backfill_trend", (), lambda: f.fig_backfill_trend(data.backfill_trend()).to_plotly_json()
    )
    return c.section(
        "Backfill entries over time",
        _graph(fig, "pf-trend-fig"),
        id="pf-trend",
        help="Per store (as observer), its open backfill entries and, below, those overdue (two requests or "
        "more: the first did not fill them), from the first entry opened to the as-of time.",
        term="overdue",
    )


def worst_section(data: RunData, summary: dict[str, Any], query: dict[str, Any]) -> Any:
    every = data.memo(
        "worst_folders_all",
        (),
        lambda: f.worst_folders(
            data.replica_summary(), data.open_entries(), summary.get("as_of"), limit=1 << 62
        ),
    )
    rows = len(every) if query.get("worst") == "all" else WORST_ROWS
    shown = every.head(rows).assign(
        path=lambda x: [f.folder_label(a, b) for a, b in zip(x["fid"], x["path"], strict=True)]
    )
    more = len(every) - len(shown)
    count = html.P(
        [
            f"{f.plural(len(every), 'folder')} need{'s' if len(every) == 1 else ''} attention"
            + (f"; the worst {len(shown):,} are shown, {more:,} more" if more > 0 else "")
            + ". ",
            dcc.Link(f"Show all {len(every):,}", href="/?worst=all#pf-worst-section", id="pf-worst-all")
            if more > 0
            else "",
        ],
        id="pf-worst-count",
        className="pf-count",
    )
    return c.section(
        "Folders needing attention",
        count,
        c.table(
            shown,
            [
                ("fid", "FID"),
                ("path", "path"),
                ("at_risk_count", c.with_term("content at risk (CNs)", "content-at-risk")),
                ("overdue", c.with_term("overdue replicas", "overdue")),
                ("missing_count", c.with_term("known missing CNs", "missing")),
                ("open_entries", "open entries"),
                ("oldest_open_at", "oldest open entry"),
                ("oldest_open_age_s", "open for"),
            ],
            {"fid": c.link_fid, "oldest_open_age_s": lambda v, _r: f.fmt_age(v)},
            id="pf-worst",
            limit=max(rows, 1),
        ),
        id="pf-worst-section",
        help="Content at risk first (what is so: CNs no other replica on the list holds, of a delete-pending "
        "replica or of a store that is down), then overdue replicas, then the CNs the replicas know they are "
        "missing, then the oldest open backfill entry.",
    )


def lag_section(data: RunData, _summary: dict[str, Any], _query: dict[str, Any]) -> Any:
    def lag_fig() -> dict[str, Any]:
        return f.fig_lag_heatmap(
            f.lag_heatmap_frame(data.lag_pairs(), data.stores()["store"].tolist())
        ).to_plotly_json()

    # as narrow as its columns stay readable (a phone fits ten stores); narrower, the chart alone scrolls
    graph = _graph(
        data.memo("fig_lag_abs", (), lag_fig),
        "pf-lag-fig",
        style={"minWidth": f.lag_heatmap_min_width(min(len(data.stores()), int(f.MAX_MARKS**0.5)))},
    )
    return c.section(
        "Knowledge lag, store × store",
        html.Div(graph, className="pf-figure-scroll", id="pf-lag-scroll"),
        id="pf-lag",
        help=f"For each observer (row) and subject (column): CNs the subject really holds that the observer's "
        f"state table does not yet know, summed over their shared folders. Absolute scale: {f.LAG_ALARM:,} CNs "
        f"or more is the darkest. Blank: no shared folder. Click a cell to open the observer's store.",
        term="lag",
    )


#: the overview, top to bottom
SECTIONS: list[Section] = [
    headline_section,
    causes_section,
    happened_section,
    rejects_banner_section,
    stores_section,
    health_section,
    trend_section,
    worst_section,
    lag_section,
]


def layout(**query: Any) -> html.Main:
    data = current_data()
    if data is None:
        return c.no_run(str(settings().data_dir))
    summary = data.summary()
    now = pd.Timestamp.now(tz="UTC")
    age = f.run_age_s(summary, now)
    as_of = summary.get("as_of")
    data_age = (
        (now - pd.Timestamp(as_of).tz_convert("UTC")).total_seconds()
        if as_of is not None and not pd.isna(as_of)
        else None
    )
    rejected = int(summary.get("rejected") or 0)
    head = [
        html.H1("Overview"),
        c.download_link(c.report_href(), "pf-report-link"),
        html.P(
            className="pf-run-facts",
            id="pf-run-facts",
            children=[
                f"Run {data.run_id} · as of {f.fmt_time(summary.get('as_of'))} ",
                c.term_link("as-of"),
                f" · data {f.fmt_age(data_age)} old" if data_age is not None else "",
                f" · finished {f.fmt_age(age)} ago" if age is not None else "",
                f" · {f.plural(summary.get('lines_read'), 'line')} read, {int(summary.get('accepted') or 0):,} accepted, "
                f"{f.plural(summary.get('duplicates'), 'duplicate')}, {rejected:,} rejected",
            ],
        ),
    ]
    body = [s(data, summary, query) for s in SECTIONS]
    return html.Main(className="pf-page", children=[*head, *[b for b in body if b is not None]])


@callback(
    Output("pf-nav-location", "href", allow_duplicate=True),
    Input("pf-lag-fig", "clickData"),
    Input("pf-health-fig", "clickData"),
    prevent_initial_call=True,
)
def open_clicked(lag: dict[str, Any] | None, health: dict[str, Any] | None) -> str | dash.NoUpdate:
    """A click on a heatmap cell or a health bar opens that store."""
    trigger = dash.ctx.triggered_id
    click = lag if trigger == "pf-lag-fig" else health
    point = (click or {}).get("points", [None])[0]
    target = (
        f.lag_click_target(point)
        if trigger == "pf-lag-fig"
        else (c.store_href(point["y"]) if point and point.get("y") else None)
    )
    return target or dash.no_update
