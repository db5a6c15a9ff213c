"""Issue 35 item 3 in Chromium: what happened. The overview's organisation timeline (the incidents,
newest first, and their chart), the time-series charts annotated with them (outages as bands named
by their store, replica-list changes as dashed lines), the store page saying what its outage
caused, and the per-store chart readable at 200 stores (a row per store, every label distinct, no
style repeated). Expected values from the published Parquet.

Each test fails on the code before this work: the overview had no incident list, no timeline
chart and no annotation (a table of outages and one line per store whose styles repeated past
eight stores), and the store page listed its down periods without what they caused."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from tests.e2e.conftest import Server, screenshot, served
from tests.e2e.test_dashboard import open_page, table
from tests.published_runs import SCALE_200, published_scale

pytestmark = pytest.mark.e2e

EXPIRY = pd.Timedelta(hours=48)


def _plot(pg, fig_id: str) -> dict:  # type: ignore[no-untyped-def,type-arg]
    """A drawn figure's data and layout, as plotly.js holds them."""
    return pg.evaluate(
        "id => { const p = document.querySelector('#' + id + ' .js-plotly-plot');"
        " return {data: p.data.map(t => ({name: t.name, type: t.type, y: t.y, hovertext: t.hovertext,"
        " marker: t.marker, line: t.line, showlegend: t.showlegend})),"
        " layout: {shapes: p.layout.shapes || [], yaxis: p.layout.yaxis}}; }",
        fig_id,
    )


def _svg_texts(pg, selector: str) -> list[str]:  # type: ignore[no-untyped-def]
    """The text plotly.js drew (what a reader sees), e.g. the y axis' tick labels."""
    return pg.locator(selector).evaluate_all("els => els.map(e => e.textContent)")


def _outage_effects(data: Path, store: str) -> tuple[int, int]:
    """(entries it opened once back on mail held for it, messages sent to it while down that
    expired), counted from the Parquet."""
    (period,) = table(data, "store_periods").query("store == @store").itertuples()
    messages = table(data, "messages")
    held = messages[
        (messages["recipient"] == store)
        & (messages["sent_at"] >= period.down_at)
        & (messages["sent_at"] < period.up_at)
    ]
    expired = held[held["processed_at"].isna() & (held["sent_at"] + EXPIRY <= period.up_at)]["msg"].nunique()
    entries = table(data, "backfill_entries")
    mine = entries[(entries["observer"] == store) & (entries["opened_at"] >= period.up_at)]
    return int(mine["opened_by"].isin(set(held["msg"])).sum()), int(expired)


