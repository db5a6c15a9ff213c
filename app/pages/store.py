"""``/store/<name>``: a store's replicas and health, its down periods (those that are over too),
its content at risk beside what it believes only it holds, its open backfill queue, where its
requests go, and which partners it believes are behind."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import dash
import pandas as pd
from dash import dcc, html

from pfscope.app import components as c
from pfscope.app import figures as f
from pfscope.app import history
from pfscope.app.data import RunData
from pfscope.app.figures import recovery as rc
from pfscope.app.figures.plan import plan_href
from pfscope.app.runtime import current_data, settings
from pfscope.spark_jobs.model.rules.health import entry_overdue

#: the maintenance window the store page's plan link starts with
MAINTENANCE = "+4h"


def title(name: str | None = None, **_: Any) -> str:
    return f"pfscope · store {name}" if name else "pfscope · store"


dash.register_page(__name__, path_template="/store/<name>", name="Store", title=title)

#: rows per table: a store can hold tens of thousands of replicas (the worst come first)
ROWS = 100


def layout(name: str | None = None, **_query: Any) -> html.Main:
    data = current_data()
    if data is None:
        return c.no_run(str(settings().data_dir))
    name = name or ""
    # a function of the run and the URL: built once, then served from the shared cache
    return data.memo("store_page", (name,), lambda: store_page(data, name))


def outages_view(data: RunData, name: str, as_of: Any) -> html.Section:
    """Every period the store was down, newest first, long after it came back, each with what
    it caused (entries at other stores that asked it, entries it opened on mail held for it, mail
    to it that expired; while it is still down, the content at risk)."""
    effects = history.outage_effects(data, name)
    body: Any = (
        html.Ul(
            [
                html.Li(
                    [
                        html.Span(f.outage_text(e.down_at, e.up_at, as_of), className="pf-outage-when"),
                        ": ",
                        html.Span(e.caused, className="pf-outage-caused"),
                    ],
                    **c.html_attrs({"data-down-at": f.ts_text(e.down_at)}),
                )
                for e in effects
            ],
            id="pf-store-outages",
            className="pf-outages",
        )
        if effects
        else html.P(
            "Unknown: this run was published by an earlier pfscope, without the periods stores were down."
            if "store_periods" in data.missing()
            else "Never down in the log, up to the as-of.",
            id="pf-store-outages",
        )
    )
    return c.section(
        "Down periods",
        body,
        id="pf-store-outages-section",
        term="down-period",
        help="From the log: every period this store was down, newest first (UTC), and what followed from it: "
        "the entries at other stores whose requests went to it while it was down, the entries it opened once "
        "back on mail held for it, the mail sent to it while it was down that expired (Exchange drops queued "
        "replication mail after 48 h), and while it is still down, what only it holds.",
    )


def risk_view(name: str, replicas: pd.DataFrame, down: bool) -> html.P | None:
    """What only this store holds, what is so, beside what it believes only it holds (of every
    replica while it is down, else of its delete-pending replicas: the only ones at risk)."""
    live = (
        replicas[replicas["health"] != "deleted"]
        if down
        else replicas[replicas["health"] == "delete_pending"]
    )
    counts = {
        col: pd.to_numeric(live[col], errors="coerce").fillna(0).astype("int64")
        for col in ("at_risk_count", "unique_count", "really_unique_count")
    }
    at_risk = int(counts["at_risk_count"].sum())
    if not down and not at_risk:
        return None
    believed = counts["unique_count"]
    belief = f.believed_unique_text(
        name,
        int(believed.sum()),
        int(counts["really_unique_count"].sum()),
        f", in {f.plural(int((believed > 0).sum()), 'folder')}",
    )
    why = "while it is down" if down else "until another replica holds it"
    return html.P(
        [
            f"Content at risk: {f.plural(at_risk, 'CN')}",
            f" in {f.plural(int((counts['at_risk_count'] > 0).sum()), 'folder')}, held by {name} alone: at risk "
            f"{why}"
            if at_risk
            else f" ({name} holds nothing alone)",
            ". ",
            f"{belief}." if belief else "",
            " ",
            c.term_link("content-at-risk"),
        ],
        id="pf-store-risk",
    )


def forecast_view(data: RunData, name: str, forecast: pd.DataFrame, as_of: Any) -> html.P:
    """When the store's last replica that lacks CNs will be in sync, at the latest, and how many
    will not catch up and why: the forecast (what is so, played forward; what it assumes is a
    click away)."""
    if "forecast" in data.missing():
        said = "Forecast: unknown, this run was published by an earlier pfscope, without the forecast."
    else:
        said = rc.recovery_text(rc.recovery(forecast, as_of), of=f" of {name}", why=True)
    return html.P([said, " ", c.term_link("forecast", "What the forecast assumes")], id="pf-store-forecast")


def store_page(data: RunData, name: str) -> html.Main:
    stores = data.stores()
    row = stores[stores["store"] == name]
    if row.empty:
        return c.store_not_found(name, stores["store"], c.store_href)
    store = row.iloc[0].to_dict()
    replicas = _worst_first(data.replicas(store=name))
    counts = replicas.groupby("health").size().to_dict() if not replicas.empty else {}
    down = str(store.get("status")) == "down"
    as_of = data.summary().get("as_of")
    forecast = data.forecast(store=name)
    replicas = rc.forecast_columns(replicas, forecast, long=True).assign(
        store_status=store.get("status"),
        path=[f.folder_label(a, b) for a, b in zip(replicas["fid"], replicas["path"], strict=True)],
    )
    return html.Main(
        className="pf-page",
        children=[
            html.H1(["Store ", html.Span(name, className="pf-mono")]),
            _facts(store, down, as_of),
            _plan_link(data, name),
            risk_view(name, replicas, down) or "",
            forecast_view(data, name, forecast, as_of),
            outages_view(data, name, as_of),
            _health_section(counts, down),
            _queue_section(data, name),
            _sources_section(data, name),
            _behind_section(data, name),
            _replicas_section(replicas, name),
        ],
    )


def _worst_first(replicas: pd.DataFrame) -> pd.DataFrame:
    """The store's replicas, the worst health first, then by FID."""
    severity = {
        h: i for i, h in enumerate(("delete_pending", "overdue", "backfilling", "deleted", "in_sync"))
    }
    return (
        replicas.assign(_sev=replicas["health"].map(severity))
        .sort_values(["_sev", "fid"])
        .drop(columns="_sev")
    )


