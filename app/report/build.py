"""The two reports, organisation and folder, from a published run.

Everything shown is read from the run's tables through :class:`app.data.RunData` and drawn with
the dashboard's own figure functions (:mod:`app.figures`), so a report and the dashboard page it
mirrors show the same figures. A report states the run it was made from (run id and as-of) and
never the time it was made: the same run and view give the same bytes, whether made by
``pfscope report`` or by the dashboard's "Download report".

Sizes are bounded: each long list keeps its first ``Limits`` rows, in a stated order, and says
how many it left out.

The two reports are built alike, each section a short function; the cells, the section helpers
and ``Limits`` are in :mod:`.cells`, the sections of what is so beside each store's belief and of
what happened in :mod:`.reality`, the HTML and the document around it in ``html`` and ``document``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from pfscope.app import figures as f
from pfscope.app import history
from pfscope.app.data import RunData, matrix_frame
from pfscope.app.figures import store_trend as st
from pfscope.app.figures import timeline as tl
from pfscope.app.figures.forecast import ASSUMES
from pfscope.app.figures.text import ts_text
from pfscope.app.report.attention import worst_section
from pfscope.app.report.cells import (
    Limits,
    cn_text,
    folder_path,
    left_out,
)
from pfscope.app.report.cells import bool_text as _bool
from pfscope.app.report.cells import facts as _facts
from pfscope.app.report.cells import int_text as _int
from pfscope.app.report.cells import missing as _missing
from pfscope.app.report.cells import rows as _rows
from pfscope.app.report.cells import section as _section
from pfscope.app.report.cells import time_text as _time
from pfscope.app.report.document import Document
from pfscope.app.report.forecast import forecast_section
from pfscope.app.report.html import Html, join, plotly_text, table, tag
from pfscope.app.report.matrix import matrix_grid
from pfscope.app.report.reality import at_risk_section, outages_section, replicas_section
from pfscope.spark_jobs.model.errors import OperatorError
from pfscope.spark_jobs.model.timeutil import TimeError, parse_ts

HEALTH = f.HEALTH_ORDER


class ReportError(OperatorError, ValueError):
    """A view the run cannot give (unknown FID, bad or late ``at``); one line for the operator."""


@dataclass(frozen=True)
class View:
    """What a report shows: the organisation (no ``fid``) or one folder, optionally at ``at``."""

    fid: str | None = None
    at: pd.Timestamp | None = None


# -- small formatting helpers ---------------------------------------------------------------


def _titled(fig: go.Figure, title: str) -> go.Figure:
    """A plotly title from data, above whatever the figure keeps over its plot (a top axis, the
    legend). Escaped, since plotly.js reads tags and entities in titles."""
    extra = 90
    margin_t = (fig.layout.margin.t or 10) + extra
    fig.update_layout(
        title={
            "text": plotly_text(title),
            "x": 0,
            "xanchor": "left",
            "xref": "container",
            "y": 1,
            "yanchor": "top",
            "yref": "container",
            "pad": {"t": 10, "l": 8},
        },
        margin={"t": margin_t},
    )
    if fig.layout.height:
        fig.update_layout(height=fig.layout.height + extra)
    return fig


# -- the view -------------------------------------------------------------------------------


def parse_view(data: RunData, fid: str | None, at: str | datetime | pd.Timestamp | None) -> View:
    """Check a view against the run: the FID exists, ``at`` is RFC 3339 and not after the as-of."""
    if at is not None and fid is None:
        raise ReportError("--at needs --fid: only a folder's matrix can be shown at an earlier time")
    if fid is not None and data.folder(fid) is None:
        raise ReportError(f"no folder with FID {fid!r} in run {data.run_id}")
    if at is None or (isinstance(at, str) and at == ""):
        return View(fid=fid)
    if isinstance(at, str):
        try:
            ts = pd.Timestamp(parse_ts(at), unit="us", tz="UTC")
        except TimeError as e:
            raise ReportError(f"--at: {e}; use a time like 2026-11-02T08:15:00Z") from None
    else:
        ts = pd.Timestamp(at)
        ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
    as_of = data.summary().get("as_of")
    if not _missing(as_of) and ts > pd.Timestamp(as_of):
        raise ReportError(f"--at {ts_text(ts)} is after the run's as-of time {ts_text(as_of)}")
    return View(fid=fid, at=ts)


def report_filename(run_id: str, fid: str | None = None, at: pd.Timestamp | None = None) -> str:
    """A file name for the view (safe on every file system): ``pfscope-<run>[-<fid>][-at-<ts>].html``."""
    parts = ["pfscope", run_id]
    if fid is not None:
        parts.append(fid)
    if at is not None:
        parts.append("at-" + pd.Timestamp(at).strftime("%Y%m%dT%H%M%SZ"))
    return re.sub(r"[^A-Za-z0-9._-]", "_", "-".join(parts)) + ".html"


def build_report(
    data: RunData,
    fid: str | None = None,
    at: str | datetime | pd.Timestamp | None = None,
    limits: Limits | None = None,
) -> str:
    """The HTML of the organisation report (no ``fid``) or of folder ``fid`` (its matrix at ``at``).

    Raises :class:`ReportError` for an unknown FID or a bad ``at``. Same run, same view: same bytes.
    """
    return render(data, parse_view(data, fid, at), limits)


def render(data: RunData, view: View, limits: Limits | None = None) -> str:
    """The HTML of a checked view (see :func:`parse_view`)."""
    lim = limits or Limits()
    if view.fid is None:
        return organisation_report(data, lim)
    return folder_report(data, view.fid, view.at, lim)


def report_download(
    data: RunData, fid: str | None = None, at: str | datetime | pd.Timestamp | None = None
) -> dict[str, str]:
    """The dashboard's "Download report": a ``dcc.Download`` payload with the very bytes that
    ``pfscope report`` writes for the same run and view. Raises :class:`ReportError` like it."""
    view = parse_view(data, fid, at)
    return {
        "content": render(data, view),
        "filename": report_filename(data.run_id, view.fid, view.at),
        "type": "text/html",
    }


def _header(data: RunData, title: str, extra: Sequence[tuple[str, Any]] = ()) -> Html:
    s = data.summary()
    facts = [("run", data.run_id), ("as of", _time(s.get("as_of"))), *extra]
    return tag(
        "header", tag("p", "pfscope report", class_="muted"), tag("h1", title), _facts(facts), class_="report"
    )


def _footer(data: RunData) -> Html:
    s = data.summary()
    return tag(
        "footer",
        tag(
            "p",
            f"pfscope report of run {data.run_id}, as of {_time(s.get('as_of'))}. "
            "Times are UTC. Charts are interactive: hover for details, drag to zoom, "
            "double-click to reset.",
        ),
        class_="report",
    )


# -- organisation ---------------------------------------------------------------------------


def organisation_report(data: RunData, lim: Limits) -> str:
    s = data.summary()
    doc = Document(title=f"pfscope · organisation · run {data.run_id}")
    stores = data.stores()
    replicas = data.replica_summary()
    open_entries = data.open_entries()

    doc.body.append(_summary_section(data, s, stores, replicas, open_entries))
    doc.body.append(_accounting_section(data, s, lim))
    doc.body.append(_stores_section(doc, stores, replicas))
    doc.body.append(worst_section(replicas, open_entries, s.get("as_of"), lim, data.forecast_summary()))
    doc.body.append(forecast_section(doc, data))
    doc.body.append(_open_entries_section(data, open_entries, lim))
    doc.body.append(_trend_section(doc, data))
    doc.body.append(_lag_section(doc, data, stores, lim))
    doc.body.append(at_risk_section(data, lim))
    doc.body.append(outages_section(data))
    toc = [
        ("summary", "Summary"),
        ("accounting", "Input"),
        ("stores", "Stores by site"),
        ("worst", "Folders needing attention"),
        ("forecast", "When in sync: the forecast"),
        ("open-entries", "Open backfill entries"),
        ("trend", "Backfill over time"),
        ("lag", "Knowledge lag"),
        ("at-risk", "Content at risk"),
        ("happened", "What happened"),
    ]
    return doc.render(_header(data, "Organisation report"), toc, _footer(data))


def _summary_section(
    data: RunData, s: dict[str, Any], stores: pd.DataFrame, replicas: pd.DataFrame, open_entries: pd.DataFrame
) -> Html:
    """The first thing a reader sees: the headline counts, then what is wrong, by cause."""
    heads = f.headline_counts(stores, replicas, open_entries, s.get("rejected"))
    facts = _facts([(h.label, f"{h.count:,}") for h in heads])
    found = f.causes(
        stores, replicas, open_entries, data.next_requests(), s.get("as_of"), data.forecast_summary()
    )
    items = [
        tag(
            "li",
            tag("strong", c.title),
            tag("ul", *[tag("li", line) for line in c.consequences]),
            class_=f"tier-{c.tier}",
        )
        for c in found
    ]
    body = (
        tag("ul", *items, class_="causes")
        if items
        else tag("p", "Nothing is wrong: every replica is in sync.")
    )
    return _section("summary", "Summary", facts, tag("h3", "What is wrong, by cause"), body)


def _accounting_section(data: RunData, s: dict[str, Any], lim: Limits) -> Html:
    read, acc, dup, rej = (int(s.get(k) or 0) for k in ("lines_read", "accepted", "duplicates", "rejected"))
    balance = "holds" if read == acc + dup + rej else "DOES NOT HOLD"
    facts = _facts(
        [
            ("lines read", f"{read:,}"),
            ("accepted", f"{acc:,}"),
            ("duplicates", f"{dup:,}"),
            ("rejected", f"{rej:,}"),
            ("check", f"lines read = accepted + duplicates + rejected {balance}"),
        ]
    )
    parts: list[Any] = [facts]
    if rej:
        reasons = data.table("rejects", ["reason"])
        counts = reasons.groupby("reason").size().reset_index(name="lines")
        counts = counts.sort_values(["lines", "reason"], ascending=[False, True])
        shown = counts.head(lim.rejects_reasons)
        parts += [
            table(
                ["reason", "lines"],
                _rows(shown, [lambda r: r["reason"], lambda r: _int(r["lines"])]),
                numeric=[1],
                caption="Rejected lines by reason",
            ),
            left_out(len(shown), len(counts), "reasons", "most lines first"),
        ]
        parts.append(_named_rejects(data, lim))
    return _section("accounting", "Input accounting", *parts)


def _named_rejects(data: RunData, lim: Limits) -> Html:
    """The rejects an accepted line caused, each with that line (file and number), so an operator
    can open both; the dashboard's /rejects page has every reject with its text."""
    named = data.rejects_naming_a_line()
    if named.empty:
        return Html("")
    shown = named.head(lim.rejects_named)
    rows = _rows(
        shown,
        [
            lambda r: r["source"],
            lambda r: int(r["line"]),
            lambda r: r["reason"],
            lambda r: f"{r['conflict_source']}:{int(r['conflict_line'])}",
        ],
    )  # as editors number lines
    return join(
        [
            table(
                ["file", "line", "reason", "conflicts with (file:line)"],
                rows,
                numeric=[1],
                caption="Rejected because of an accepted line: the line each conflicts with",
            ),
            left_out(len(shown), len(named), "such rejects", "by file and line"),
        ]
    )