def test_the_overview_tells_what_happened_this_week_newest_first(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    reopened, expired = _outage_effects(demo_server.data, "PFSIN02")
    assert reopened > 0 and expired > 0
    open_page(page, demo_server.base + "/")
    items = page.locator("#pf-incidents > li")
    texts = items.all_inner_texts()
    summary = page.locator("#pf-incidents-summary").inner_text()
    assert summary.startswith(f"{len(texts)} incidents, grouped from ")
    # the 50-hour outage, with what it caused, long after it is over
    sin = next(t for t in texts if "PFSIN02 down 50 h" in t)
    assert sin.startswith("Tue 11-03 06:00 to Thu 11-05 08:00 · store down")
    assert (
        f"PFSIN02 down 50 h, Tue 11-03 06:00 to Thu 11-05 08:00: it opened {reopened} entries once back, on mail "
        f"held for it while it was down, {expired} messages sent to it while it was down expired (48 h queue expiry)"
    ) in sin
    jnb = next(t for t in texts if "PFJNB02 down since" in t)
    assert jnb.startswith("Sat 11-07 00:00, ongoing · store down") and "no content at risk" in jnb
    # every kind the demo's week had, newest first
    kinds = items.evaluate_all("els => els.map(e => e.dataset.kind)")
    assert set(kinds) == {"outage", "lists", "mail", "overdue"}
    starts = [t.split(" · ")[0] for t in texts]
    assert starts[0].startswith("Sun 11-08") and starts[-1].startswith("Mon 11-02")
    lists = [t for k, t in zip(kinds, texts, strict=True) if k == "lists"]
    assert any(
        "Replica list of 1-2BFF (IPM_SUBTREE\\Regions\\Africa) changed: removed PFJNB01" in t for t in lists
    )
    # a grouped line folds the groups it merges
    grouped = page.locator("#pf-incidents > li:has(details)").first
    assert grouped.locator("summary").inner_text().endswith(" lines in it, by store")
    grouped.locator("summary").click()
    assert grouped.locator("details li").count() >= 2
    # the incidents' chart: a bar per incident, by kind
    chart = _plot(page, "pf-incidents-fig")
    assert {t["name"] for t in chart["data"]} == {
        "store down",
        "replica lists changed",
        "mail never processed",
        "entries overdue",
    }
    assert sum(len(t["y"]) for t in chart["data"]) == len(texts)
    # the outage links to its store page
    page.locator("#pf-incidents > li[data-kind=outage]").filter(has_text="PFSIN02").locator(
        "a.pf-incident-link"
    ).click()
    page.wait_for_url("**/store/PFSIN02")
    screenshot(page, "demo-store-PFSIN02-history")


def test_the_charts_are_annotated_with_the_outages_and_list_changes(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    open_page(page, demo_server.base + "/")
    page.locator("#pf-trend").scroll_into_view_if_needed()
    fig = _plot(page, "pf-trend-fig")
    bands = [s for s in fig["layout"]["shapes"] if s["type"] == "rect"]
    lines = [s for s in fig["layout"]["shapes"] if s["type"] == "line"]
    periods = table(demo_server.data, "store_periods").sort_values("down_at")
    assert [s["label"]["text"] for s in bands] == list(periods["store"])
    assert [pd.Timestamp(s["x0"], tz="UTC") for s in bands] == list(periods["down_at"])
    changes = table(demo_server.data, "replica_lists").dropna(subset=["at"])
    assert len(lines) >= 1 and all(s["label"]["text"].startswith("lists: ") for s in lines)
    assert sum(int(s["label"]["text"].split()[1]) for s in lines) == len(changes)
    # named where a reader sees them: on the chart, in the legend, on hover
    drawn = _svg_texts(
        page, "#pf-trend-fig .layer-above text, #pf-trend-fig .shapelayer text, #pf-trend-fig text"
    )
    assert "PFSIN02" in drawn and "PFJNB02" in drawn
    legend = _svg_texts(page, "#pf-trend-fig .legendtext")
    assert "store down (shaded band)" in legend and "replica lists changed (dashed line)" in legend
    hover = next(t for t in fig["data"] if t["name"] == "annotations")["hovertext"]
    assert any("PFSIN02 down 50 h" in h for h in hover)
    # the per-store chart marks the list changes too, and hatches each outage on its store's row
    heat = _plot(page, "pf-store-trend-fig")
    assert [s["type"] for s in heat["layout"]["shapes"]] == ["line"] * len(lines)
    down = next(t for t in heat["data"] if t["name"] == "store down (hatched)")
    assert sorted(down["y"]) == sorted(periods["store"])
    assert set(down["y"]) <= set(heat["layout"]["yaxis"]["categoryarray"])
    screenshot(page, "demo-overview-annotated")


def test_a_store_page_says_what_its_outage_caused(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    reopened, expired = _outage_effects(demo_server.data, "PFSIN02")
    open_page(page, demo_server.base + "/store/PFSIN02")
    assert page.locator("#pf-store-outages li").all_inner_texts() == [
        f"down 50 h, Tue 11-03 06:00 to Thu 11-05 08:00 (UTC): it opened {reopened} entries once back, on mail "
        f"held for it while it was down, {expired} messages sent to it while it was down expired (48 h queue expiry)"
    ]
    open_page(page, demo_server.base + "/store/PFJNB02")
    nxt = table(demo_server.data, "next_requests")
    waiting = nxt[nxt["observer"] == "PFJNB02"]["entry_id"].nunique()
    assert page.locator("#pf-store-outages li").all_inner_texts() == [
        "down since Sat 11-07 00:00 (UTC), still down at the as-of (47 h 59 min): "
        f"{waiting} entries of its own wait for it to be back, no content at risk (nothing only it holds)"
    ]


@pytest.fixture(scope="module")
def scale_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from served(published_scale("scale-200", SCALE_200), tmp_path_factory, "scale-200")


def test_the_per_store_chart_is_readable_at_200_stores(scale_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    stores = sorted(table(scale_server.data, "stores")["store"])
    assert len(stores) == 200
    page.set_default_timeout(
        90_000
    )  # 200 stores: the overview's other charts take long to draw on a busy machine
    open_page(page, scale_server.base + "/")
    heat = _plot(page, "pf-store-trend-fig")
    # one trace per kind of mark (and the list changes' hover points), never one per store: no
    # style can repeat
    assert [t["name"] for t in heat["data"]] == [
        "open entries",
        "overdue entries (bar under the row)",
        "store down (hatched)",
        "annotations",
    ]
    labels = _svg_texts(page, "#pf-store-trend-fig .ytick text")
    periods = table(scale_server.data, "store_periods")
    # the 40 worst, and the store that was down (its outage is drawn on its row)
    assert 40 <= len(labels) <= 40 + len(periods) and len(set(labels)) == len(labels)
    assert set(periods["store"]) <= set(labels) <= set(stores)
    assert (
        page.locator("#pf-store-trend-count")
        .inner_text()
        .startswith(
            f"{len(labels)} of 200 stores: the 40 worst (the most entries overdue at once, then the most open at once) "
            "and every store that was down"
        )
    )
    # worst first: the first row holds the most entries open at once of all stores (none is overdue)
    entries = table(scale_server.data, "backfill_entries")
    assert int(entries["requests"].max()) < 2
    heat = _plot(page, "pf-store-trend-fig")
    peaks = page.evaluate(
        "() => Array.from(document.querySelector('#pf-store-trend-fig .js-plotly-plot')._fullData[0].z,"
        " row => Math.max(...Array.from(row, v => v === null || Number.isNaN(v) ? 0 : v)))"
    )
    order = heat["layout"]["yaxis"]["categoryarray"]
    assert peaks[0] == max(peaks) and sorted(order) == sorted(labels)
    # drawn top to bottom in that order
    drawn = page.locator("#pf-store-trend-fig .ytick text").evaluate_all(
        "els => els.map(e => [e.getBoundingClientRect().top, e.textContent])"
    )
    assert [name for _, name in sorted(drawn)] == order
    screenshot(page, "scale-200-overview-trend")
    # every store, each on its own label
    page.locator("#pf-store-trend-all").click()
    page.wait_for_url("**/?trend=all*")
    page.wait_for_function(
        "() => document.querySelectorAll('#pf-store-trend-fig .ytick text').length === 200", timeout=60_000
    )
    labels = _svg_texts(page, "#pf-store-trend-fig .ytick text")
    assert sorted(labels) == stores
    # labels do not overlap: each row's label sits below the previous one
    tops = page.locator("#pf-store-trend-fig .ytick text").evaluate_all(
        "els => els.map(e => e.getBoundingClientRect()).map(r => [r.top, r.bottom])"
    )
    tops.sort()
    assert all(b[0] >= a[1] - 0.5 for a, b in itertools.pairwise(tops))
    # the outage is hatched on its store's row
    heat = _plot(page, "pf-store-trend-fig")
    down = next(t for t in heat["data"] if t["name"] == "store down (hatched)")
    assert sorted(down["y"]) == sorted(periods["store"])
    screenshot(page, "scale-200-overview-trend-all")


def test_what_happened_fits_a_phone(demo_server: Server, browser) -> None:  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport={"width": 390, "height": 844})
    pg = context.new_page()
    try:
        open_page(pg, demo_server.base + "/")
        pg.locator("#pf-incidents").scroll_into_view_if_needed()
        assert pg.evaluate("() => document.scrollingElement.scrollWidth") <= 390
        assert pg.locator("#pf-incidents > li").first.bounding_box()["width"] <= 390  # type: ignore[index]
    finally:
        context.close()
