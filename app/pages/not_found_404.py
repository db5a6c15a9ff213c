"""Any unknown address: a helpful page with the places that exist."""

from __future__ import annotations

from typing import Any

import dash
from dash import html

from pfscope.app import components as c

dash.register_page(__name__, path="/404", name="Not found", title="pfscope · not found")


def layout(**_query: Any) -> html.Main:
    return c.not_found(
        "Page not found",
        "pfscope has no page at this address.",
        [
            ("Overview", "/"),
            ("Open backfill entries", "/backfill"),
            ("Rejected input lines", "/rejects"),
            ("Search", "/search"),
        ],
    )