def _facts(store: dict[str, Any], down: bool, as_of: Any) -> html.P:
    """Its server, site, version and status (since when it is down), its preferred source."""
    return html.P(
        [
            f"Server {store.get('server')} · site {store.get('site')} · Exchange {store.get('version')} · ",
            c.status_badge(store.get("status")),
            " ",
            html.Span(f.down_text(store.get("down_since"), as_of), id="pf-down-since") if down else "",
            " ",
            c.term_link("down") if down else "",
            f" · preferred backfill source: {store.get('preferred_backfill_source')}"
            if store.get("preferred_backfill_source")
            else "",
        ],
        id="pf-store-facts",
    )


def _plan_link(data: RunData, name: str) -> html.P:
    """Is it safe to take the store down: the plan page, with a maintenance window to change."""
    return html.P(
        [
            dcc.Link(
                "Plan maintenance of this store",
                href=plan_href([f"down {name} until {MAINTENANCE}"], data.run_id),
                id="pf-store-plan",
            ),
            f": is it safe to take it down ({MAINTENANCE[1:]} from the as-of; change it on the plan page)?",
        ],
        className="pf-muted",
    )


def _health_section(counts: dict[str, int], down: bool) -> html.Section:
    """How many of its replicas are in each health."""
    return c.section(
        "Replicas by health",
        html.Ul(
            [
                html.Li(
                    [
                        c.health_badge(h, down),
                        f" {int(counts.get(h, 0)):,} ",
                        c.term_link(f.HEALTH_TERMS[h]),
                    ]
                )
                for h in f.HEALTH_ORDER
            ],
            className="pf-legend",
            id="pf-store-health",
        ),
        help="This store is down: its replicas' health is as last known; nothing it holds is verified "
        "until it is back."
        if down
        else None,
    )


