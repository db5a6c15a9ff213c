"""``/``: the organisation at a glance: stores by site, replica health, worst folders, knowledge lag."""

from __future__ import annotations

from typing import Any

import dash
import pandas as pd
from dash import dcc, html

from app import components as c
from app import figures as f
from app.data import RunData
from app.runtime import current_data, settings

dash.register_page(__name__, path="/", name="Overview", title="pfscope · overview")


def _graph(fig: dict[str, Any], id: str) -> dcc.Graph:
    return dcc.Graph(id=id, figure=fig, config={"displaylogo": False}, className="pf-figure")


def backfill_trend_section(data: RunData) -> html.Section:
    """Open and overdue backfill entries per store over the run: better or worse, at a glance."""
    fig = data.memo("fig_backfill_trend", (), lambda: f.fig_backfill_trend(data.backfill_trend()).to_plotly_json())
    return c.section(
        "Backfill entries over time", _graph(fig, "pf-trend-fig"), id="pf-trend",
        help="Per store (as observer), its open backfill entries and, below, those overdue (two requests or "
             "more: the first did not fill them), from the first entry opened to the as-of time.",
    )


def layout(**_query: Any) -> html.Main:
    data = current_data()
    if data is None:
        return c.no_run(str(settings().data_dir))
    summary = data.summary()
    stores = data.stores()
    now = pd.Timestamp.now(tz="UTC")
    age = f.run_age_s(summary, now)

    def health_fig() -> dict[str, Any]:
        return f.fig_health_by_store(f.health_by_store(data.replica_summary(), stores)).to_plotly_json()

    def lag_fig() -> dict[str, Any]:
        return f.fig_lag_heatmap(f.lag_heatmap_frame(data.lag_pairs(), stores["store"].tolist())).to_plotly_json()

    worst = data.memo(
        "worst_folders", (),
        lambda: f.worst_folders(data.replica_summary(), data.open_entries(), summary.get("as_of")),
    )

    banner: list[Any] = []
    rejected = int(summary.get("rejected") or 0)
    if rejected:
        banner = [html.Div(role="alert", className="pf-banner", id="pf-rejects-banner", children=[
            f"{rejected:,} input line{'s' if rejected != 1 else ''} of this run could not be used. ",
            dcc.Link("See the rejected lines", href="/rejects"), ".",
        ])]

    sites = []
    for site, group in f.stores_by_site(stores).items():
        sites.append(html.Div(className="pf-card", children=[
            html.H3(site),
            c.table(group, [("store", "store"), ("server", "server"), ("version", "version"), ("status", "status")],
                    {"store": c.link_store, "status": lambda v, _r: c.status_badge(v)}),
        ]))

    return html.Main(className="pf-page", children=[
        html.H1("Overview"),
        c.download_link(c.report_href(), "pf-report-link"),
        html.P(className="pf-run-facts", id="pf-run-facts", children=[
            f"Run {data.run_id} · as of {f.fmt_time(summary.get('as_of'))}",
            f" · finished {f.fmt_age(age)} ago" if age is not None else "",
            f" · {int(summary.get('lines_read') or 0):,} lines read, {int(summary.get('accepted') or 0):,} accepted, "
            f"{int(summary.get('duplicates') or 0):,} duplicates, {rejected:,} rejected",
        ]),
        *banner,
        c.section("Stores by site", html.Div(sites, className="pf-cards"), id="pf-stores"),
        c.section("Replicas by health",
                  _graph(data.memo("fig_health", (), health_fig), "pf-health-fig"), id="pf-health"),
        backfill_trend_section(data),
        c.section(
            "Folders needing attention", c.table(
                worst,
                [("fid", "FID"), ("path", "path"), ("at_risk_count", "content at risk (CNs)"),
                 ("overdue", "overdue replicas"), ("missing_count", "missing CNs"), ("open_entries", "open entries"),
                 ("oldest_open_at", "oldest open entry"), ("oldest_open_age_s", "open for")],
                {"fid": c.link_fid, "oldest_open_age_s": lambda v, _r: f.fmt_age(v)}, id="pf-worst",
            ), id="pf-worst-section",
            help="Content at risk first (a delete-pending replica's unique CNs), then overdue replicas, "
                 "then missing CNs, then the oldest open backfill entry.",
        ),
        c.section("Knowledge lag, store × store", _graph(data.memo("fig_lag", (), lag_fig), "pf-lag-fig"),
                  id="pf-lag",
                  help="For each observer (row) and subject (column): CNs the subject really holds that the "
                       "observer's state table does not yet know, summed over their shared folders."),
    ])
