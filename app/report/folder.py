"""The report of one folder: its verdict, replicas, the "who knows what" matrix (at a chosen time),
backfill entries, requests and their candidates, and status requests."""

from __future__ import annotations

from typing import Any

import pandas as pd

from pfscope.app import figures as f
from pfscope.app.data import RunData, matrix_frame
from pfscope.app.figures.forecast import ASSUMES
from pfscope.app.report.cells import Limits, cn_text, left_out
from pfscope.app.report.cells import bool_text as _bool
from pfscope.app.report.cells import int_text as _int
from pfscope.app.report.cells import missing as _missing
from pfscope.app.report.cells import rows as _rows
from pfscope.app.report.cells import section as _section
from pfscope.app.report.cells import time_text as _time
from pfscope.app.report.document import Document
from pfscope.app.report.frame import footer, header, titled
from pfscope.app.report.html import Html, table, tag
from pfscope.app.report.matrix import matrix_grid
from pfscope.app.report.reality import replicas_section
from pfscope.app.report.view import ReportError


def folder_report(data: RunData, fid: str, at: pd.Timestamp | None, lim: Limits) -> str:
    folder = data.folder(fid)
    if folder is None:
        raise ReportError(f"no folder with FID {fid!r} in run {data.run_id}")
    path = str(folder.get("path") or "")
    crumbs = " › ".join(p for _, p in data.breadcrumb(fid) if p) or path
    doc = Document(title=f"pfscope · folder {fid} {path} · run {data.run_id}")
    extra: list[tuple[str, Any]] = [
        ("FID", fid),
        ("path", crumbs or "(hierarchy)"),
        ("replica list", ", ".join(folder["replicas"]) or "none"),
    ]
    if at is not None:
        extra.append(("matrix at", _time(at)))
    replicas = data.replicas(fid=fid)
    entries = data.backfill_entries(fid=fid)
    requests = data.backfill_requests(fid=fid)

    doc.body.append(_verdict_section(data, fid, replicas, entries))
    doc.body.append(replicas_section(replicas, lim))
    doc.body.append(_matrix_section(doc, data, fid, path, at, lim))
    doc.body.append(_entries_section(doc, fid, path, entries, requests, at, lim))
    doc.body.append(_candidates_section(data, fid, requests, lim))
    doc.body.append(_responders_section(data, fid, lim))
    toc = [
        ("verdict", "Verdict"),
        ("replicas", "Replicas"),
        ("matrix", "Who knows what"),
        ("entries", "Backfill entries"),
        ("candidates", "Requests and candidates"),
        ("responders", "Status requests"),
    ]
    title = f"Folder {fid} {path}".rstrip()
    return doc.render(header(data, title, extra), toc, footer(data))


def _verdict_section(data: RunData, fid: str, replicas: pd.DataFrame, entries: pd.DataFrame) -> Html:
    """The verdict first, as on the dashboard's folder page and from the same function
    (:func:`app.figures.folder_verdicts`): one line per unhealthy replica, most urgent first, as of
    the run (also when the matrix is shown at an earlier time). The tier is written out, not only
    coloured, so a printed or colour-blind reading keeps it."""
    as_of = data.summary().get("as_of")
    verdicts = f.folder_verdicts(
        replicas, entries, data.next_requests(fid=fid), data.stores(), as_of, data.forecast(fid=fid)
    )
    if not verdicts:
        body = tag("p", "Every replica is in sync, as of the run.", class_="verdict-ok")
    else:
        body = tag(
            "ul",
            *[
                tag(
                    "li",
                    tag("span", v.tier, class_="tier"),
                    " ",
                    tag("span", v.text, class_="verdict-text"),
                    class_=f"tier-{v.tier}",
                    data_store=v.store,
                )
                for v in verdicts
            ],
            class_="verdict",
        )
    return _section(
        "verdict",
        f"Verdict, as of the run ({_time(as_of)})",
        tag(
            "p",
            "Each replica that is not in sync, lacks CNs, or whose store is down, in one line: what "
            "it lacks (what it knows of and what it has not been told of), why, what happens next "
            "and when, and last its forecast: when it will hold what it lacks, at the latest if a reply "
            f"is lost, or why it will not catch up ({ASSUMES}). Most urgent first.",
            class_="note",
        ),
        body,
    )


def _bound_matrix(matrix: pd.DataFrame, keep_n: int) -> tuple[pd.DataFrame, int]:
    """At most ``keep_n`` stores on each axis: those with the most lag (as observer or subject) first."""
    names = sorted(set(matrix["observer"]) | set(matrix["subject"]))
    if len(names) <= keep_n:
        return matrix, len(names)
    lag = matrix["lag_count"].fillna(0).astype("int64")
    total = lag.groupby(matrix["observer"]).sum().add(lag.groupby(matrix["subject"]).sum(), fill_value=0)
    keep = set(sorted(names, key=lambda n: (-float(total.get(n, 0)), n))[:keep_n])
    return matrix[matrix["observer"].isin(keep) & matrix["subject"].isin(keep)].reset_index(drop=True), len(
        names
    )


