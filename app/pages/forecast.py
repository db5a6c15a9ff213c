"""``/forecast?fid=<FID>&store=<store>``: one replica's forecast explained, as Elasticsearch's
allocation explain explains a decision: its verdict line; what it lacks at the as-of (what is so)
and when the model's rules played forward say it holds it, with the bound, or what blocks it and
what would unblock it; what the forecast assumes; each request of the play in order with the
transit times it used (``transits``, or the play's fallback for a pair without a row); and the
stores that supply the CNs. Read from ``forecast``, ``forecast_requests`` and ``transits``; the
logic is ``figures.forecast_explain``. Each verdict line's forecast links here."""

from __future__ import annotations

from typing import Any

import dash
import pandas as pd
from dash import dcc, html

from pfscope.app import components as c
from pfscope.app import figures as f
from pfscope.app.data import RunData
from pfscope.app.figures import forecast_explain as fx
from pfscope.app.figures.forecast import ASSUMES, BOUND_ASSUMES, record_text, replica_record
from pfscope.app.runtime import current_data, settings
from pfscope.spark_jobs.model.topology import Topology


def title(fid: str | None = None, store: str | None = None, **_: Any) -> str:
    """The tab names the replica, so several open forecasts are told apart."""
    return f"pfscope · forecast of {store} on {fid}" if fid and store else "pfscope · forecast"


dash.register_page(__name__, path="/forecast", name="Forecast", title=title)

EXAMPLE = "/forecast?fid=1-123&store=PFS3"


def layout(fid: str | None = None, store: str | None = None, **_query: Any) -> html.Main:
    data = current_data()
    if data is None:
        return c.no_run(str(settings().data_dir))
    return data.memo(
        "forecast_page", (fid or "", store or ""), lambda: forecast_page(data, fid or "", store or "")
    )


def _some_forecasts(data: RunData, fid: str | None = None, n: int = 8) -> list[tuple[str, str]]:
    """Links to forecasts to follow (a folder's, or the run's with the latest in-sync times first)."""
    rows = data.forecast(fid=fid) if fid else data.forecast()
    if rows.empty:
        return []
    rows = rows.sort_values(
        ["in_sync_at", "fid", "store"], ascending=[False, True, True], na_position="first"
    )
    return [
        (f"{r['store']} on {r['fid']}", c.forecast_href(str(r["fid"]), str(r["store"])))
        for r in rows.head(n).to_dict("records")
    ]


def _refused(data: RunData, fid: str, store: str) -> html.Main | None:
    """The helpful page for a URL with no forecast to explain; None when there is one."""
    if "forecast" in data.missing():
        return c.not_found(
            "No forecast in this run",
            "This run was published by a pfscope from before the forecast (no forecast table): run "
            "`pfscope compute` again with this version.",
            [(f"Folder {fid}", c.folder_href(fid))] if fid and data.folder(fid) else [],
        )
    if not fid or not store:
        name, what = (
            ("fid", "a folder (fid)") if not fid else ("store", "the store whose replica it is (store)")
        )
        return c.not_found(
            f"Missing {name} parameter",
            f"The forecast's explanation needs {what}, e.g. {EXAMPLE}; each verdict line of a folder page "
            "links here from its forecast.",
            _some_forecasts(data, fid if fid and data.folder(fid) else None),
        )
    if data.folder(fid) is None:
        return c.folder_not_found(fid, data.folders(), lambda f: c.forecast_href(f, store))
    stores = data.stores()["store"].astype(str).tolist()
    if store not in stores:
        return c.store_not_found(store, stores, lambda s: c.forecast_href(fid, s))
    if data.forecast(fid=fid, store=store).empty:
        return c.not_found(
            "Nothing to forecast",
            fx.no_forecast_text(store, fid, data.replicas(fid=fid)),
            [(f"Folder {fid}", c.folder_href(fid)), *_some_forecasts(data, fid)],
        )
    return None


