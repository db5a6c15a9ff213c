"""Shared widgets: navbar with search, CN-set text, tables, not-found (the who-knows-what matrix is
``matrix_table``'s).

Everything from data goes into components as text children or attributes, which React escapes;
nothing here renders raw HTML or markdown from data.
"""

from __future__ import annotations

import difflib
import heapq
from collections.abc import Callable, Iterable, Sequence
from typing import Any
from urllib.parse import quote, urlencode

import pandas as pd
from dash import dcc, html

from pfscope.app.figures import (
    GLOSSARY,
    HEALTH_ORDER,
    HEALTH_TERMS,
    Headline,
    Lacks,
    fmt_time,
    glossary_href,
    health_text,
    sync_suffix,
)

Cell = Callable[[Any, dict[str, Any]], Any]


def html_attrs(attrs: dict[str, Any]) -> dict[str, Any]:
    """Attributes to spread into a component, ``data-*`` and ``aria-*`` (not Python names) or an
    id given only sometimes: ``html.Span(..., **html_attrs({"data-term": term}))``. Only a type:
    mypy checks a spread ``dict[str, str]`` against every keyword of the component (``n_clicks``,
    ``hidden``, ...), which a ``dict[str, Any]`` passes."""
    return attrs


#: at most this many keys go through difflib for a not-found page's suggestions
SUGGESTION_POOL = 2000


def folder_href(fid: str, **query: Any) -> str:
    q = "&".join(f"{k}={quote(str(v), safe=':')}" for k, v in query.items() if v is not None and v != "")
    return f"/folder/{quote(str(fid), safe='')}" + (f"?{q}" if q else "")


def report_href(fid: str | None = None, at: str | None = None) -> str:
    """The view's standalone report (``/report``, served by ``app.main``): same bytes as ``pfscope report``."""
    query = urlencode({k: v for k, v in (("fid", fid), ("at", at)) if v})
    return "/report" + (f"?{query}" if query else "")


def trace_href(fid: str, store: str, cns: str) -> str:
    """The trace of CNs ``store`` lacks in folder ``fid`` (``/trace``): the messages that carried them."""
    return "/trace?" + urlencode({"fid": str(fid), "store": str(store), "cns": str(cns)})


def forecast_href(fid: str, store: str) -> str:
    """The explanation of ``store``'s forecast on folder ``fid`` (``/forecast``): its requests,
    sources and the transit times it used."""
    return "/forecast?" + urlencode({"fid": str(fid), "store": str(store)})


def trace_link(fid: str | None, store: Any, cns: Any) -> list[Any]:
    """`` · trace``: a plain link (it works inside a frozen matrix) to the trace of lacking CNs;
    nothing without a folder (the standalone report) or a CN set."""
    if not fid or cns is None or (isinstance(cns, float) and pd.isna(cns)) or not str(cns):
        return []
    return [
        " ",
        html.A(
            "trace",
            href=trace_href(fid, str(store), str(cns)),
            className="pf-trace-link",
            title=f"Which messages carried these CNs, and whether {store} processed them",
        ),
    ]


def download_link(href: str, id: str) -> html.A:
    return html.A("Download report", href=href, id=id, className="pf-download", download="")


def store_href(store: str) -> str:
    return f"/store/{quote(str(store), safe='')}"


def navbar(
    as_of: str | None = None, run_id: str | None = None, age: str | None = None, refreshed: str | None = None
) -> html.Header:
    """Top bar on every page: links, the search box (Enter or the button), the run shown with the
    age of its data (``age``: as-of to now), the last ``pfscope refresh`` (``refreshed``: how long
    it took, when the next is due) and an auto-refresh switch (assets/pfscope-nav.js: while on,
    the page reloads when a newer run is published)."""
    return html.Header(
        className="pf-nav",
        children=[
            dcc.Link("pfscope", href="/", className="pf-brand"),
            html.Nav(
                className="pf-links",
                children=[
                    dcc.Link("Overview", href="/"),
                    dcc.Link("Backfill", href="/backfill"),
                    dcc.Link("Rejects", href="/rejects"),
                    dcc.Link("Plan", href="/plan"),
                ],
            ),
            html.Div(
                className="pf-search",
                role="search",
                children=[
                    html.Label("Search", htmlFor="pf-search", className="pf-sr-only"),
                    dcc.Input(
                        id="pf-search",
                        type="search",
                        placeholder="FID, folder path, store, server or site",
                        debounce=True,
                        autoComplete="off",
                        n_submit=0,
                        className="pf-search-input",
                        style={"width": "22em"},
                    ),
                    html.Button("Go", id="pf-search-go", type="button", n_clicks=0),
                ],
            ),
            html.Span(
                className="pf-run",
                id="pf-run",
                **html_attrs({"data-run-id": run_id or ""}),
                children=(f"as of {as_of}" if as_of else "no run published")
                + (f" ({age} old)" if age else "")
                + (f" · run {run_id}" if run_id else ""),
            ),
            html.Span(refreshed, className="pf-run pf-refreshed", id="pf-refreshed") if refreshed else None,
            html.Label(
                [
                    dcc.Checklist(
                        id="pf-auto-refresh",
                        options=[{"label": " auto-refresh", "value": "on"}],
                        value=[],
                        persistence=True,
                        persistence_type="local",
                        inline=True,
                    )
                ],
                className="pf-auto-refresh",
                title="Reload the page when a newer run is published (checked every minute)",
            ),
        ],
    )


