"""The organisation report: the summary, the input read, the stores, the folders needing attention,
the forecast, open backfill entries, the trend, the knowledge lag, content at risk and what
happened."""

from __future__ import annotations

from typing import Any

import pandas as pd

from pfscope.app import figures as f
from pfscope.app import history
from pfscope.app.data import RunData
from pfscope.app.figures import store_trend as st
from pfscope.app.figures import timeline as tl
from pfscope.app.report.attention import worst_section
from pfscope.app.report.cells import Limits, cn_text, folder_path, left_out
from pfscope.app.report.cells import bool_text as _bool
from pfscope.app.report.cells import facts as _facts
from pfscope.app.report.cells import int_text as _int
from pfscope.app.report.cells import rows as _rows
from pfscope.app.report.cells import section as _section
from pfscope.app.report.cells import time_text as _time
from pfscope.app.report.document import Document
from pfscope.app.report.forecast import forecast_section
from pfscope.app.report.frame import footer, header
from pfscope.app.report.html import Html, join, table, tag
from pfscope.app.report.reality import at_risk_section, outages_section

HEALTH = f.HEALTH_ORDER


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
    return doc.render(header(data, "Organisation report"), toc, footer(data))


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
