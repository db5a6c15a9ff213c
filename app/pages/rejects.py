"""``/rejects``: the input lines the run could not use (source, line, reason, the accepted line a
reject conflicts with, verbatim text; all escaped)."""

from __future__ import annotations

from typing import Any

import dash
import pandas as pd
from dash import dcc, html

from pfscope.app import components as c
from pfscope.app import figures as f
from pfscope.app.runtime import current_data, settings

dash.register_page(__name__, path="/rejects", name="Rejects", title="pfscope · rejected lines")

PAGE = 500


def conflict_text(row: dict[str, Any]) -> str:
    """The accepted line a reject conflicts with, as ``file:line`` (empty: no line caused it)."""
    line = row.get("conflict_line")
    if line is None or pd.isna(line):
        return ""
    return f"{row.get('conflict_source') or ''}:{int(line)}"


def layout(offset: str | None = None, **_query: Any) -> html.Main:
    data = current_data()
    if data is None:
        return c.no_run(str(settings().data_dir))
    try:
        start = int(offset or 0)
    except ValueError:
        return c.not_found(
            "Bad offset parameter",
            f"offset={offset!r} is not a whole number.",
            [("The first rejected lines", "/rejects")],
        )
    page = f.window(data.rejects(), start, PAGE)
    reasons = data.rejects().groupby("reason").size().sort_values(ascending=False)
    nav = []
    if page.offset > 0:
        nav.append(dcc.Link("previous", href=f"/rejects?offset={max(0, page.offset - PAGE)}"))
    if page.offset + PAGE < page.total:
        nav.append(dcc.Link("next", href=f"/rejects?offset={page.offset + PAGE}"))
    return html.Main(
        className="pf-page",
        children=[
            html.H1("Rejected input lines"),
            html.P(
                f"{page.total:,} line{'s' if page.total != 1 else ''} could not be used; each keeps its file, "
                "line number, reason and verbatim text. A line rejected because of another one (a message id "
                "reused, a receive against its send, a second receive, a change number not increasing) names "
                "the accepted line it conflicts with.",
                id="pf-rejects-count",
            ),
            html.Ul([html.Li(f"{n:,}: {r}") for r, n in reasons.items()]) if len(reasons) else "",
            c.table(
                page.rows,
                [
                    ("source", "source"),
                    ("line", "line"),
                    ("reason", "reason"),
                    ("conflict_line", "conflicts with"),
                    ("text", "text"),
                ],
                {
                    "text": lambda v, _r: html.Code(str(v or ""), className="pf-reject-text"),
                    "conflict_line": lambda _v, r: conflict_text(r),
                },
                id="pf-rejects",
                limit=PAGE,
            ),
            html.Nav(nav, className="pf-pager") if nav else "",
        ],
    )
