"""``/trace?fid=<FID>&store=<store>&cns=<CN set>``: why a store lacks CNs.

Every replication message of the folder that carried any of the asked CNs (as changes; or, when
none did, in the sender's set), sent to anyone, in time order: who sent it, which of the CNs it
carried, and for each recipient whether and when it processed it; for the store asked about, in
words: processed at T, in transit (sent less than 48 hours before the as-of: Exchange expires
queued replication mail then) or lost or expired. Read from the published ``messages`` table.
"""

from __future__ import annotations

from typing import Any

import dash
import pandas as pd
from dash import dcc, html

from pfscope.app import components as c
from pfscope.app import figures as f
from pfscope.app.data import RunData
from pfscope.app.figures import trace as tr
from pfscope.app.runtime import current_data, settings
from pfscope.spark_jobs.model.cnset import CNSet, CNSetError

dash.register_page(__name__, path="/trace", name="Trace", title="pfscope · trace missing CNs")

EXAMPLE = "/trace?fid=1-123&store=PFS2&cns=PFS1:114-119"


def layout(
    fid: str | None = None, store: str | None = None, cns: str | None = None, **_query: Any
) -> html.Main:
    data = current_data()
    if data is None:
        return c.no_run(str(settings().data_dir))
    return data.memo(
        "trace_page",
        (fid or "", store or "", cns or ""),
        lambda: trace_page(data, fid or "", store or "", cns or ""),
    )


def _missing(name: str, what: str) -> html.Main:
    return c.not_found(
        f"Missing {name} parameter",
        f"The trace needs {what}, e.g. {EXAMPLE}; the folder page's who-knows-what matrix links "
        "here from every cell that lacks CNs.",
    )


def trace_page(data: RunData, fid: str, store: str, cns: str) -> html.Main:
    if not fid:
        return _missing("fid", "a folder (fid)")
    if not store:
        return _missing("store", "the store that lacks the CNs (store)")
    if not cns:
        return _missing("cns", "the CNs it lacks as a CN set (cns)")
    folder = data.folder(fid)
    if folder is None:
        folders = data.folders()
        choices = [
            (str(r.fid), f"{r.fid} {r.path}", c.folder_href(r.fid)) for r in folders.itertuples(index=False)
        ]
        return c.not_found(
            "Folder not found", f"This run has no folder with FID {fid!r}.", c.suggestions(fid, choices)
        )
    stores = data.stores()["store"].astype(str).tolist()
    if store not in stores:
        return c.not_found(
            "Store not found",
            f"This run has no store named {store!r}.",
            c.suggestions(store, [(s, s, trace_href(fid, s, cns)) for s in stores]),
        )
    try:
        asked = CNSet.parse(cns)
    except CNSetError as e:
        return c.not_found(
            "Bad cns parameter",
            f"cns={cns!r}: {e}; use a CN set such as PFS1:114-119 or PFS1:1-16,18;PFS2:3.",
            [(f"Folder {fid}", c.folder_href(fid))],
        )
    if not asked:
        return c.not_found(
            "Bad cns parameter",
            f"cns={cns!r} names no CN; use a CN set such as PFS1:114-119.",
            [(f"Folder {fid}", c.folder_href(fid))],
        )

    as_of = data.summary().get("as_of")
    result = tr.trace(data.messages(fid), asked, store, as_of)
    basis = {
        "changes": "Messages that carried these CNs as changes",
        "cnset": "Messages whose sender's set held these CNs (none carried them as changes)",
        "": "Messages that carried these CNs",
    }[result.basis]
    return html.Main(
        className="pf-page",
        children=[
            html.H1(
                [
                    html.Span("Trace: "),
                    html.Span(store, className="pf-mono"),
                    " lacks ",
                    c.cnset_text(result.asked),
                    " in folder ",
                    dcc.Link(fid, href=c.folder_href(fid), className="pf-mono"),
                ]
            ),
            html.P(result.summary, id="pf-trace-summary", className="pf-trace-summary"),
            html.P(
                [
                    f"As of {f.fmt_time(as_of)}. A message a store has not processed is in transit when it was sent "
                    f"less than {tr.EXPIRY_TEXT} before the as-of, and lost or expired when it is older: Exchange "
                    f"expires queued replication mail after {tr.EXPIRY_TEXT}. Store ",
                    dcc.Link(store, href=c.store_href(store)),
                    ".",
                ],
                className="pf-help",
            ),
            c.section(basis, messages_table(result, store), id="pf-trace-section"),
        ],
    )


def trace_href(fid: str, store: str, cns: str) -> str:
    return c.trace_href(fid, store, cns)


def _recipients(value: Any, row: dict[str, Any]) -> Any:
    return html.Ul(
        [
            html.Li(
                [html.Span(r.store, className="pf-mono"), ": ", r.status],
                className="pf-recipient" + (" pf-recipient-asked" if r.store == row["_store"] else ""),
                **{"data-store": r.store, "data-status": r.status},
            )
            for r in value
        ],
        className="pf-recipients",
    )


def messages_table(result: tr.Trace, store: str) -> html.Div:
    rows = [
        {
            "msg": m.msg,
            "sender": m.sender,
            "type": m.type,
            "sent_at": m.sent_at,
            "carried": m.carried,
            "recipients": m.recipients,
            "status": m.status,
            "_store": store,
        }
        for m in result.carriers
    ]
    frame = pd.DataFrame(
        rows, columns=["msg", "sender", "type", "sent_at", "carried", "recipients", "status", "_store"]
    )
    return c.table(
        frame,
        [
            ("msg", "message"),
            ("sender", "sender"),
            ("type", "type"),
            ("sent_at", "sent at"),
            ("carried", "asked CNs it carried"),
            ("recipients", "recipients and whether they processed it"),
            ("status", f"for {store}"),
        ],
        {
            "sender": c.link_store,
            "carried": c.as_cnset,
            "recipients": _recipients,
            "msg": lambda v, _r: html.Code(str(v)),
        },
        id="pf-trace",
        limit=1000,
    )
