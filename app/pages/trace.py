"""``/trace?fid=<FID>&store=<store>&cns=<CN set>``: why a store lacks CNs.

Every replication message of the folder that carried any of the asked CNs (as changes; or, when
none did, in the sender's set), sent to anyone, in time order: who sent it, which of the CNs it
carried, and for each recipient what became of it by the model's rule (processed at T, in
transit, queued until it expires, expired; ``figures.delivery``). Then the requests: each
backfill request of the store's entries that cover the CNs (did its source process it, which
responses answered it) and each status request among the messages (its responders). Read from
the published ``messages``, ``transits``, ``backfill_entries``, ``backfill_requests`` and
``responders``.
"""

from __future__ import annotations

from typing import Any

import dash
import pandas as pd
from dash import dcc, html

from pfscope.app import components as c
from pfscope.app import figures as f
from pfscope.app.data import RunData
from pfscope.app.figures import delivery as dl
from pfscope.app.figures import requests as rq
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
    asked = _asked(data, fid, store, cns)
    if isinstance(asked, html.Main):
        return asked
    as_of = data.summary().get("as_of")
    usual = dl.usual_transits(None if "transits" in data.missing() else data.transits())
    messages = data.messages(fid)
    result = tr.trace(messages, asked, store, as_of, usual)
    mail = rq.index(messages, as_of, usual)
    entries = rq.covering(
        data.backfill_entries(fid=fid, observer=store),
        data.backfill_requests(fid=fid, observer=store),
        mail,
        asked,
        store,
    )
    basis = {
        "changes": "Messages that carried these CNs as changes",
        "cnset": "Messages whose sender's set held these CNs (none carried them as changes)",
        "": "Messages that carried these CNs",
    }[result.basis]
    status_requests = [m for m in result.carriers if m.type == "status_request"]
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
                rq.requests_summary(store, result.asked, entries),
                id="pf-trace-requests-summary",
                className="pf-trace-summary",
            ),
            _transit_help(store, as_of),
            c.section(basis, messages_table(result, store), id="pf-trace-section"),
            *([status_section(data, fid, mail, status_requests)] if status_requests else []),
            requests_section(store, entries),
        ],
    )


def _asked(data: RunData, fid: str, store: str, cns: str) -> CNSet | html.Main:
    """The CNs the URL asks about, or the page that says what is wrong with it (a parameter
    missing, a folder or store the run has not, a CN set that is none)."""
    if not fid:
        return _missing("fid", "a folder (fid)")
    if not store:
        return _missing("store", "the store that lacks the CNs (store)")
    if not cns:
        return _missing("cns", "the CNs it lacks as a CN set (cns)")
    if data.folder(fid) is None:
        return c.folder_not_found(fid, data.folders(), c.folder_href)
    stores = data.stores()["store"].astype(str).tolist()
    if store not in stores:
        return c.store_not_found(store, stores, lambda s: trace_href(fid, s, cns))
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
    return asked


def _transit_help(store: str, as_of: Any) -> html.P:
    """What in transit, queued and expired mean here, and the store's page."""
    return html.P(
        [
            f"As of {f.fmt_time(as_of)}. A message a store has not processed is ",
            c.with_term("in transit", "in-transit"),
            " while younger than the pair's usual transit (the longest the recipient took to process "
            "mail from the sender, or an hour when it never did), then ",
            c.with_term("queued", "queued"),
            f" until {dl.EXPIRY_TEXT} after it was sent, when Exchange expires it; then ",
            c.with_term("expired", "expired"),
            ". Store ",
            dcc.Link(store, href=c.store_href(store)),
            ".",
        ],
        className="pf-help",
    )


def trace_href(fid: str, store: str, cns: str) -> str:
    return c.trace_href(fid, store, cns)


