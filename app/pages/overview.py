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
from pfscope.app import history
from pfscope.app.data import RunData
from pfscope.app.figures import incidents as inc
from pfscope.app.figures import recovery as rc
from pfscope.app.figures import store_trend as st
from pfscope.app.figures import timeline as tl
from pfscope.app.figures.forecast import record_text
from pfscope.app.lazy_figure import graph_id as lazy_graph_id
from pfscope.app.lazy_figure import lazy_graph
from pfscope.app.runtime import current_data, settings

dash.register_page(__name__, path="/", name="Overview", title="pfscope · overview")

#: rows of "Folders needing attention" shown on the overview
WORST_ROWS = 15

Section = Callable[[RunData, dict[str, Any], dict[str, Any]], Any]


def _graph(fig: dict[str, Any], id: str, **props: Any) -> html.Div:
    """A chart of the overview, drawn when it is about to be seen (all are below the fold; the
    first screen does not wait for them): ``div#id`` holding the graph ``lazy_graph_id(id)``."""
    return lazy_graph(fig, id, "pf-figure pf-clickable", config={"displaylogo": False}, **props)


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
            data.forecast_summary(),
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
        "holds is said to be its belief. A line about replicas that lack CNs ends with their "
        "forecast (when they will be in sync, and at the latest; or why they will not).",
        term="content-at-risk",
    )


def recovery_section(data: RunData, summary: dict[str, Any], _query: dict[str, Any]) -> Any:
    """When will it be in sync: the replicas still lacking CNs over the coming days, by the
    forecast (what is so, played forward from the as-of, under what it assumes), with its bound
    and the replicas that will not catch up, grouped by why."""
    title = "When will it be in sync? The forecast"
    if "forecast" in data.missing():
        said = "Unknown: this run was published by an earlier pfscope, without the forecast."
        return c.section(title, html.P(said, id="pf-recovery-summary"), id="pf-recovery", term="forecast")
    found = data.memo("recovery", (), lambda: rc.recovery(data.forecast_summary(), summary.get("as_of")))
    fig = data.memo("fig_recovery", (), lambda: rc.fig_recovery(found).to_plotly_json())
    why = [
        html.Li([html.Span(f.plural(n, "replica"), className="pf-recovery-count"), ": ", text])
        for text, n in found.why
    ]
    return c.section(
        title,
        html.P(rc.recovery_text(found), id="pf-recovery-summary", className="pf-count"),
        _graph(fig, "pf-recovery-fig") if found.total else "",
        *([html.H3("Will not catch up, by why"), html.Ul(why, id="pf-recovery-blocked")] if why else []),
        html.P(f"A forecast of what is so, not a store's belief: {rc.ASSUMES}.", className="pf-muted"),
        html.P(
            ["How far to trust it: ", record_text(data.forecast_record(["outcome", "cause"]))],
            id="pf-forecast-record",
        ),
        id="pf-recovery",
        help="The replicas that lack CNs at the as-of (what is so), still lacking over the coming days by the "
        "forecast: a step down when each is in sync (solid), the same if the first reply of each backfill entry is "
        f"lost (dashed: the bound to plan with), and at the bottom the replicas that will not catch up within "
        f"{rc.HORIZON_DAYS} days (shaded), labelled with why.",
        term="forecast",
    )


#: incidents the overview lists (newest first) before "show all"
INCIDENT_ROWS = 25


def happened_section(data: RunData, summary: dict[str, Any], query: dict[str, Any]) -> Any:
    """What happened: the organisation's incidents (outages and what they caused, replica-list
    changes, mail never processed, entries overdue), as a timeline chart and a list, newest first,
    those that are over too (a store's status says only how it is at the as-of)."""
    found = history.incidents(data)
    as_of = summary.get("as_of")
    if not found.items:
        return c.section(
            "What happened",
            html.P(found.summary(), id="pf-incidents-summary"),
            id="pf-happened",
            term="down-period",
        )
    fig = data.memo(
        "fig_incidents",
        (),
        lambda: tl.fig_incident_timeline(list(found.items), as_of).to_plotly_json(),
    )
    every = found.newest_first()
    rows = len(every) if query.get("incidents") == "all" else INCIDENT_ROWS
    shown = every[:rows]
    more = len(every) - len(shown)
    return c.section(
        "What happened",
        html.P(found.summary(), id="pf-incidents-summary", className="pf-count"),
        dcc.Graph(id="pf-incidents-fig", figure=fig, config={"displaylogo": False}, className="pf-figure"),
        html.Ul(
            [incident_item(x, as_of) for x in shown], id="pf-incidents", className="pf-verdict pf-incidents"
        ),
        html.P(
            [
                f"The {len(shown):,} newest of {len(every):,}. ",
                dcc.Link(
                    f"Show all {len(every):,}", href="/?incidents=all#pf-happened", id="pf-incidents-all"
                ),
            ],
            className="pf-muted",
        )
        if more > 0
        else "",
        id="pf-happened",
        help="From every store's log, up to the as-of (UTC), newest first: each period a store was down "
        "and what it caused, replica-list changes, mail no recipient processed (in transit, queued until "
        "the 48 h expiry, or expired) and entries that became overdue. Events close in time are one line, "
        "which says how many it groups.",
        term="down-period",
    )


#: what an incident's link opens, per kind
_LINKS = {"outage": "its store", "lists": "the folder", "mail": "its store", "overdue": "the entries"}