def _matrix_section(
    doc: Document, data: RunData, fid: str, path: str, at: pd.Timestamp | None, lim: Limits
) -> Html:
    when = f"at {_time(at)}" if at is not None else f"as of the run ({_time(data.summary().get('as_of'))})"
    matrix = matrix_frame(data, fid, at)
    if matrix.empty:
        return _section(
            "matrix", f"Who knows what, {when}", tag("p", "No state table row for this folder at that time.")
        )
    matrix, n_stores = _bound_matrix(matrix, lim.matrix_stores)
    grid = matrix_grid(matrix, f"Who knows what: {fid} {path}".rstrip(), lim.cnset_chars)
    m = matrix.sort_values(["observer", "subject"])
    rows = _rows(
        m,
        [
            lambda r: r["observer"],
            lambda r: r["subject"],
            lambda r: f.cell_label(r["state"]),
            lambda r: cn_text(r["cnset"], r["cnset_count"], lim.cnset_chars),
            lambda r: _int(r["cnset_count"]),
            lambda r: f.DERIVED_NOTE if r["derived"] else "",
            lambda r: cn_text(r["lag_cnset"], r["lag_count"], lim.cnset_chars),
            lambda r: _time(r["heard_at"]),
        ],
    )
    legend = "; ".join(f"{f.CELL_LABELS[k][0]}: {v}" for k, v in f.CELL_STATES.items())
    if m["derived"].any():
        legend += "; " + f.DERIVED_HELP
    return _section(
        "matrix",
        f"Who knows what, {when}",
        tag(
            "p",
            "Each column is one observer's replication state table: its own owned set on the diagonal, "
            "and what it believes every other replica holds. " + legend + ".",
            class_="note",
        ),
        grid,
        left_out(len(set(m["observer"]) | set(m["subject"])), n_stores, "stores", "most lag first"),
        table(
            [
                "observer",
                "subject",
                "state",
                "believed (observer's row)",
                "CNs",
                "derived",
                "not told yet",
                "last heard",
            ],
            rows,
            numeric=[4],
            caption="The matrix as a list, one row per cell (its CN sets in full)",
        ),
    )


def _entries_section(
    doc: Document,
    fid: str,
    path: str,
    entries: pd.DataFrame,
    requests: pd.DataFrame,
    at: pd.Timestamp | None,
    lim: Limits,
) -> Html:
    if entries.empty:
        return _section("entries", "Backfill entries", tag("p", "No backfill entry for this folder."))
    e = entries.sort_values(["opened_at", "entry_id"], ascending=[False, True], kind="stable")
    shown = e.head(lim.folder_entries)
    marks = f.entry_timeline_marks(shown, requests[requests["entry_id"].isin(shown["entry_id"])])
    fig, timeline_left_off = f.fig_entry_timeline(marks)
    fig = titled(fig, f"Backfill entries: {fid} {path}".rstrip())
    if at is not None:
        fig.add_vline(x=at, line={"color": "#000000", "dash": "dash", "width": 1})
    rows = _rows(
        shown,
        [
            lambda r: r["entry_id"],
            lambda r: r["observer"],
            lambda r: r["state"],
            lambda r: r["locality"],
            lambda r: _bool(r["new_replica"]),
            lambda r: _time(r["opened_at"]),
            lambda r: r["opened_by"],
            lambda r: cn_text(r["cnset_opened"], r["cnset_opened_count"], lim.cnset_chars),
            lambda r: cn_text(r["cnset_remaining"], r["cnset_remaining_count"], lim.cnset_chars),
            lambda r: _int(r["requests"]),
            lambda r: _time(r["last_request_at"]),
            lambda r: _time(r["next_due_at"]),
            lambda r: _time(r["closed_at"]),
        ],
    )
    return _section(
        "entries",
        "Backfill entries",
        doc.figure(fig, f"Backfill timeline of folder {fid}"),
        tag("p", f"{timeline_left_off:,} older entries are not drawn (too many marks).", class_="left-out")
        if timeline_left_off
        else "",
        table(
            [
                "entry",
                "store",
                "state",
                "locality",
                "new replica",
                "opened",
                "opened by",
                "opened for",
                "remaining",
                "requests",
                "last request",
                "next due",
                "closed",
            ],
            rows,
            numeric=[9],
        ),
        left_out(len(shown), len(e), "entries", "newest first"),
    )


_CANDIDATE_HEADERS = [
    "rank",
    "candidate",
    "group",
    "down",
    "unavailable",
    "preferred",
    "cost",
    "version",
    "CNs held",
    "holds all",
    "chosen",
    "asked for",
    "asked (log)",
    "placed here by",
]


