"""``/search?q=``: the navbar's search box goes to a FID, a store or a folder path (partial match);
several matches get this page."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import dash
import pandas as pd
from dash import Input, Output, State, callback, html

from pfscope.app import components as c
from pfscope.app.data import RunData
from pfscope.app.runtime import current_data, settings

dash.register_page(__name__, path="/search", name="Search", title="pfscope · search")

LIMIT = 200


def matches(data: RunData, q: str) -> tuple[list[str], pd.DataFrame]:
    """Stores whose name, server or site contains ``q`` and folders whose FID or path contains it
    (case-insensitive)."""
    needle = q.strip().lower()
    frame = data.stores()
    stores = [
        r.store
        for r in frame.itertuples(index=False)
        if any(needle in str(v).lower() for v in (r.store, r.server, r.site) if v is not None)
    ]
    folders = data.folders()
    hit = folders["fid"].str.lower().str.contains(needle, regex=False) | folders["path"].fillna(
        ""
    ).str.lower().str.contains(needle, regex=False)
    return stores, folders[hit].sort_values("path")


def resolve(data: RunData, q: str) -> str:
    """Where a search goes: an exact FID or store, a single path match, else the results page."""
    q = q.strip()
    if not q:
        return "/"
    if data.folder(q) is not None:
        return c.folder_href(q)
    stores = data.stores()
    by_lower = {str(s).lower(): s for s in stores["store"]}
    by_lower.update(
        {
            str(v).lower(): s
            for s, v in zip(stores["store"], stores["server"], strict=True)
            if str(v).lower() not in by_lower
        }
    )
    if q.lower() in by_lower:
        return c.store_href(by_lower[q.lower()])
    stores, folders = matches(data, q)
    if not stores and len(folders) == 1:
        return c.folder_href(folders["fid"].iloc[0])
    return "/search?q=" + quote(q, safe="")


def layout(q: str | None = None, **_query: Any) -> html.Main:
    data = current_data()
    if data is None:
        return c.no_run(str(settings().data_dir))
    q = (q or "").strip()
    if not q:
        return html.Main(
            [html.H1("Search"), html.P("Type a FID, a folder path or a store in the box above.")],
            className="pf-page",
        )
    stores, folders = matches(data, q)
    body: list[Any] = [html.H1(f"Search: {q}")]
    if stores:
        body.append(c.section("Stores", html.Ul([html.Li(c.link_store(s, {})) for s in stores])))
    if not folders.empty:
        body.append(
            c.section(
                f"Folders ({len(folders):,})",
                c.table(
                    folders,
                    [("fid", "FID"), ("path", "path")],
                    {"fid": c.link_fid},
                    id="pf-search-results",
                    limit=LIMIT,
                ),
            )
        )
    if not stores and folders.empty:
        choices = [
            (str(r.path), f"{r.fid} {r.path}", c.folder_href(r.fid))
            for r in data.folders().itertuples(index=False)
            if isinstance(r.path, str)
        ]
        choices += [(s, s, c.store_href(s)) for s in data.stores()["store"]]
        return c.not_found(
            f"Nothing matches {q!r}",
            "No FID, store or folder path contains that text.",
            c.suggestions(q, choices),
        )
    return html.Main(body, className="pf-page")


@callback(
    Output("pf-nav-location", "href"),
    Input("pf-search", "n_submit"),
    Input("pf-search-go", "n_clicks"),
    State("pf-search", "value"),
    prevent_initial_call=True,
)
def go(_submits: int, _clicks: int, value: str | None) -> str | dash.NoUpdate:
    data = current_data()
    if data is None or not value or not value.strip():
        return dash.no_update
    return resolve(data, value)