def cnset_text(text: Any, empty: str = "∅") -> html.Span:
    """A CN set in canonical text, monospaced, wrapping only between ranges (never inside
    ``PFS1:1-17``): each range is unbreakable, a break may follow each ``,`` and ``;``."""
    s = "" if text is None or (isinstance(text, float) and pd.isna(text)) else str(text)
    if not s:
        return html.Span(empty, className="pf-cnset pf-empty")
    parts: list[Any] = []
    for piece in cnset_pieces(s):
        if parts:
            parts.append(html.Wbr())
        parts.append(html.Span(piece, className="pf-cn-range"))
    return html.Span(parts, className="pf-cnset")


def path_text(text: Any) -> Any:
    """A folder path that wraps only after its ``\\`` separators (and a ``/`` inside a name):
    a break may follow each separator; inside a name only between its words (CSS). Not a path
    (empty, None): as is."""
    if not isinstance(text, str) or "\\" not in text:
        return "" if text is None or (isinstance(text, float) and pd.isna(text)) else text
    parts: list[Any] = []
    # a break may follow each \\ and, inside a name, each / (Exchange's own system folders are
    # named like EX:/o=Contoso/ou=Johannesburg)
    pieces = [p + "/" for p in text.replace("\\", "\\\n").split("/")]
    pieces[-1] = pieces[-1][:-1]
    for piece in (x for p in pieces for x in p.split("\n")):
        if not piece:
            continue
        if parts:
            parts.append(html.Wbr())
        parts.append(html.Span(piece, className="pf-path-part"))
    return html.Span(parts, className="pf-path")


def as_path(value: Any, _row: dict[str, Any]) -> Any:
    return path_text(value)


def cnset_pieces(text: str) -> list[str]:
    """``A:1-3,5;B:2`` -> ``["A:1-3,", "5;", "B:2"]``: the unbreakable pieces of a CN set's text."""
    pieces: list[str] = []
    current = ""
    for ch in text:
        current += ch
        if ch in ",;":
            pieces.append(current)
            current = ""
    if current:
        pieces.append(current)
    return pieces


def term_link(term: str, label: str = "?") -> html.A:
    """A small "?" to the glossary's entry for one of the model's words (a real link: new tab, middle click)."""
    name = GLOSSARY[term][0]
    return html.A(
        label,
        href=glossary_href(term),
        className="pf-term",
        title=f"What does {name!r} mean?",
        **html_attrs({"aria-label": f"What does {name} mean?", "data-term": term}),
    )


def with_term(text: Any, term: str) -> html.Span:
    """A column header or label followed by its glossary "?"."""
    return html.Span([text, " ", term_link(term)], className="pf-termed")


def health_badge(health: Any, store_down: bool = False) -> html.Span:
    h = str(health)
    return html.Span(
        health_text(h, store_down),
        className=f"pf-badge pf-health-{h}"
        + (" pf-health-stale" if store_down and h not in ("deleted", "delete_pending") else ""),
    )


def status_badge(status: Any) -> html.Span:
    s = str(status or "unknown")
    return html.Span(s, className=f"pf-badge pf-status-{s}")


def _plain(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, pd.Timestamp):
        return fmt_time(value)
    if isinstance(value, float) and pd.isna(value):
        return ""
    if value is pd.NaT:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def link_fid(value: Any, _row: dict[str, Any]) -> Any:
    return dcc.Link(str(value), href=folder_href(value)) if value else ""


def link_store(value: Any, _row: dict[str, Any]) -> Any:
    return dcc.Link(str(value), href=store_href(value)) if value else ""


def as_cnset(value: Any, _row: dict[str, Any]) -> Any:
    return cnset_text(value)


def as_health(value: Any, row: dict[str, Any]) -> Any:
    """A health badge; a row with ``store_status`` down says the health is as last known."""
    return health_badge(value, str(row.get("store_status")) == "down")