def _world(
    data: RunData, transits: pd.DataFrame, pairs: list[fx.Pair]
) -> tuple[Topology | None, list[fx.Pair]]:
    """The stores and site costs the play's transit fallback needs, read only when a pair has no
    row of its own (the candidate tables can be large)."""
    if not fx.pairs_without_row(transits, pairs):
        return None, []

    def costs() -> dict[fx.Pair, int | None]:
        rows = pd.concat(
            [
                data.table("backfill_candidates", ["observer", "candidate", "cost"]),
                data.table("next_candidates", ["observer", "candidate", "cost"]),
            ],
            ignore_index=True,
        )
        return fx.site_costs(rows, data.stores())

    known = data.memo("forecast_site_costs", (), costs)
    stores = data.stores()
    return fx.topology_of(stores, known), fx.unknown_costs(stores, known)


def forecast_page(data: RunData, fid: str, store: str) -> html.Main:
    refused = _refused(data, fid, store)
    if refused is not None:
        return refused
    row = data.forecast(fid=fid, store=store).to_dict("records")[0]
    as_of = data.summary().get("as_of")
    all_requests = data.forecast_requests(fid)
    mine = fx.replica_requests(all_requests, store)
    transits = data.transits()
    pairs = fx.pairs_used(mine, store, fx.sources_of(row))
    topo, unknown = _world(data, transits, pairs)
    used = fx.transit_rows(transits, pairs, topo, unknown)
    folder = data.folder(fid) or {}
    verdict = next(
        (
            v
            for v in f.folder_verdicts(
                data.replicas(fid=fid),
                data.backfill_entries(fid=fid),
                data.next_requests(fid=fid),
                data.stores(),
                as_of,
                data.forecast(fid=fid),
            )
            if v.store == store
        ),
        None,
    )
    return html.Main(
        className="pf-page",
        children=[
            html.H1(
                [
                    html.Span("Forecast: "),
                    html.Span(store, className="pf-mono"),
                    " on ",
                    html.Span(fid, className="pf-mono"),
                    " ",
                    html.Span(
                        c.path_text(f.folder_label(fid, folder.get("path"))), className="pf-folder-path"
                    ),
                ]
            ),
            html.P(
                [
                    dcc.Link(f"Folder {fid}", href=c.folder_href(fid)),
                    " · ",
                    dcc.Link(f"Store {store}", href=c.store_href(store)),
                    " · ",
                    c.term_link("forecast", "What the forecast is"),
                    f" · run as of {f.fmt_time(as_of)}",
                ],
                className="pf-muted",
            ),
            _summary_section(row, store, fid, as_of, verdict),
            _assumes_section(),
            _trust_section(data, store, fid),
            _requests_section(fx.request_rows(all_requests, store, used), row),
            c.section(
                "Transit times used",
                c.table(
                    used,
                    [
                        ("sender", "from"),
                        ("recipient", "to"),
                        ("median", "median (the forecast)"),
                        ("longest", "longest (the bound)"),
                        ("basis", "from what"),
                    ],
                    {"sender": c.link_store, "recipient": c.link_store},
                    id="pf-forecast-transits",
                ),
                help="Each pair's transit the play used: a message from one store to another takes the "
                "pair's median transit in the forecast, its longest in the bound, as the published "
                "transits table has them; a pair with no message of its own takes the play's fallback "
                "(the lower middle of the pairs at the same site cost, else of all pairs, else an hour).",
            ),
            c.section(
                "Sources",
                c.table(
                    fx.source_rows(row, store, mine, used),
                    [("source", "store"), ("how", "brings the CNs"), ("transit", f"transit to {store}")],
                    {"source": c.link_store},
                    id="pf-forecast-sources",
                ),
                help=f"The stores whose messages bring {store} the CNs it lacks, in the play.",
            ),
            _others_section(data, fid, store),
        ],
    )


def _summary_section(
    row: dict[str, Any], store: str, fid: str, as_of: Any, verdict: f.Verdict | None
) -> html.Section:
    """The verdict line as the folder page says it, then the forecast in sentences; a blocked
    replica's blocks, each with what would unblock it."""
    children: list[Any] = [
        html.P(
            [html.Strong("Verdict, as the folder page says it: "), verdict.text] if verdict else [],
            id="pf-forecast-verdict",
        ),
        html.Div(
            [html.P(line) for line in fx.summary_lines(row, store, fid, as_of)], id="pf-forecast-summary"
        ),
    ]
    parts = fx.blocks(row)
    if parts:
        frame = pd.DataFrame(parts, columns=["blocks", "unblocks"])
        frame["unblocks"] = [u or "(the play does not say)" for u in frame["unblocks"]]
        children.append(
            c.table(
                frame,
                [("blocks", "what blocks it"), ("unblocks", "what would unblock it")],
                id="pf-forecast-blocks",
            )
        )
    return c.section(
        "When it will be in sync",
        *children,
        id="pf-forecast-when",
        help="By the model's own rules played forward from every store's state at the as-of.",
        term="forecast",
    )