def _stores_section(doc: Document, stores: pd.DataFrame, replicas: pd.DataFrame) -> Html:
    counts = f.health_by_store(replicas, stores)
    pivot = counts.pivot_table(
        index="store", columns="health", values="replicas", aggfunc="sum", fill_value=0
    )
    parts: list[Any] = [
        tag(
            "p",
            f"{len(stores):,} stores; replicas per store by health as of the run "
            "(the hierarchy 1-1 included).",
            class_="note",
        )
    ]
    for site, group in f.stores_by_site(stores).items():
        rows = []
        for r in group.to_dict("records"):
            health = [
                int(pivot.at[r["store"], h]) if r["store"] in pivot.index and h in pivot.columns else 0
                for h in HEALTH
            ]
            rows.append(
                [
                    r["store"],
                    r["server"],
                    r["version"],
                    r["status"],
                    r.get("preferred_backfill_source"),
                    f"{sum(health):,}",
                    *(f"{n:,}" for n in health),
                ]
            )
        parts.append(tag("h3", f"{site} ({len(group)} stores)"))
        parts.append(
            table(
                [
                    "store",
                    "server",
                    "version",
                    "status",
                    "preferred source",
                    "replicas",
                    *(h.replace("_", " ") for h in HEALTH),
                ],
                rows,
                numeric=range(5, 5 + 1 + len(HEALTH)),
            )
        )
    fig = f.fig_health_by_store(counts, f.down_stores(stores))  # a down store's replicas: out of reach
    parts.append(doc.figure(fig, "Replicas per store, stacked by health"))
    return _section("stores", "Stores by site", *parts)