def incident_item(x: inc.Incident, as_of: Any) -> html.Li:
    """One incident: when, what kind, what happened (a link to where it shows), and the groups it
    merges, folded."""
    when = f.span_text(x.start, x.end) if x.end is not None else f"{f.short_time(x.start)}, ongoing"
    label, term = inc.KINDS[x.kind]
    body: list[Any] = [
        html.Span(when, className="pf-incident-when"),
        " · ",
        html.Span([label, " ", c.term_link(term)], className="pf-incident-kind"),
        ": ",
        html.Span(x.text, className="pf-incident-text"),
    ]
    if x.href:
        body += [" ", dcc.Link(_LINKS.get(x.kind, "details"), href=x.href, className="pf-incident-link")]
    if x.parts:
        body.append(
            html.Details(
                [
                    html.Summary(f"{len(x.parts):,} lines in it, by store"),
                    html.Ul([html.Li(p) for p in x.parts]),
                ],
                className="pf-incident-parts",
            )
        )
    return html.Li(body, className=f"pf-incident pf-verdict-{x.tier}", **c.html_attrs({"data-kind": x.kind}))


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
    """Each store's replicas by health; a down store's are out of reach, drawn as such."""
    down = f.down_stores(data.stores())

    def health_fig() -> dict[str, Any]:
        return f.fig_health_by_store(
            f.health_by_store(data.replica_summary(), data.stores()), down
        ).to_plotly_json()

    return c.section(
        "Replicas by health",
        c.health_legend(store_down=bool(down)),
        _graph(data.memo("fig_health", (), health_fig), "pf-health-fig"),
        id="pf-health",
        help="Click a bar to open its store. A store that is down: its replicas are out of reach, one "
        "crossed grey bar (their last known health in its hover).",
    )


def trend_section(data: RunData, summary: dict[str, Any], query: dict[str, Any]) -> Any:
    """Open and overdue backfill entries over the run: the organisation's totals, annotated with
    what happened, then a store × time heatmap, worst stores first (readable at 200 stores)."""
    as_of = summary.get("as_of")
    every = query.get("trend") == "all"

    def totals_fig() -> dict[str, Any]:
        entries = history.entries_overdue(data)
        fig = st.fig_org_totals(st.org_totals(entries, as_of))
        return tl.annotate(fig, history.incidents(data).items, as_of).to_plotly_json()

    def stores_fig() -> tuple[dict[str, Any], int, int]:
        trend = st.store_trend(
            history.entries_overdue(data),
            data.stores()["store"].tolist(),
            data.store_periods(),
            as_of,
            rows=None if every else st.ROWS,
        )
        fig = tl.annotate(st.fig_store_trend(trend, as_of), history.incidents(data).items, as_of, bands=False)
        return fig.to_plotly_json(), len(trend.stores), trend.hidden

    heat, drawn, hidden = data.memo("fig_store_trend", (every,), stores_fig)
    return c.section(
        "Backfill entries over time",
        _graph(data.memo("fig_org_trend", (), totals_fig), "pf-trend-fig"),
        html.H3("Per store, worst first"),
        html.P(
            [
                f"{drawn:,} of {drawn + hidden:,} stores: the {st.ROWS} worst (the most entries overdue at once, "
                "then the most open at once) and every store that was down, worst first. ",
                dcc.Link(
                    f"Show all {drawn + hidden:,}", href="/?trend=all#pf-trend", id="pf-store-trend-all"
                ),
            ]
            if hidden
            else f"Every store ({drawn:,}), the worst first: the most entries overdue at once, then the most open "
            "at once.",
            id="pf-store-trend-count",
            className="pf-muted",
        ),
        dcc.Graph(id="pf-store-trend-fig", figure=heat, config={"displaylogo": False}, className="pf-figure"),
        id="pf-trend",
        help="Each store's own backfill entries (as observer), from the first entry opened to the as-of: above, "
        "all stores' open entries and the overdue among them (two requests or more: the first did not fill them), "
        "with the outages shaded and the replica-list changes as dashed lines; below, a row per store, its cells "
        "the most entries open at once in each time bin, its overdue stretches as a bar under the row and its "
        "down periods hatched.",
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
            f.lag_heatmap_frame(data.lag_pairs(), data.stores()["store"].tolist()),
            down=f.down_stores(data.stores()),
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
        f"or more is the darkest. Blank: no shared folder. A store marked (down) is down: its row is what it knew "
        f"when it went down. Click a cell to open the observer's store.",
        term="lag",
    )


#: the overview, top to bottom
SECTIONS: list[Section] = [
    headline_section,
    causes_section,
    recovery_section,
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
    Input(lazy_graph_id("pf-lag-fig"), "clickData"),
    Input(lazy_graph_id("pf-health-fig"), "clickData"),
    prevent_initial_call=True,
)
def open_clicked(lag: dict[str, Any] | None, health: dict[str, Any] | None) -> str | dash.NoUpdate:
    """A click on a heatmap cell or a health bar opens that store."""
    on_lag = dash.ctx.triggered_id == lazy_graph_id("pf-lag-fig")
    click = lag if on_lag else health
    point = (click or {}).get("points", [None])[0]
    target = (
        f.lag_click_target(point)
        if on_lag
        else (c.store_href(point["y"]) if point and point.get("y") else None)
    )
    return target or dash.no_update