def _candidate_rows(cand: pd.DataFrame, lim: Limits) -> list[list[Any]]:
    return _rows(
        cand,
        [
            lambda r: _int(r["rank"]),
            lambda r: tag("span", r["candidate"], class_="chosen" if r["chosen"] else None),
            lambda r: _int(r["group"]),
            lambda r: _bool(r["down"]),
            lambda r: _bool(r["unavailable"]),
            lambda r: _bool(r["preferred"]),
            lambda r: "no affinity" if _missing(r["cost"]) else _int(r["cost"]),
            lambda r: r["version"],
            lambda r: _int(r["holds_count"]),
            lambda r: _bool(r["holds_all"]),
            lambda r: _bool(r["chosen"]),
            lambda r: cn_text(r["assigned_cnset"], None, lim.cnset_chars),
            lambda r: _bool(r["asked"]),
            lambda r: r["decided_by"],
        ],
    )


def _candidates_section(data: RunData, fid: str, requests: pd.DataFrame, lim: Limits) -> Html:
    r = requests[requests["entry_id"].notna() & (requests["entry_id"] != "")]
    if r.empty:
        return _section(
            "candidates",
            "Backfill requests and their candidates",
            tag("p", "No backfill request for this folder."),
        )
    attempts = (
        r.groupby(["entry_id", "attempt"], as_index=False)
        .agg(
            observer=("observer", "first"),
            at=("at", "min"),
            kind=("kind", "first"),
            algorithm=("algorithm", "first"),
        )
        .sort_values(["at", "entry_id", "attempt"], ascending=[False, True, True], kind="stable")
    )
    shown = attempts.head(lim.attempts)
    cand = data.table("backfill_candidates", filters={"fid": fid, "entry_id": shown["entry_id"].tolist()})
    parts: list[Any] = [
        tag(
            "p",
            "Each request attempt, newest first: every candidate in the model's sort order, "
            "the sources chosen and the CNs each was asked for.",
            class_="note",
        )
    ]
    for a in shown.to_dict("records"):
        sent = r[(r["entry_id"] == a["entry_id"]) & (r["attempt"] == a["attempt"])].sort_values("source")
        asked = (
            ", ".join(
                f"{x['source']} ({_int(x['cnset_count'])} CNs{'' if x['model_chose'] else ', not the model’s choice'})"
                for x in sent.to_dict("records")
                if isinstance(x["source"], str) and x["source"]
            )
            or "no source"
        )
        parts.append(
            tag(
                "h3",
                f"Entry {a['entry_id']}, attempt {int(a['attempt'])}: {a['observer']} at "
                f"{_time(a['at'])} ({a['kind']}, algorithm {a['algorithm']})",
            )
        )
        parts.append(tag("p", f"Asked: {asked}."))
        c = cand[(cand["entry_id"] == a["entry_id"]) & (cand["attempt"] == a["attempt"])]
        if c.empty:
            parts.append(
                tag("p", "No candidate held any remaining CN: the request had no sources.", class_="muted")
            )
        else:
            parts.append(
                table(_CANDIDATE_HEADERS, _candidate_rows(f.explain_candidates(c), lim), numeric=[0, 2, 6, 8])
            )
    parts.append(left_out(len(shown), len(attempts), "request attempts", "newest first"))
    return _section("candidates", "Backfill requests and their candidates", *parts)


def _responders_section(data: RunData, fid: str, lim: Limits) -> Html:
    rows = f.responder_rows(data.responders(fid=fid))
    if rows.empty:
        return _section(
            "responders", "Status requests and responders", tag("p", "No status request for this folder.")
        )
    msgs = rows.groupby("msg", as_index=False).agg(
        sent_at=("sent_at", "first"), requester=("requester", "first")
    )
    msgs = msgs.sort_values(["sent_at", "msg"], ascending=[False, True], kind="stable")
    shown = msgs.head(lim.status_requests)
    parts: list[Any] = [
        tag(
            "p",
            "Newest first. The responder list the model expects (group 1-6 or the oldest "
            "copy) against the stores the request named, and whether each should respond.",
            class_="note",
        )
    ]
    for m in shown.to_dict("records"):
        part = rows[rows["msg"] == m["msg"]]
        parts.append(tag("h3", f"{m['msg']} from {m['requester']} at {_time(m['sent_at'])}"))
        parts.append(
            table(
                ["position", "responder", "group", "expected", "named", "should respond", "agreement"],
                _rows(
                    part,
                    [
                        lambda x: _int(x["position"]),
                        lambda x: x["responder"],
                        lambda x: x["group"],
                        lambda x: _bool(x["expected"]),
                        lambda x: _bool(x["observed"]),
                        lambda x: _bool(x["should_respond"]),
                        lambda x: x["agreement"],
                    ],
                ),
                numeric=[0],
            )
        )
    parts.append(left_out(len(shown), len(msgs), "status requests", "newest first"))
    return _section("responders", "Status requests and responders", *parts)