Chosen = tuple[int, list[tuple[str, Any]]]


def _chosen_sources(data: RunData, entries: pd.DataFrame) -> dict[str, Chosen]:
    """Per entry: its last attempt and the sources the model chose there (store, CNs, count)."""
    if entries.empty:
        return {}
    ids = entries["entry_id"].tolist()
    cand = data.table(
        "backfill_candidates",
        ["entry_id", "attempt", "rank", "candidate", "chosen", "assigned_cnset"],
        filters={"entry_id": ids},
    )
    if cand.empty:
        return {}
    last = cand.groupby("entry_id")["attempt"].transform("max")
    cand = cand[(cand["attempt"] == last) & cand["chosen"].fillna(False).astype(bool)]
    cand = cand.sort_values(["entry_id", "rank"])
    out: dict[str, Chosen] = {}
    for r in cand.to_dict("records"):
        out.setdefault(r["entry_id"], (int(r["attempt"]), []))[1].append(
            (r["candidate"], r["assigned_cnset"])
        )
    return out


def _sources_cell(chosen: Chosen | None, requests: Any, lim: Limits) -> Html:
    if chosen is None:
        return tag(
            "span", "no request yet" if not requests else "no candidate held any remaining CN", class_="muted"
        )
    attempt, sources = chosen
    items = [
        tag("li", tag("span", name, class_="chosen"), " ", cn_text(cns, None, lim.cnset_chars))
        for name, cns in sources
    ]
    return join([tag("span", f"at attempt {attempt}:", class_="muted"), tag("ul", *items, class_="plain")])


