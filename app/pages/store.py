"""``/store/<name>``: a store's replicas and health, its open backfill queue, where its requests go,
and which partners it believes are behind."""

from __future__ import annotations

from typing import Any

import dash
from dash import dcc, html

from app import components as c
from app import figures as f
from app.runtime import current_data, settings

dash.register_page(__name__, path_template="/store/<name>", name="Store", title="pfscope · store")


def layout(name: str | None = None, **_query: Any) -> html.Main:
    data = current_data()
    if data is None:
        return c.no_run(str(settings().data_dir))
    name = name or ""
    stores = data.stores()
    row = stores[stores["store"] == name]
    if row.empty:
        choices = [(str(s), str(s), c.store_href(s)) for s in stores["store"]]
        return c.not_found("Store not found", f"This run has no store named {name!r}.", c.suggestions(name, choices))
    store = row.iloc[0].to_dict()
    replicas = data.replicas(store=name)
    severity = {h: i for i, h in enumerate(("delete_pending", "overdue", "backfilling", "deleted", "in_sync"))}
    replicas = replicas.assign(_sev=replicas["health"].map(severity)).sort_values(["_sev", "fid"]).drop(columns="_sev")
    counts = replicas.groupby("health").size().to_dict() if not replicas.empty else {}
    queue = data.backfill_entries(observer=name, state="open")
    queue = queue.sort_values(["next_due_at", "opened_at"], na_position="last") if not queue.empty else queue
    requests = data.backfill_requests(observer=name)
    by_source = f.requests_by_source(requests)
    behind = data.memo("partners_behind", (name,), lambda: f.partners_behind(data.state_table(observer=name)))

    return html.Main(className="pf-page", children=[
        html.H1(["Store ", html.Span(name, className="pf-mono")]),
        html.P([f"Server {store.get('server')} · site {store.get('site')} · Exchange {store.get('version')} · ",
                c.status_badge(store.get("status")),
                f" · preferred backfill source: {store.get('preferred_backfill_source')}"
                if store.get("preferred_backfill_source") else ""], id="pf-store-facts"),
        c.section("Replicas by health", html.Ul(
            [html.Li([c.health_badge(h), f" {int(counts.get(h, 0)):,}"]) for h in f.HEALTH_ORDER],
            className="pf-legend", id="pf-store-health")),
        c.section("Open backfill queue", c.table(
            queue,
            [("next_due_at", "next due"), ("fid", "FID"), ("entry_id", "entry"), ("opened_at", "opened"),
             ("locality", "locality"), ("requests", "requests"), ("cnset_remaining_count", "CNs remaining"),
             ("cnset_remaining", "remaining")],
            {"fid": c.link_fid, "cnset_remaining": c.as_cnset}, id="pf-queue"),
            help="Soonest due first."),
        c.section("Where its backfill requests go",
                  dcc.Graph(id="pf-sources-fig", figure=f.fig_requests_by_source(by_source),
                            config={"displaylogo": False}, className="pf-figure"),
                  c.table(by_source, [("source", "source"), ("kind", "kind"), ("requests", "requests"),
                                      ("cns", "CNs asked")], {"source": c.link_store}, id="pf-sources")),
        c.section("Partners it believes are behind", c.table(
            behind,
            [("subject", "partner"), ("folders_behind", "folders behind"), ("cns_behind", "CNs behind (believed)"),
             ("folders", "shared folders"), ("real_lag_count", "CNs not yet heard of (lag)")],
            {"subject": c.link_store}, id="pf-behind"),
            help="Believed behind: CNs this store owns that its state table says the partner lacks."),
        c.section("Replicas", c.table(
            replicas,
            [("fid", "FID"), ("path", "path"), ("health", "health"), ("open_entries", "open entries"),
             ("missing_count", "missing CNs"), ("unique_count", "unique CNs"), ("next_status_at", "next status")],
            {"fid": c.link_fid, "health": c.as_health}, id="pf-store-replicas")),
    ])