def as_health_lacks(value: Any, row: dict[str, Any]) -> Any:
    """A health badge followed by what the replica lacks, so "in sync" never hides CNs it lacks:
    "in sync (no backfill entry), lacks 1 CN: not told yet" (``row``: a ``replicas`` row)."""
    suffix = sync_suffix(value, Lacks.of(row), str(row.get("store_status")) == "down")
    return html.Span([as_health(value, row), suffix]) if suffix else as_health(value, row)


def as_time(value: Any, _row: dict[str, Any]) -> Any:
    """A time that may wrap between its date and its time, never inside either (a table of many
    columns fits its box without breaking "2026-11-" from "07")."""
    text = _plain(value)
    if not isinstance(text, str) or " " not in text:
        return text
    date, clock = text.split(" ", 1)
    return html.Span([html.Span(date, className="pf-nowrap"), " ", html.Span(clock, className="pf-nowrap")])


def as_breakable(value: Any, _row: dict[str, Any]) -> Any:
    """An id that may wrap after each ``/`` and ``@`` (an entry ``PFJNB02/1-2BE4/8``, a message
    ``<00001B59@EXDUB02>``), never inside one of its parts."""
    text = _plain(value)
    if not isinstance(text, str) or not text:
        return text
    parts: list[Any] = []
    piece = ""
    for ch in text:
        piece += ch
        if ch in "/@":
            parts += [html.Span(piece, className="pf-nowrap"), html.Wbr()]
            piece = ""
    return html.Span([*parts, html.Span(piece, className="pf-nowrap")] if piece else parts)


def as_yes_no(value: Any, _row: dict[str, Any]) -> Any:
    from pfscope.app.figures import yes_no

    return yes_no(value)


def headline(items: Sequence[Headline]) -> html.Section:
    """The overview's first screen: big counts, each a link to the view listing what it counts."""
    cards = []
    for h in items:
        cards.append(
            html.Li(
                className="pf-stat" + (f" pf-stat-alarm pf-tier-{h.tier}" if h.alarm else " pf-stat-ok"),
                id=f"pf-stat-{h.key}",
                children=[
                    dcc.Link(
                        href=h.href,
                        className="pf-stat-link",
                        children=[
                            html.Span(f"{h.count:,}", className="pf-stat-count"),
                            html.Span(h.label, className="pf-stat-label"),
                        ],
                    ),
                    term_link(h.term) if h.term else "",
                ],
            )
        )
    return html.Section(
        html.Ul(cards, className="pf-stats"),
        id="pf-headline",
        className="pf-headline",
        **html_attrs({"aria-label": "What is wrong"}),
    )


def table(
    frame: pd.DataFrame,
    columns: Sequence[tuple[str, Any]],
    cells: dict[str, Cell] | None = None,
    *,
    id: str | None = None,
    caption: str | None = None,
    limit: int = 500,
    row_id: Callable[[dict[str, Any]], str] | None = None,
) -> html.Div:
    """A plain, escaped HTML table of at most ``limit`` rows (says how many were left off)."""
    cells = cells or {}
    head = html.Thead(html.Tr([html.Th(label, scope="col") for _, label in columns]))
    body = []
    shown = frame.head(limit).copy()
    for col in shown.columns:  # format times once per column (iterating Timestamps is slow)
        if pd.api.types.is_datetime64_any_dtype(shown[col]):
            shown[col] = (
                shown[col].dt.strftime("%Y-%m-%d %H:%M:%SZ").astype(object).where(shown[col].notna(), "")
            )
    records = shown.to_dict("records")
    for r in records:
        tds = []
        for col, _ in columns:
            render = cells.get(col, as_path if col == "path" else None)
            value = r.get(col)
            tds.append(html.Td(render(value, r) if render else _plain(value), className=f"pf-col-{col}"))
        body.append(html.Tr(tds, **html_attrs({"id": row_id(r)} if row_id else {})))
    children: list[Any] = []
    if caption:
        children.append(html.Caption(caption))
    children += [head, html.Tbody(body)]
    note = []
    if len(frame) > limit:
        note = [html.P(f"Showing {limit:,} of {len(frame):,} rows.", className="pf-muted")]
    if frame.empty:  # no header row above nothing: the id stays, on the sentence
        return html.Div(
            html.P("None.", className="pf-muted pf-none", **html_attrs({"id": id} if id else {})),
            className="pf-table-wrap",
        )
    return html.Div(
        [html.Table(children, className="pf-table", **html_attrs({"id": id} if id else {})), *note],
        className="pf-table-wrap",
    )