def _open_entries_section(data: RunData, entries: pd.DataFrame, lim: Limits) -> Html:
    if entries.empty:
        return _section("open-entries", "Open backfill entries", tag("p", "No open backfill entry."))
    e = entries.sort_values(["next_due_at", "entry_id"], na_position="last", kind="stable")
    shown = e.head(lim.open_entries)
    chosen = _chosen_sources(data, shown)
    upcoming = f.next_request_texts(data.next_requests())
    paths = data.folders().set_index("fid")["path"]
    rows = _rows(
        shown,
        [
            lambda r: r["entry_id"],
            lambda r: r["observer"],
            lambda r: r["fid"],
            lambda r: folder_path(paths.get(r["fid"], "")),
            lambda r: _time(r["opened_at"]),
            lambda r: r["locality"],
            lambda r: _bool(r["new_replica"]),
            lambda r: cn_text(r["cnset_remaining"], r["cnset_remaining_count"], lim.cnset_chars),
            lambda r: _int(r["cnset_remaining_count"]),
            lambda r: _int(r["requests"]),
            lambda r: _time(r["next_due_at"]),
            lambda r: _sources_cell(chosen.get(r["entry_id"]), r["requests"], lim),
            lambda r: upcoming.get(str(r["entry_id"]), f.NO_SOURCE),
        ],
    )
    return _section(
        "open-entries",
        "Open backfill entries",
        tag(
            "p",
            f"{len(e):,} open entries, next due first. Sources: those the model chose at the entry's last "
            "request, with the CNs each was asked for; next request: where the next one will go (it waits "
            "while its store is down).",
            class_="note",
        ),
        table(
            [
                "entry",
                "store",
                "FID",
                "path",
                "opened",
                "locality",
                "new replica",
                "remaining CNs",
                "count",
                "requests",
                "next due",
                "chosen sources",
                "next request",
            ],
            rows,
            numeric=[8, 9],
        ),
        left_out(len(shown), len(e), "open entries", "next due first"),
    )