def _queue_section(data: RunData, name: str) -> html.Section:
    """Its open backfill entries, overdue first, then the longest open."""
    queue = data.backfill_entries(observer=name, state="open")
    if not queue.empty:  # attention first: overdue (retried) entries, then the longest open
        queue = queue.assign(_retried=[entry_overdue(int(n)) for n in queue["requests"].fillna(0)])
        queue = queue.assign(overdue=[f.yes_no(r) for r in queue["_retried"]])
        queue = queue.sort_values(
            ["_retried", "opened_at", "next_due_at"],
            ascending=[False, True, True],
            na_position="last",
            kind="stable",
        )
        queue = f.with_next_request(queue, data.next_requests(observer=name))
    return c.section(
        "Open backfill queue",
        c.table(
            queue,
            [
                ("fid", "FID"),
                ("entry_id", "entry"),
                ("overdue", c.with_term("overdue", "overdue")),
                ("opened_at", "opened"),
                ("next_due_at", c.with_term("next due", "next-due")),
                ("next_request", c.with_term("next request", "next-request")),
                ("locality", "locality"),
                ("requests", "requests"),
                ("cnset_remaining_count", "CNs remaining"),
                ("cnset_remaining", "remaining"),
            ],
            {"fid": c.link_fid, "cnset_remaining": c.as_cnset},
            id="pf-queue",
            limit=ROWS,
        ),
        dcc.Link("All its open entries, sortable and filterable", href=f"/backfill?observer={quote(name)}"),
        help="Overdue first, then the longest open.",
    )


def _sources_section(data: RunData, name: str) -> html.Section:
    """Where its backfill requests go: to which stores, of which kind, how many CNs."""
    by_source = f.requests_by_source(data.backfill_requests(observer=name))
    return c.section(
        "Where its backfill requests go",
        dcc.Graph(
            id="pf-sources-fig",
            figure=f.fig_requests_by_source(by_source),
            config={"displaylogo": False},
            className="pf-figure",
        ),
        c.table(
            by_source,
            [("source", "source"), ("kind", "kind"), ("requests", "requests"), ("cns", "CNs asked")],
            {"source": c.link_store},
            id="pf-sources",
        ),
    )


def _behind_section(data: RunData, name: str) -> html.Section:
    """The partners its state table says lack CNs it owns (its belief)."""
    behind = data.memo("partners_behind", (name,), lambda: f.partners_behind(data.state_table(observer=name)))
    return c.section(
        "Partners it believes are behind",
        c.table(
            behind,
            [
                ("subject", "partner"),
                ("folders_behind", "folders behind"),
                ("cns_behind", "CNs behind (believed)"),
                ("folders", "shared folders"),
                ("real_lag_count", "CNs not yet heard of (lag)"),
                ("derived_folders", "≥ lower bound (derived from Exchange logs), folders"),
            ],
            {"subject": c.link_store},
            id="pf-behind",
        ),
        id="pf-behind-section",
        term="believed",
        help="Believed behind: CNs this store owns that its state table says the partner lacks. A believed "
        "set derived from Exchange's logs is a lower bound: the partner may be less behind.",
    )


def _replicas_section(replicas: pd.DataFrame, name: str) -> html.Section:
    """Its replicas, worst first: what is so beside its belief, and each one's forecast."""
    return c.section(
        "Replicas",
        c.table(
            replicas,
            [
                ("fid", "FID"),
                ("path", "path"),
                ("health", c.with_term("health, and what it lacks", "lacks")),
                ("open_entries", "open entries"),
                ("lacks_count", c.with_term("lacks (CNs)", "lacks")),
                ("missing_count", c.with_term("known missing", "missing")),
                ("not_told_count", c.with_term("not told yet", "lacks")),
                ("at_risk_count", c.with_term("content at risk", "content-at-risk")),
                ("really_unique_count", c.with_term("really unique (only here)", "really-unique")),
                (
                    "unique_count",
                    c.with_term(f"believed unique ({name}'s belief)", "believed-unique"),
                ),
                (
                    "forecast",
                    c.with_term("forecast: in sync by, at the latest, or why not", "forecast"),
                ),
                ("next_status_at", "next status"),
            ],
            {
                "fid": c.link_fid,
                "health": c.as_health_lacks,
                # each forecast links to its explanation (its requests, sources, transits)
                "forecast": lambda v, r: dcc.Link(v, href=c.forecast_href(r["fid"], name)) if v else "",
            },
            id="pf-store-replicas",
            limit=ROWS,
        ),
        help="Worst first; every open entry of the organisation is in Backfill. Lacks, really unique and "
        "content at risk are what is so; known missing and believed unique are this store's belief. The "
        "forecast is what is so played forward from the as-of: when the replica will hold what it lacks, "
        "at the latest if a reply is lost, or why not within 14 days.",
    )