def _trust_section(data: RunData, store: str, fid: str) -> html.Section:
    """How far to trust it: the record of the last 7 days' forecasts, and this replica's own."""
    record = data.forecast_record()
    mine = replica_record(record, store, fid)
    heads = ("made", "said in sync by", "at the latest", "in sync", "how it came true")
    table = (
        html.Table(
            [
                html.Thead(html.Tr([html.Th(h) for h in heads])),
                html.Tbody(
                    [
                        html.Tr([html.Td(r[k]) for k in ("made", "said", "due", "actual", "outcome")])
                        for r in mine
                    ]
                ),
            ],
            className="pf-table",
            id="pf-forecast-record-replica",
        )
        if mine
        else html.P("No earlier forecast of this replica is on record.", className="pf-muted")
    )
    return c.section(
        "How far to trust it",
        html.P(record_text(record), id="pf-forecast-record"),
        table,
        id="pf-forecast-trust",
        help="Each run judges the forecasts of the last 7 days' runs against what then happened "
        "(forecast_record): in sync by the bound, or still lacking when it said so.",
    )


def _assumes_section() -> html.Section:
    return c.section(
        "What the forecast assumes",
        html.Ul(
            [
                html.Li(f"In sync by: {ASSUMES}."),
                html.Li(f"At the latest: the same, with {BOUND_ASSUMES}."),
                html.Li(
                    "A replica waiting for stores that are down: the same plays with those stores back "
                    "at the as-of say how long after the last of them is back it is in sync (in the "
                    "bound, the mail queued for them is lost: it may expire before they are back)."
                ),
                html.Li(
                    "It looks 14 days ahead: a replica not in sync by then will not catch up, by the forecast."
                ),
            ],
            id="pf-forecast-assumes",
        ),
        help="A new change, a replica-list change or a store going down or coming back after the as-of "
        "makes the forecast wrong; the next run plays it again.",
    )


def _requests_section(requests: pd.DataFrame, row: dict[str, Any]) -> html.Section:
    """The play's requests for the replica, in order, with the transits each used."""
    if requests.empty:
        body: Any = html.P(
            "No request: the play brings the CNs by mail (changes, status messages or replies on their way "
            "or due), or nothing brings them (see what blocks it)."
            if int(row.get("requests") or 0) == 0
            else "The play's requests are not in this run.",
            id="pf-forecast-requests",
            className="pf-muted",
        )
    else:
        body = c.table(
            requests,
            [
                ("entry_id", "entry"),
                ("attempt", "attempt"),
                ("due_at", "due"),
                ("source", "source"),
                ("cnset", "CNs asked"),
                ("there", "transit to the source (median, longest)"),
                ("back", "transit back (median, longest)"),
                ("answered_at", "answered at"),
                ("outcome", "outcome"),
            ],
            {
                "entry_id": c.as_breakable,
                "due_at": c.as_time,
                "source": c.link_store,
                "cnset": c.as_cnset,
                "answered_at": c.as_time,
            },
            id="pf-forecast-requests",
        )
    return c.section(
        "Requests of the forecast",
        body,
        help="Each backfill request the play sends for this replica, in order: its entry and attempt, when it "
        "is due, the source the rules choose and the CNs asked, the transits it takes there and back, and when "
        "the replica processes the answer. Answered at is the forecast's (median transits); the bound loses "
        "each entry's first reply.",
        term="forecast",
    )


def _others_section(data: RunData, fid: str, store: str) -> html.Section:
    others = [
        (label, href)
        for label, href in _some_forecasts(data, fid, n=50)
        if not label.startswith(f"{store} on ")
    ]
    return c.section(
        "The folder's other forecasts",
        html.Ul([html.Li(dcc.Link(label, href=href)) for label, href in others], id="pf-forecast-others")
        if others
        else html.P("No other replica of this folder lacks CNs at the as-of.", className="pf-muted"),
    )
