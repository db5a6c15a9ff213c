"""Issue 35 item 5 in Chromium, on the demo: the overview's defects. The overdue cause names the
entry and the next request the /backfill grid gives for it; a down store's replicas are not drawn
as their last known health, and the lag heatmap marks the down store. Expected values from the
published Parquet (PFJNB02 is down at the as-of; PFDUB02's 1-2AB2 is overdue)."""

from __future__ import annotations

import re

import pytest

from tests.e2e.conftest import Server, screenshot
from tests.e2e.test_dashboard import open_page, table

pytestmark = pytest.mark.e2e


def grid_rows(pg) -> list[dict[str, str]]:  # type: ignore[no-untyped-def]
    """The /backfill grid's rows in display order (after its sort and filters), drawn or not."""
    pg.wait_for_selector("#backfill-grid .ag-row")
    return pg.evaluate(  # type: ignore[no-any-return]
        "() => { const out = []; dash_ag_grid.getApi('backfill-grid').forEachNodeAfterFilterAndSort("
        "n => out.push(Object.fromEntries(Object.entries(n.data).map(([k, v]) => [k, String(v ?? '')]))));"
        " return out; }"
    )


def test_the_overdue_cause_names_the_entry_and_next_request_the_grid_gives(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    replicas = table(demo_server.data, "replicas")
    overdue = replicas[replicas["health"] == "overdue"][["store", "fid"]]
    assert [tuple(r) for r in overdue.itertuples(index=False)] == [("PFDUB02", "1-2AB2")]
    entries = table(demo_server.data, "backfill_entries")
    mine = entries[
        (entries["observer"] == "PFDUB02") & (entries["fid"] == "1-2AB2") & (entries["state"] == "open")
    ]
    # the folder has an overdue entry and a younger one whose request is due first: the trap
    assert sorted(mine["requests"].tolist()) == [0, 2]
    open_page(page, demo_server.base + "/")
    cause = page.locator("#pf-causes > li").filter(has_text="(overdue)")
    assert cause.count() == 1
    lines = cause.locator("ul > li").all_inner_texts()
    assert len(lines) == 1 and lines[0].startswith("1-2AB2: ")
    said = re.search(r"next request (\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ)", lines[0])
    assert said, lines[0]
    # the grid the cause links to, the first row of that folder (overdue first, then the longest open)
    cause.locator("a.pf-cause-title").click()
    page.wait_for_url("**/backfill?observer=PFDUB02&overdue=1")
    rows = [r for r in grid_rows(page) if r["fid"] == "1-2AB2"]
    assert rows and rows[0]["overdue"] == "yes"
    first = rows[0]
    assert said.group(1) == first["next_due_at"], (lines[0], first)
    assert first["entry_id"] in lines[0] and first["next_request"] in lines[0]
    # the entry it names is the overdue one, as the Parquet has it
    named = mine.set_index("entry_id").loc[first["entry_id"]]
    assert int(named["requests"]) == 2


def test_a_down_stores_replicas_are_drawn_out_of_reach_not_in_sync(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    stores, replicas = table(demo_server.data, "stores"), table(demo_server.data, "replicas")
    assert stores.loc[stores["status"] == "down", "store"].tolist() == ["PFJNB02"]
    theirs = replicas[(replicas["store"] == "PFJNB02") & (replicas["health"] != "deleted")]
    assert (theirs["health"] == "in_sync").sum() > 0  # last known: mostly in sync
    open_page(page, demo_server.base + "/")
    fig = page.locator("#pf-health-fig .js-plotly-plot")
    fig.scroll_into_view_if_needed()
    drawn = fig.evaluate(
        "gd => gd._fullData.map(t => ({name: t.name, colour: t.marker.color,"
        " pattern: (t.marker.pattern || {}).shape || '',"
        " x: t.x[t.y.indexOf('PFJNB02')] || 0}))"
    )
    by_name = {t["name"]: t for t in drawn}
    # no bar of a health is drawn for PFJNB02's replicas: they are out of reach
    for health in ("in sync", "backfilling", "overdue", "delete pending"):
        assert by_name[health]["x"] == 0, (health, by_name[health])
    down = [t for t in drawn if "store down" in t["name"]]
    assert len(down) == 1 and down[0]["x"] == len(theirs)
    assert down[0]["colour"] not in {t["colour"] for t in drawn if t is not down[0]} and down[0]["pattern"]
    # the chart's own legend and the badges above it say what the bar is
    legend = fig.evaluate("gd => Array.from(gd.querySelectorAll('.legendtext')).map(t => t.textContent)")
    assert "store down: out of reach" in legend
    assert page.locator("#pf-health .pf-legend").inner_text().count("store down") == 1
    ticks = fig.evaluate("gd => Array.from(gd.querySelectorAll('.ytick text')).map(t => t.textContent)")
    assert "PFJNB02 (down)" in ticks and sum("(down)" in t for t in ticks) == 1
    screenshot(page, "demo-overview-health-store-down")


def test_the_lag_heatmap_marks_the_down_store(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    open_page(page, demo_server.base + "/")
    fig = page.locator("#pf-lag-fig .js-plotly-plot")
    fig.scroll_into_view_if_needed()
    for axis in ("x", "y"):
        ticks = fig.evaluate(
            f"gd => Array.from(gd.querySelectorAll('.{axis}tick text')).map(t => t.textContent)"
        )
        assert [t for t in ticks if "(down)" in t] == ["PFJNB02 (down)"], (axis, ticks)
    # a cell of its row says its view is what it knew when it went down
    hover = fig.evaluate(
        "gd => { const t = gd._fullData[0]; const i = t.y.indexOf('PFJNB02'); return t.customdata[i][0][2]; }"
    )
    assert "PFJNB02 is down: this is what it knew when it went down" in hover


def test_the_overviews_charts_are_drawn_when_they_are_about_to_be_seen(demo_server: Server, browser) -> None:  # type: ignore[no-untyped-def]
    """The first screen does not wait for the charts below the fold (issue 35: the 40-store
    overview took 2.2-3.6 s to be usable, drawing them all at once); each is drawn when scrolled
    near, and still opens a store when clicked."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    try:
        pg = context.new_page()
        errors: list[str] = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.goto(demo_server.base + "/")
        pg.wait_for_selector("main h1")
        pg.wait_for_load_state("networkidle")
        lag = pg.locator("#pf-lag-fig")
        assert lag.get_attribute("data-lazy") == "pf-lag-fig"
        # far below the first screen: the placeholder only, of the chart's own height
        pg.wait_for_function("() => !!document.querySelector('#pf-lag-fig .js-plotly-plot .main-svg')")
        state = lag.evaluate(
            "el => ({drawn: el.hasAttribute('data-drawn'), traces: el.querySelector('.js-plotly-plot').data.length,"
            " height: el.querySelector('.js-plotly-plot')._fullLayout.height})"
        )
        assert state["drawn"] is False and state["traces"] == 0 and state["height"] >= 300, state
        lag.scroll_into_view_if_needed()
        pg.wait_for_function("() => document.querySelector('#pf-lag-fig').hasAttribute('data-drawn')")
        assert lag.evaluate("el => el.querySelector('.js-plotly-plot').data.length") == 2
        # drawn, a cell still opens the observer's store
        point = lag.locator(".js-plotly-plot").evaluate(
            "gd => { const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, r = gd.getBoundingClientRect();"
            " return {x: r.x + xa._offset + xa.d2p(0), y: r.y + ya._offset + ya.d2p(1), y1: gd.data[0].y[1]}; }"
        )
        pg.mouse.move(point["x"], point["y"])
        pg.mouse.click(point["x"], point["y"])
        pg.wait_for_url(f"**/store/{point['y1']}#pf-behind-section")
        assert errors == []
    finally:
        context.close()