def suggestions(query: str, choices: Iterable[tuple[str, str, str]], n: int = 8) -> list[tuple[str, str]]:
    """Close matches for a mistyped FID, path or store: ``choices`` are (key, label, href)."""
    items = list(choices)
    keys = [k for k, _, _ in items]
    q = query.lower()
    lowered: dict[str, int] = {}
    for i, k in enumerate(keys):
        lowered.setdefault(k.lower(), i)

    def likeness(k: str) -> int:
        """Cheap: characters in the same place, a similar length, containing the query."""
        return (
            sum(a == b for a, b in zip(q, k, strict=False))
            - abs(len(k) - len(q))
            + (4 if q and q in k else 0)
        )

    pool = list(lowered)
    if len(pool) > SUGGESTION_POOL:  # difflib is slow: compare with the keys most like the query first
        pool = heapq.nlargest(SUGGESTION_POOL, pool, key=likeness)
    matcher = difflib.SequenceMatcher()
    matcher.set_seq2(q)
    scored = []
    for k in pool:
        matcher.set_seq1(k)
        if (
            matcher.real_quick_ratio() >= 0.5
            and matcher.quick_ratio() >= 0.5
            and (r := matcher.ratio()) >= 0.5
        ):
            scored.append((r, likeness(k), k))
    scored.sort(key=lambda t: (-t[0], -t[1], t[2]))
    picked: list[int] = [lowered[k] for _, _, k in scored[:n]]
    for i, k in enumerate(keys):
        if len(picked) >= n:
            break
        if q and q in k.lower() and i not in picked:
            picked.append(i)
    return [(items[i][1], items[i][2]) for i in picked[:n]]


def not_found(title: str, detail: str, suggested: Sequence[tuple[str, str]] = ()) -> html.Main:
    """A helpful page instead of an error: what was asked, why it is not here, what is close."""
    return html.Main(
        className="pf-page pf-not-found",
        children=[
            html.H1(title),
            html.P(detail),
            html.Div(
                [
                    html.H2("Did you mean"),
                    html.Ul([html.Li(dcc.Link(label, href=href)) for label, href in suggested]),
                ]
            )
            if suggested
            else html.P("No close matches."),
            html.P(dcc.Link("Back to the overview", href="/")),
        ],
    )


def folder_not_found(
    fid: str, folders: pd.DataFrame, href: Callable[[str], str], *, by_path: bool = False
) -> html.Main:
    """A FID the run has not: the folders whose FID (and, ``by_path``, path) come near it, each a
    link by ``href`` (its FID to the page to follow)."""
    rows = list(folders.itertuples(index=False))
    choices = [(str(r.fid), f"{r.fid} {r.path}", href(str(r.fid))) for r in rows]
    if by_path:
        choices += [
            (str(r.path), f"{r.fid} {r.path}", href(str(r.fid))) for r in rows if isinstance(r.path, str)
        ]
    return not_found(
        "Folder not found", f"This run has no folder with FID {fid!r}.", suggestions(fid, choices)
    )


def store_not_found(store: str, stores: Iterable[Any], href: Callable[[str], str]) -> html.Main:
    """A store the run has not: the stores whose names come near it, each a link by ``href``."""
    choices = [(str(s), str(s), href(str(s))) for s in stores]
    return not_found(
        "Store not found", f"This run has no store named {store!r}.", suggestions(store, choices)
    )


def no_run(data_dir: str) -> html.Main:
    return html.Main(
        className="pf-page",
        children=[
            html.H1("No published run yet"),
            html.P(
                f"Nothing readable is published in {data_dir} (no LATEST, or a damaged one: see the server log). "
                f"Run `pfscope compute --out {data_dir}`; this page picks the run up without a restart."
            ),
        ],
    )


def section(
    title: str, *children: Any, id: str | None = None, help: str | None = None, term: str | None = None
) -> html.Section:
    head: list[Any] = [html.H2(title)]
    if help:
        head.append(
            html.P([help, *((" ", term_link(term, "(glossary)")) if term else ())], className="pf-help")
        )
    elif term:
        head.append(html.P(term_link(term, "What this means"), className="pf-help"))
    return html.Section([*head, *children], className="pf-section", **html_attrs({"id": id} if id else {}))


def health_legend(store_down: bool = False) -> html.Ul:
    """The health badges, each to its glossary entry; with ``store_down``, the bars' "store down"
    too (a down store's replicas are out of reach, whatever their last known health)."""
    items = [html.Li([health_badge(h), " ", term_link(HEALTH_TERMS[h])]) for h in HEALTH_ORDER]
    if store_down:
        items.append(
            html.Li(
                [
                    html.Span("store down: out of reach", className="pf-badge pf-health-store_down"),
                    " ",
                    term_link("down"),
                ],
                id="pf-legend-store-down",
            )
        )
    return html.Ul(items, className="pf-legend")
