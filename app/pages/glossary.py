"""``/glossary``: the model's words, one anchor each (``/glossary#overdue``); every "?" link of
the dashboard points here. The meanings are the replication model's (docs: replication-model)."""

from __future__ import annotations

from typing import Any

import dash
from dash import html

from pfscope.app import figures as f

dash.register_page(__name__, path="/glossary", name="Glossary", title="pfscope · glossary")


def layout(**_query: Any) -> html.Main:
    items: list[Any] = []
    for anchor, (term, meaning) in f.GLOSSARY.items():
        items += [
            html.Dt(html.A(term, href=f"#{anchor}", className="pf-anchor"), id=anchor),
            html.Dd(meaning),
        ]
    return html.Main(
        className="pf-page",
        children=[
            html.H1("Glossary"),
            html.P(
                "The words of the replication model as the dashboard and the reports use them.",
                className="pf-help",
            ),
            html.Dl(items, className="pf-glossary", id="pf-glossary"),
        ],
    )