def _recipients(value: Any, row: dict[str, Any]) -> Any:
    return html.Ul(
        [
            html.Li(
                [html.Span(r.store, className="pf-mono"), ": ", r.status],
                className="pf-recipient" + (" pf-recipient-asked" if r.store == row["_store"] else ""),
                title=r.usual or None,
                **c.html_attrs({"data-store": r.store, "data-status": r.status, "data-state": r.state}),
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
            "status": m,
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
            "status": lambda m, _r: fate(m.status, m.state, m.usual),
        },
        id="pf-trace",
        limit=1000,
    )


def fate(text: str, state: str, usual: str = "") -> html.Span:
    """What became of a message for one store, with the pair's usual transit when it is late."""
    return html.Span(
        [text, *([html.Br(), html.Small(usual, className="pf-muted pf-usual")] if usual else [])],
        className="pf-fate",
        **c.html_attrs({"data-state": state}),
    )


def _answers(found: tuple[rq.Answer, ...], text: str) -> Any:
    """The responses that answered a request (each with what became of it for the requester)."""
    if not found:
        return html.Span(text, className="pf-answer-none")
    return html.Div(
        [
            html.Span(text),
            html.Ul(
                [
                    html.Li(
                        [
                            html.Code(a.msg),
                            f" sent {f.fmt_time(a.sent_at)}, carried ",
                            c.cnset_text(a.carried),
                            f": {a.delivery.text}",
                        ],
                        className="pf-answer",
                        **c.html_attrs({"data-msg": a.msg, "data-state": a.delivery.state}),
                    )
                    for a in found
                ]
            ),
        ]
    )


def requests_section(store: str, entries: tuple[rq.EntryTrace, ...]) -> html.Section:
    """Each backfill entry of ``store`` that covers the CNs, with its requests traced."""
    blocks: list[Any] = []
    for e in entries:
        closed = f", {e.state} {f.fmt_time(e.closed_at)}" if e.closed_at is not None else f", {e.state}"
        due = f"; next request due {f.fmt_time(e.next_due_at)}" if e.state == "open" and e.next_due_at else ""
        rows = [
            {
                "attempt": r.attempt,
                "at": r.at,
                "kind": r.kind,
                "source": r.source,
                "cnset": r.cnset,
                "msg": r.msg or "",
                "reached": r,
                "answers": r,
            }
            for r in e.requests
        ]
        frame = pd.DataFrame(
            rows, columns=["attempt", "at", "kind", "source", "cnset", "msg", "reached", "answers"]
        )
        blocks.append(
            html.Div(
                [
                    html.H3(
                        [
                            "Entry ",
                            html.Span(e.entry_id, className="pf-mono"),
                            f": opened {f.fmt_time(e.opened_at)} for ",
                            c.cnset_text(e.cnset_opened),
                            closed + due,
                        ]
                    ),
                    c.table(
                        frame,
                        [
                            ("attempt", "attempt"),
                            ("at", "sent"),
                            ("kind", c.with_term("kind", "request-kind")),
                            ("source", "source"),
                            ("cnset", "asked for"),
                            ("msg", "message"),
                            ("reached", "did the source process it?"),
                            ("answers", "answered by"),
                        ],
                        {
                            "source": c.link_store,
                            "cnset": c.as_cnset,
                            "msg": lambda v, _r: html.Code(str(v)) if v else "",
                            "reached": lambda r, _r: fate(r.reached.text, r.reached.state, r.reached.usual),
                            "answers": lambda r, _r: _answers(r.answers, r.answer_text),
                        },
                    ),
                ],
                className="pf-trace-entry",
                **c.html_attrs({"data-entry": e.entry_id}),
            )
        )
    return c.section(
        "Backfill requests for these CNs",
        *(blocks or [html.P(f"{store} has no backfill entry for these CNs.", className="pf-muted")]),
        id="pf-trace-requests",
        help=f"{store}'s backfill entries that cover any of the CNs, and each of their requests: whether "
        "its source processed it (or what became of it by the rule) and the backfill responses that "
        "answered it: those the source sent the requester for this folder from when it processed the "
        "request until it processed the requester's next backfill request for the folder. An expected "
        "request is the model's: no such message is in the log.",
        term="request-kind",
    )


def status_section(data: RunData, fid: str, mail: rq.Mail, carriers: list[tr.Carrier]) -> html.Section:
    """The status requests among the traced messages, each responder traced."""
    responders = data.responders(fid=fid)
    blocks = []
    for m in carriers:
        rows = [
            {
                "responder": t.responder,
                "named_by": t.named_by,
                "reached": t,
                "should_respond": t.should_respond,
                "answers": t,
            }
            for t in rq.status_trace(responders, mail, m.msg)
        ]
        frame = pd.DataFrame(rows, columns=["responder", "named_by", "reached", "should_respond", "answers"])
        blocks.append(
            html.Div(
                [
                    html.H3(
                        [
                            "Status request ",
                            html.Code(m.msg),
                            f" from {m.sender}, sent {f.fmt_time(m.sent_at)}",
                        ]
                    ),
                    c.table(
                        frame,
                        [
                            ("responder", "responder"),
                            ("named_by", c.with_term("named by", "model-names")),
                            ("reached", "did it process it?"),
                            ("should_respond", c.with_term("should respond", "should-respond")),
                            ("answers", "answered by"),
                        ],
                        {
                            "responder": c.link_store,
                            "reached": lambda t, _r: fate(t.reached.text, t.reached.state, t.reached.usual),
                            "should_respond": c.as_yes_no,
                            "answers": lambda t, _r: _answers(t.answers, t.answer_text),
                        },
                    ),
                ],
                className="pf-trace-status",
                **c.html_attrs({"data-msg": m.msg}),
            )
        )
    return c.section(
        "Status requests among them",
        *blocks,
        id="pf-trace-status",
        help="Each responder the model or the log names: whether it processed the request, whether it "
        "should answer (it holds newer content) and the status messages it sent the requester alone for "
        "this folder from when it processed the request until it processed the requester's next one.",
        term="should-respond",
    )
