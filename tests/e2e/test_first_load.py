"""First loads: AG Grid's bundle (1.3 MB) is fetched only by a page that draws a grid, and the
grid still draws, from a first load and from a link followed inside the app."""

from __future__ import annotations

import pytest
from plotly.offline import get_plotlyjs_version

from tests.e2e.conftest import Server
from tests.e2e.test_dashboard import busiest_folder, open_page, table

pytestmark = pytest.mark.e2e

GRID_FILES = ("dash_ag_grid", "async-community", "async-enterprise")


def grid_requests(requests: list[str]) -> list[str]:
    return [
        u
        for u in requests
        if "/_dash-component-suites/dash_ag_grid/" in u or any(f in u.rsplit("/", 1)[-1] for f in GRID_FILES)
    ]


def test_pages_without_a_grid_do_not_fetch_ag_grid(demo_server: Server, browser) -> None:  # type: ignore[no-untyped-def]
    fid = busiest_folder(demo_server.data)
    store = sorted(table(demo_server.data, "stores")["store"])[0]
    for path in ("/", f"/folder/{fid}", f"/store/{store}", "/replicas", "/glossary"):
        context = browser.new_context()  # an empty cache
        try:
            pg = context.new_page()
            requests: list[str] = []
            pg.on("request", lambda r, seen=requests: seen.append(r.url))
            open_page(pg, demo_server.base + path)
            assert pg.locator("main h1").count() == 1
            scripts = [u for u in requests if "/_dash-component-suites/" in u]
            assert len(scripts) >= 3, path  # the page did load Dash's own bundles
            assert grid_requests(requests) == [], path
            assert pg.locator("script[src*='dash_ag_grid']").count() == 0
        finally:
            context.close()


def test_the_backfill_grid_loads_its_bundle_and_draws(demo_server: Server, browser) -> None:  # type: ignore[no-untyped-def]
    entries = table(demo_server.data, "backfill_entries")
    n_open = int((entries["state"] == "open").sum())
    for how in ("first load", "link"):
        context = browser.new_context()
        try:
            pg = context.new_page()
            requests: list[str] = []
            errors: list[str] = []
            pg.on("request", lambda r, seen=requests: seen.append(r.url))
            pg.on("pageerror", lambda e, seen=errors: seen.append(str(e)))
            if how == "first load":
                open_page(pg, demo_server.base + "/backfill")
            else:  # the overview first (no grid), then the app's own link: the bundle comes then
                open_page(pg, demo_server.base + "/")
                assert grid_requests(requests) == []
                pg.locator("a[href='/backfill']").first.click()
                pg.wait_for_url("**/backfill")
            pg.wait_for_selector("#backfill-grid .ag-row")
            shown = pg.evaluate(
                "() => { let n = 0; dash_ag_grid.getApi('backfill-grid')"
                ".forEachNodeAfterFilter(() => { n += 1; }); return n; }"
            )
            assert shown == n_open, how
            bundles = [u for u in grid_requests(requests) if u.rsplit("/", 1)[-1].startswith("dash_ag_grid")]
            assert len(bundles) == 1, (how, bundles)  # fetched once, by the page that draws the grid
            assert errors == []
        finally:
            context.close()


def test_charts_draw_with_plotlyjss_cartesian_bundle(demo_server: Server, browser) -> None:  # type: ignore[no-untyped-def]
    fid = busiest_folder(demo_server.data)
    context = browser.new_context()
    try:
        pg = context.new_page()
        bundles: list[tuple[str, str | None, int]] = []
        pg.on(
            "response",
            lambda r: (
                bundles.append((r.url, r.headers.get("x-plotly-bundle"), len(r.body())))
                if "plotly.min.js" in r.url
                else None
            ),
        )
        for path in ("/", f"/folder/{fid}"):
            open_page(pg, demo_server.base + path)  # waits for every chart's SVG
            drawn = pg.evaluate(
                "() => Array.from(document.querySelectorAll('main .pf-figure')).map("
                "g => g.querySelectorAll('.main-svg .trace, .main-svg .hm, .main-svg image').length)"
            )
            assert drawn and all(n > 0 for n in drawn), (path, drawn)
        assert bundles and all(kind == "cartesian" for _url, kind, _size in bundles)
        assert 0 < bundles[0][2] < 2_000_000  # the full bundle is 4.8 MB
        assert pg.evaluate("() => window.Plotly.version") == get_plotlyjs_version()
    finally:
        context.close()