def _trend_section(doc: Document, data: RunData) -> Html:
    """As the overview draws it: the organisation's totals annotated with what happened, then a
    store x time heatmap, worst stores first (readable at 200 stores; one line per store was not)."""
    as_of = data.summary().get("as_of")
    entries = history.entries_overdue(data)
    items = history.incidents(data).items
    totals = tl.annotate(st.fig_org_totals(st.org_totals(entries, as_of)), items, as_of)
    trend = st.store_trend(
        entries, data.stores()["store"].tolist(), data.store_periods(), as_of, rows=st.ROWS
    )
    heat = tl.annotate(st.fig_store_trend(trend, as_of), items, as_of, bands=False)
    drawn = len(trend.stores)
    return _section(
        "trend",
        "Backfill entries over time",
        tag(
            "p",
            "The organisation's open backfill entries and, of them, those overdue (two requests or more: the "
            "first did not fill them), from the first entry opened to the as-of time, with the outages (shaded, "
            "named by their store) and replica-list changes (dashed).",
            class_="note",
        ),
        doc.figure(totals, "Open and overdue backfill entries over time, with what happened"),
        tag(
            "p",
            f"Per store (as observer), worst first: {drawn:,} of {drawn + trend.hidden:,} stores, the {st.ROWS} "
            "worst (the most entries overdue at once, then the most open at once) and every store that was down.",
            class_="note",
        ),
        doc.figure(heat, "Open backfill entries per store over time, worst stores first"),
    )


def _lag_section(doc: Document, data: RunData, stores: pd.DataFrame, lim: Limits) -> Html:
    pairs = data.lag_pairs()
    names = stores["store"].tolist()
    note: Html = Html("")
    if len(names) > lim.lag_stores:
        lag_as_obs = pairs.groupby("observer")["lag_count"].sum()
        lag_as_sub = pairs.groupby("subject")["lag_count"].sum()
        total = lag_as_obs.add(lag_as_sub, fill_value=0)
        ranked = sorted(names, key=lambda n: (-float(total.get(n, 0)), n))
        keep = set(ranked[: lim.lag_stores])
        names = [n for n in names if n in keep]
        pairs = pairs[pairs["observer"].isin(keep) & pairs["subject"].isin(keep)]
        note = left_out(len(names), len(stores), "stores", "most lag as observer or subject first")
    fig = f.fig_lag_heatmap(f.lag_heatmap_frame(pairs, names), down=f.down_stores(stores))
    return _section(
        "lag",
        "Knowledge lag, store × store",
        tag(
            "p",
            "For each observer (row) and subject (column): CNs the subject really holds that the observer's "
            "state table does not yet know, summed over their shared folders.",
            class_="note",
        ),
        doc.figure(fig, "Store by store knowledge lag heatmap"),
        note,
    )


# -- folder ---------------------------------------------------------------------------------


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
    return doc.render(_header(data, title, extra), toc, _footer(data))


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
    fig = _titled(fig, f"Backfill entries: {fid} {path}".rstrip())
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
