"""The who-knows-what matrix on the dashboard (seed 004's layout): a cell per observer and
subject, its state, CN set or count, lag and trace link, and the legend under it.

Everything from data goes into components as text children or attributes, which React escapes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
from dash import html

from pfscope.app.components import cnset_text, html_attrs, term_link, trace_link
from pfscope.app.figures import (
    CELL_LABELS,
    CELL_STATES,
    DERIVED_HELP,
    DERIVED_NOTE,
    cell_label,
    fmt_time,
    plural,
)


def derived_note() -> html.Div:
    """The mark of a CN set that rests on derived knowledge: text first, the dashed border only adds."""
    return html.Div(DERIVED_NOTE, className="pf-cell-derived", title=DERIVED_HELP)


def is_derived(value: Any) -> bool:
    """A ``derived`` flag as read back from Parquet or pandas: null (NA, NaN, None) is not derived."""
    return value is not None and not (pd.api.types.is_scalar(value) and pd.isna(value)) and bool(value)


def matrix_cell(cell: dict[str, Any], fid: str | None = None, counts_only: bool = False) -> html.Td:
    """One cell of the who-knows-what matrix: CN set, count, last heard, lag; class by state and lag.
    A CN set ingest derived (a lower bound) says so in words and has a dashed border. With a
    ``fid``, a cell showing CNs a store lacks links to their trace (``/trace``): the observer's
    lag (not told yet), the subject's lacking CNs (really lacks: the subject is the store that
    lacks them) or the observer's own (its diagonal cell). ``counts_only``: counts instead of CN
    sets (a large folder's matrix at a glance)."""

    def cns(text: Any, count: Any) -> Any:
        return plural(count, "CN") if counts_only else cnset_text(text)

    state = str(cell.get("state"))
    derived = is_derived(cell.get("derived"))
    lag = int(cell.get("lag_count") or 0)
    bucket = 0 if lag == 0 else 1 if lag < 10 else 2 if lag < 100 else 3
    parts: list[Any] = []
    if state == "unknown":
        parts.append(html.Div("no row (never heard from)", className="pf-muted"))
    else:
        if state == "owned":
            last = cell.get("last_sent_cn")
            last_text = (
                "" if last is None or pd.isna(last) else f" · last sent CN {cell['subject']}:{int(last)}"
            )
            parts.append(html.Div([cell_label("owned"), html.Span(last_text)], className="pf-cell-label"))
        if not counts_only:
            parts.append(cnset_text(cell.get("cnset")))
        if derived:
            parts.append(derived_note())
        parts.append(html.Div(plural(cell.get("cnset_count"), "CN"), className="pf-cell-count"))
        heard = fmt_time(cell.get("heard_at"))
        if heard:
            parts.append(
                html.Div(("changed " if state == "owned" else "heard ") + heard, className="pf-cell-heard")
            )
        if state == "not_told":
            behind = (
                [f"lag {plural(lag, 'CN')}"]
                if counts_only
                else [cnset_text(cell.get("lag_cnset")), f" (lag {plural(lag, 'CN')})"]
            )
            parts.append(
                html.Div(
                    [
                        cell_label("not_told") + " ",
                        term_link("not-told"),
                        ": ",
                        *behind,
                        *trace_link(fid, cell["observer"], cell.get("lag_cnset")),
                    ],
                    className="pf-cell-lag",
                )
            )
        elif state == "told_later":
            parts.append(
                html.Div(
                    [
                        cell_label("told_later") + " ",
                        term_link("told-later"),
                        ": ",
                        cns(cell.get("lag_cnset"), lag),
                    ],
                    className="pf-cell-lag pf-cell-harmless",
                )
            )
        elif state == "lacks":
            parts.append(
                html.Div(
                    [
                        f"subject {cell_label('lacks')} ",
                        term_link("really-lacks"),
                        ": ",
                        cns(cell.get("lacks_cnset"), cell.get("lacks_count")),
                        *trace_link(fid, cell["subject"], cell.get("lacks_cnset")),
                    ],
                    className="pf-cell-lag",
                )
            )
        elif state == "owned" and int(cell.get("lacks_count") or 0):
            parts.append(
                html.Div(
                    [
                        "lacks: ",
                        cns(cell.get("lacks_cnset"), cell.get("lacks_count")),
                        *trace_link(fid, cell["observer"], cell.get("lacks_cnset")),
                    ],
                    className="pf-cell-lag",
                )
            )
        elif state == "current":
            parts.append(html.Div(cell_label("current"), className="pf-cell-ok"))
    title = CELL_STATES.get(state, "") + (f"; {DERIVED_HELP}" if derived else "")
    return html.Td(
        parts,
        className=f"pf-cell pf-cell-{state} pf-lag-{bucket}" + (" pf-derived" if derived else ""),
        title=title,
        **html_attrs(
            {
                "data-observer": str(cell["observer"]),
                "data-subject": str(cell["subject"]),
                "data-cnset": "" if cell.get("cnset") is None else str(cell.get("cnset")),
                "data-state": state,
                "data-derived": "true" if derived else "false",
            }
        ),
    )


def _legend_item(state: str, meaning: str) -> html.Li:
    label, term = CELL_LABELS[state]
    return html.Li(
        [
            html.Span(className=f"pf-swatch pf-cell-{state}"),
            f"{label}: {meaning}",
            *((" ", term_link(term)) if term else ()),
        ]
    )


def matrix_table(
    matrix: pd.DataFrame,
    *,
    id: str = "pf-matrix",
    observers: Sequence[str] | None = None,
    subjects: Sequence[str] | None = None,
    fid: str | None = None,
    counts_only: bool = False,
) -> html.Div | html.P:
    """Seed 004's layout: one column per observer (whose state table), one row per subject.
    ``fid``: the folder, for the cells' trace links (none without it).
    ``observers``/``subjects``: the folder's stores at any time, so a replayed step keeps the same
    columns and rows (an observer with no row yet shows empty cells) and the table its width."""
    if matrix.empty and not observers:
        return html.P("No state table rows for this folder at this time.", className="pf-muted", id=id)
    have = not matrix.empty
    observers = sorted(set(observers or ()) | (set(matrix["observer"]) if have else set()))
    subjects = sorted(set(subjects or ()) | (set(matrix["subject"]) if have else set()))
    by = {(r["observer"], r["subject"]): r for r in matrix.to_dict("records")}
    head = html.Thead(
        html.Tr([html.Th("subject \\ observer", scope="col"), *[html.Th(o, scope="col") for o in observers]])
    )
    rows = []
    for s in subjects:
        tds: list[Any] = [html.Th(s, scope="row")]
        for o in observers:
            c = by.get((o, s))
            tds.append(matrix_cell(c, fid, counts_only) if c else html.Td(""))
        rows.append(html.Tr(tds))
    legend = html.Ul(className="pf-legend", children=[_legend_item(k, v) for k, v in CELL_STATES.items()])
    if "derived" in matrix.columns and matrix["derived"].fillna(False).astype(bool).any():
        legend.children.append(
            html.Li([html.Span(className="pf-swatch pf-derived"), DERIVED_HELP, " ", term_link("derived")])
        )
    return html.Div(
        [
            html.Table(
                [head, html.Tbody(rows)],
                className="pf-matrix" + (" pf-counts" if counts_only else ""),
                id=id,
                **html_attrs({"data-view": "counts" if counts_only else "full"}),
            ),
            legend,
        ],
        className="pf-table-wrap",
    )
