"""Issue 15 in Chromium: the first screen says what is wrong and where to click; grids put the
urgent first; the model's words are explained where they appear. Structure is asserted from the
page (sizes, overlaps, computed colours, order, link targets); expected values from the Parquet."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.e2e.conftest import Server, console_error, screenshot
from tests.e2e.test_dashboard import WE_FID, busiest_folder, open_page, table

pytestmark = pytest.mark.e2e

VERMILLION = "rgb(213, 94, 0)"
OVERDUE_TEXT = "rgb(144, 99, 0)"  # overdue's orange darkened for text (#906300, 5.3:1 on white)


def boxes(pg, selector: str) -> list[dict[str, float]]:  # type: ignore[no-untyped-def]
    return pg.locator(selector).evaluate_all(
        "els => els.map(e => { const r = e.getBoundingClientRect(); "
        "return {x: r.x, y: r.y, w: r.width, h: r.height, right: r.right, bottom: r.bottom}; })"
    )


def overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        a["x"] < b["right"] - 0.5
        and b["x"] < a["right"] - 0.5
        and a["y"] < b["bottom"] - 0.5
        and b["y"] < a["bottom"] - 0.5
    )


def seconds(text: str) -> int:
    """``2 d 4 h``, ``7 h 35 min``, ``3 min``, ``40 s`` back to seconds."""
    units = {"d": 86400, "h": 3600, "min": 60, "s": 1}
    return sum(int(n) * units[u] for n, u in re.findall(r"(\d+) (d|h|min|s)\b", text))


def expected_headline(data) -> dict[str, int]:  # type: ignore[no-untyped-def]
    stores, replicas, entries = (
        table(data, "stores"),
        table(data, "replicas"),
        table(data, "backfill_entries"),
    )
    summary = table(data, "summary").iloc[0]
    return {
        "stores-down": int((stores["status"] == "down").sum()),
        "overdue": int((replicas["health"] == "overdue").sum()),
        # content at risk: what is so (at_risk_count), never what a store believes only it holds
        "at-risk": int(replicas["at_risk_count"].sum()),
        "open-entries": int((entries["state"] == "open").sum()),
        "rejected": int(summary["rejected"]),
    }


@pytest.fixture
def wide(browser):  # type: ignore[no-untyped-def]
    """A 1440 x 900 page (the issue's desktop); console errors fail the test."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("console", lambda m: errors.append(m.text) if console_error(m, pg) else None)
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.set_default_timeout(20_000)
    yield pg
    context.close()
    assert errors == []


# -- the overview's first screen --------------------------------------------------------------


@pytest.mark.parametrize("dataset", ["worked-example", "demo"])
def test_headline_counts_above_the_fold_link_to_the_filtered_views(
    dataset: str, we_server: Server, demo_server: Server, wide
) -> None:  # type: ignore[no-untyped-def]
    server = we_server if dataset == "worked-example" else demo_server
    want = expected_headline(server.data)
    open_page(wide, server.base + "/")
    stats = wide.locator("#pf-headline .pf-stat")
    keys = [k.removeprefix("pf-stat-") for k in stats.evaluate_all("els => els.map(e => e.id)")]
    assert keys == ["stores-down", "overdue", "at-risk", "open-entries", "rejected"]
    shown = {k: int(wide.locator(f"#pf-stat-{k} .pf-stat-count").inner_text().replace(",", "")) for k in keys}
    assert shown == want
    # on the first screen, before the stores, in one row that does not overlap
    cards = boxes(wide, "#pf-headline .pf-stat")
    assert all(b["bottom"] <= 900 for b in cards)
    assert max(b["bottom"] for b in cards) < boxes(wide, "#pf-stores")[0]["y"]
    assert len({round(b["y"]) for b in cards}) == 1
    assert not any(overlap(a, b) for i, a in enumerate(cards) for b in cards[i + 1 :])
    # big numbers: at least twice the body text; red when something is wrong (open backfill entries,
    # normal between messages, are information: plain text), muted when nothing is
    body = float(wide.evaluate("() => parseFloat(getComputedStyle(document.body).fontSize)"))
    for k in keys:
        count = wide.locator(f"#pf-stat-{k} .pf-stat-count")
        assert float(count.evaluate("e => parseFloat(getComputedStyle(e).fontSize)")) >= 2 * body
        colour = count.evaluate("e => getComputedStyle(e).color")
        assert (colour == VERMILLION) == (want[k] > 0 and k != "open-entries"), (k, colour)
    hrefs = {k: wide.locator(f"#pf-stat-{k} a.pf-stat-link").get_attribute("href") for k in keys}
    assert hrefs == {
        "stores-down": "/?status=down#pf-stores",
        "overdue": "/backfill?overdue=1",
        "at-risk": "/replicas?at_risk=1",
        "open-entries": "/backfill",
        "rejected": "/rejects",
    }
    screenshot(wide, f"{dataset}-overview-headline")


def test_headline_links_open_exactly_what_they_count(demo_server: Server, wide) -> None:  # type: ignore[no-untyped-def]
    data = demo_server.data
    stores, replicas, entries = (
        table(data, "stores"),
        table(data, "replicas"),
        table(data, "backfill_entries"),
    )
    open_page(wide, demo_server.base + "/")
    wide.locator("#pf-stat-overdue a.pf-stat-link").click()
    wide.wait_for_url("**/backfill?overdue=1")
    wide.wait_for_selector("#backfill-grid .ag-row")
    grid = wide.locator("#backfill-grid .ag-center-cols-container .ag-row")
    pairs = {
        (r["observer"], r["fid"])
        for r in grid.evaluate_all(
            "rows => rows.map(r => ({observer: r.querySelector('[col-id=observer]').innerText,"
            " fid: r.querySelector('[col-id=fid]') ? r.querySelector('[col-id=fid]').innerText : ''}))"
        )
    }
    fids = set(wide.locator("#backfill-grid .ag-pinned-left-cols-container [col-id=fid]").all_inner_texts())
    overdue = replicas[replicas["health"] == "overdue"]
    assert {o for o, _ in pairs} == set(overdue["store"]) and fids == set(overdue["fid"])
    # content at risk: the replicas holding it (what is so), most first
    open_page(wide, demo_server.base + "/")
    wide.locator("#pf-stat-at-risk a.pf-stat-link").click()
    wide.wait_for_url("**/replicas?at_risk=1")
    wide.wait_for_selector("#pf-replicas-count")
    risky = replicas[replicas["at_risk_count"] > 0]
    got = wide.locator("#pf-replica-list tbody td.pf-col-fid").all_inner_texts() if len(risky) else []
    assert sorted(got) == sorted(risky["fid"])
    risk = [
        int(t.replace(",", ""))
        for t in wide.locator("#pf-replica-list tbody td.pf-col-at_risk_count").all_inner_texts()
    ]
    assert risk == sorted(risk, reverse=True)
    # stores down: the store list, filtered
    open_page(wide, demo_server.base + "/")
    wide.locator("#pf-stat-stores-down a.pf-stat-link").click()
    wide.wait_for_selector("#pf-stores-filter")
    shown = wide.locator("#pf-stores td.pf-col-store").all_inner_texts()
    assert sorted(shown) == sorted(stores.loc[stores["status"] == "down", "store"])
    assert len(entries) > 0


def test_lag_heatmap_is_absolute_labels_its_diagonal_and_opens_a_store(demo_server: Server, wide) -> None:  # type: ignore[no-untyped-def]
    stores = table(demo_server.data, "stores").sort_values(["site", "store"])["store"].tolist()
    open_page(wide, demo_server.base + "/")
    fig = wide.locator("#pf-lag-fig .js-plotly-plot")
    scale = fig.evaluate(
        "gd => { const t = gd._fullData[0]; return {zmin: t.zmin, zmax: t.zmax, zauto: t.zauto}; }"
    )
    assert scale == {"zmin": 0, "zmax": 1000, "zauto": False}
    # the diagonal is drawn and says "self", once per store
    texts = fig.evaluate("gd => Array.from(gd.querySelectorAll('text')).map(t => t.textContent)")
    assert texts.count("self") >= len(stores)
    # a click on a cell opens the observer's store page at its partners
    i, j = 1, 0
    for attempt in range(3):
        # a click plotly.js does not see (once, in a loaded CI run, none followed in 20 s) is
        # clicked again: what is asserted is where a seen click goes
        if f"/store/{stores[i]}" in wide.url:  # a slow one arrived meanwhile
            break
        fig.scroll_into_view_if_needed()
        point = fig.evaluate(
            f"gd => {{ const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, r = gd.getBoundingClientRect();"
            f" return {{x: r.x + xa._offset + xa.d2p({j}), y: r.y + ya._offset + ya.d2p({i})}}; }}"
        )
        wide.mouse.move(point["x"], point["y"])
        wide.mouse.click(point["x"], point["y"])
        try:
            wide.wait_for_url(f"**/store/{stores[i]}#pf-behind-section", timeout=10_000)
            break
        except PlaywrightTimeout:
            if attempt == 2:
                raise
    wide.wait_for_selector("#pf-behind-section")
    assert wide.locator("main h1").inner_text() == f"Store {stores[i]}"
    # and a bar of "Replicas by health" opens its store
    open_page(wide, demo_server.base + "/")
    bars = wide.locator("#pf-health-fig .js-plotly-plot")
    bars.scroll_into_view_if_needed()
    store = bars.evaluate("gd => gd._fullLayout.yaxis._categories[0]")
    point = bars.evaluate(
        "gd => { const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis,"
        " r = gd.getBoundingClientRect(); return {x: r.x + xa._offset + xa.d2p(0.5),"
        " y: r.y + ya._offset + ya.d2p(0)}; }"
    )
    wide.mouse.move(point["x"], point["y"])
    wide.mouse.click(point["x"], point["y"])
    wide.wait_for_url(f"**/store/{store}")


def test_folders_needing_attention_says_how_many_more(demo_server: Server, wide) -> None:  # type: ignore[no-untyped-def]
    replicas, entries = table(demo_server.data, "replicas"), table(demo_server.data, "backfill_entries")
    open_ = entries[entries["state"] == "open"]
    per = (
        replicas.assign(risk=replicas["at_risk_count"], od=(replicas["health"] == "overdue").astype(int))
        .groupby("fid")
        .agg(m=("missing_count", "sum"), r=("risk", "sum"), o=("od", "sum"))
    )
    per["e"] = open_.groupby("fid").size().reindex(per.index).fillna(0)
    total = int(((per["m"] > 0) | (per["r"] > 0) | (per["o"] > 0) | (per["e"] > 0)).sum())
    assert total > 15
    open_page(wide, demo_server.base + "/")
    text = wide.locator("#pf-worst-count").inner_text()
    assert text.startswith(f"{total:,} folders need attention") and f"{total - 15:,} more" in text
    assert wide.locator("#pf-worst tbody tr").count() == 15
    wide.locator("#pf-worst-all").click()
    wide.wait_for_function(f"() => document.querySelectorAll('#pf-worst tbody tr').length === {total}")


# -- the backfill grid ------------------------------------------------------------------------


def grid_column(pg, col: str) -> list[str]:  # type: ignore[no-untyped-def]
    """A column's values in display order (after the grid's sort and filters), every row, drawn or not."""
    return pg.evaluate(
        "() => { const out = []; dash_ag_grid.getApi('backfill-grid').forEachNodeAfterFilterAndSort("
        f"n => out.push(String(n.data['{col}'] ?? ''))); return out; }}"
    )


def test_backfill_grid_puts_the_overdue_first_then_the_longest_open(demo_server: Server, wide) -> None:  # type: ignore[no-untyped-def]
    entries = table(demo_server.data, "backfill_entries")
    open_ = entries[entries["state"] == "open"]
    open_page(wide, demo_server.base + "/backfill")
    wide.wait_for_selector("#backfill-grid .ag-row")
    overdue, ages = grid_column(wide, "overdue"), [seconds(t) for t in grid_column(wide, "open_for")]
    assert len(overdue) == len(open_)
    n = int((open_["requests"] >= 2).sum())
    assert n > 0 and overdue == ["yes"] * n + ["no"] * (len(open_) - n)
    assert ages[:n] == sorted(ages[:n], reverse=True) and ages[n:] == sorted(ages[n:], reverse=True)
    assert set(grid_column(wide, "new_replica")) <= {"yes", "no"}
    # the health and overdue columns, and "open for", are on screen at 1440 px without scrolling
    grid = boxes(wide, "#backfill-grid")[0]
    for col in ("overdue", "health", "open_for"):
        head = boxes(wide, f"#backfill-grid .ag-header-cell[col-id={col}]")[0]
        assert grid["x"] <= head["x"] and head["right"] <= grid["right"], col
        assert head["w"] >= 100
        label = wide.locator(f"#backfill-grid .ag-header-cell[col-id={col}] .ag-header-cell-text")
        assert label.evaluate("e => e.scrollWidth <= e.clientWidth"), col  # the name is not cut off
    badge = wide.locator("#backfill-grid .ag-row[row-index='0'] [col-id=health] .pf-badge")
    assert badge.evaluate("e => getComputedStyle(e).color") == OVERDUE_TEXT  # overdue's colour
    # "open for" sorts as a duration: ascending by a click on its header
    wide.locator("#backfill-grid .ag-header-cell[col-id=overdue] .ag-header-cell-label").click(modifiers=[])
    open_for = "#backfill-grid .ag-header-cell[role=columnheader][col-id=open_for]"
    for _ in range(2):  # each click sorts it the other way: wait until the header says so
        was = wide.locator(open_for).get_attribute("aria-sort")
        wide.locator(f"{open_for} .ag-header-cell-label").click()
        wide.wait_for_selector(f'{open_for}:not([aria-sort="{was}"])')
    sorted_ages = [seconds(t) for t in grid_column(wide, "open_for")]
    assert sorted_ages in (sorted(sorted_ages), sorted(sorted_ages, reverse=True))
    screenshot(wide, "demo-backfill-1440")


# -- the model's words ------------------------------------------------------------------------


def test_every_question_mark_leads_to_its_glossary_entry(
    we_server: Server, demo_server: Server, wide
) -> None:  # type: ignore[no-untyped-def]
    open_page(wide, demo_server.base + "/glossary")
    anchors = set(wide.locator("#pf-glossary dt").evaluate_all("els => els.map(e => e.id)"))
    fid = busiest_folder(demo_server.data)
    seen: set[str] = set()
    for server, path in (
        (demo_server, "/"),
        (demo_server, f"/folder/{fid}"),
        (demo_server, "/store/PFJNB02"),
        (demo_server, "/backfill"),
        (we_server, f"/folder/{WE_FID}"),
    ):
        open_page(wide, server.base + path)
        hrefs = wide.locator("main a.pf-term").evaluate_all("els => els.map(e => e.getAttribute('href'))")
        assert hrefs, path
        for h in hrefs:
            assert h.startswith("/glossary#") and h.split("#", 1)[1] in anchors, (path, h)
        seen |= {h.split("#", 1)[1] for h in hrefs}
    assert {"overdue", "not-told", "down", "content-at-risk", "responder-groups", "search-groups"} & seen
    assert {"overdue", "not-told", "content-at-risk"} <= seen
    # a click lands on the entry, scrolled into view and marked
    open_page(wide, demo_server.base + "/backfill")
    wide.locator("#pf-backfill-count a.pf-term").click()
    wide.wait_for_url("**/glossary#overdue")
    wide.wait_for_selector("#overdue.pf-targeted")
    top = boxes(wide, "#overdue")[0]["y"]
    assert -2 <= top < 300
    assert "two requests or more" in wide.locator("#overdue + dd").inner_text()


def test_titles_name_the_page_and_unknown_addresses_answer_404(we_server: Server, wide) -> None:  # type: ignore[no-untyped-def]
    for path, title in (
        (f"/folder/{WE_FID}", f"pfscope · folder {WE_FID}"),
        ("/store/PFS2", "pfscope · store PFS2"),
        ("/backfill", "pfscope · backfill"),
        ("/glossary", "pfscope · glossary"),
        ("/", "pfscope · overview"),
    ):
        open_page(wide, we_server.base + path)
        wide.wait_for_function(f"() => document.title === {title!r}")
    for path, status, heading in (
        ("/", 200, "Overview"),
        ("/no/such/page", 404, "Page not found"),
        ("/folder/1-12", 404, "Folder not found"),
        ("/store/NOPE", 404, "Store not found"),
        (f"/folder/{WE_FID}", 200, "Folder"),
    ):
        response = wide.goto(we_server.base + path)
        assert response is not None and response.status == status, path
        wide.wait_for_selector("main h1")
        assert wide.locator("main h1").inner_text().startswith(heading)


def test_words_on_screen_agree(we_server: Server, demo_server: Server, wide) -> None:  # type: ignore[no-untyped-def]
    # the hierarchy has a name, in the title and in every breadcrumb
    open_page(wide, we_server.base + "/folder/1-1")
    assert wide.locator("#pf-folder-path").inner_text() == "public folder hierarchy"
    open_page(wide, we_server.base + f"/folder/{WE_FID}")
    assert wide.locator(".pf-breadcrumb li").first.inner_text() == "public folder hierarchy"
    text = wide.locator("main").inner_text()
    assert not re.search(r"(?<![\d,])1 CNs\b", text) and "not told: not told yet" not in text
    heads = (
        wide.locator("#pf-responders th").all_inner_texts()
        if wide.locator("#pf-responders th").count()
        else []
    )
    responders = table(we_server.data, "responders")
    responders = responders[responders["fid"] == WE_FID]
    if len(responders):
        assert any(h.startswith("model names it") for h in heads) and any(
            h.startswith("should respond") for h in heads
        )
        assert not any(h.strip() == "expected" for h in heads)
        groups = [g for g in wide.locator("#pf-responders td.pf-col-group").all_inner_texts() if g]
        assert groups and all(re.fullmatch(r"group [1-6]: .+|oldest copy \(fewest CNs\)", g) for g in groups)
    # a down store does not call its replicas "in sync" without saying it is down
    stores = table(demo_server.data, "stores")
    down = stores.loc[stores["status"] == "down", "store"].tolist()
    assert down
    open_page(wide, demo_server.base + f"/store/{down[0]}")
    healths = wide.locator("#pf-store-replicas td.pf-col-health").all_inner_texts()
    # (what it lacks follows: "in sync (store down), lacks 6 CNs: not told yet")
    assert healths and all(
        re.match(r"[a-z ]+ \(store down\)(, lacks .+)?$", h)
        for h in healths
        if not h.startswith(("delete", "deleted"))
    )
    # empty tables: a sentence, no header row above it
    assert wide.locator(".pf-table-wrap:has(.pf-none) table").count() == 0
    # run facts: plurals agree
    open_page(wide, demo_server.base + "/")
    facts = wide.locator("#pf-run-facts").inner_text()
    assert not re.search(r"\b1 (duplicates|lines)\b", facts)


def test_cn_sets_break_only_between_ranges(demo_server: Server, browser) -> None:  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    pg = context.new_page()
    try:
        fid = busiest_folder(demo_server.data)
        open_page(pg, demo_server.base + f"/folder/{fid}")
        lines = pg.locator("#pf-matrix .pf-cn-range").evaluate_all(
            "els => els.map(e => e.getClientRects().length)"
        )
        assert lines and set(lines) == {1}
        # the set still reads as its canonical text
        cell = pg.locator("#pf-matrix td.pf-cell").first
        assert cell.get_attribute("data-cnset") in cell.inner_text().replace("\n", "")
        screenshot(pg, "demo-folder-cnsets")
    finally:
        context.close()


def luminance(css: str) -> float:
    """Relative lightness of a computed ``rgb()``/``rgba()`` colour (0 black, 1 white)."""
    r, g, b = (int(x) for x in re.findall(r"\d+", css)[:3])
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255


def test_dark_preference_darkens_charts_grid_and_dropdown(demo_server: Server, browser) -> None:  # type: ignore[no-untyped-def]
    context = browser.new_context(color_scheme="dark", viewport={"width": 1440, "height": 900})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    try:
        open_page(pg, demo_server.base + "/")
        figures = pg.locator("main .pf-figure").evaluate_all("els => els.map(e => '#' + e.id)")
        assert {"#pf-health-fig", "#pf-lag-fig"} <= set(figures)
        for fig in figures:
            svg = pg.locator(f"{fig} .main-svg").first
            assert svg.evaluate("e => getComputedStyle(e).backgroundColor") in (
                "rgba(0, 0, 0, 0)",
                "transparent",
            )
            # every axis's tick labels and titles, of every subplot, are light on the dark page
            fills = pg.locator(
                f'{fig} g[class$="tick"] > text, {fig} g[class^="g-"][class$="title"] text'
            ).evaluate_all("els => els.map(e => getComputedStyle(e).fill)")
            assert fills and all(luminance(c) > 0.8 for c in fills), (fig, fills[:5])
        # no white box: the figure's area is the page's colour
        assert pg.locator("#pf-lag-fig").evaluate("e => getComputedStyle(e).backgroundColor") in (
            "rgba(0, 0, 0, 0)",
            "transparent",
        )
        screenshot(pg, "demo-overview-dark")
        open_page(pg, demo_server.base + "/backfill")
        pg.wait_for_selector("#backfill-grid .ag-row")
        for sel in (".ag-root-wrapper", ".ag-header", ".ag-row"):
            bg = pg.locator(f"#backfill-grid {sel}").first.evaluate(
                "e => getComputedStyle(e).backgroundColor"
            )
            assert luminance(bg) < 0.2, (sel, bg)
        cell = pg.locator("#backfill-grid .ag-row .ag-cell[col-id=requests]").first
        assert luminance(cell.evaluate("e => getComputedStyle(e).color")) > 0.8
        screenshot(pg, "demo-backfill-dark")
        open_page(pg, demo_server.base + f"/folder/{busiest_folder(demo_server.data)}")
        dropdown = pg.locator("#folder-request")
        boxes_bg = dropdown.evaluate(
            "e => Array.from(e.querySelectorAll('*')).concat([e]).map(x => getComputedStyle(x).backgroundColor)"
            ".filter(c => c !== 'rgba(0, 0, 0, 0)')"
        )
        assert boxes_bg and all(luminance(c) < 0.2 for c in boxes_bg), boxes_bg
    finally:
        context.close()
    assert errors == []


def test_a_phone_sees_every_control_without_overlaps(demo_server: Server, browser) -> None:  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    try:
        fid = busiest_folder(demo_server.data)
        for path in ("/", f"/folder/{fid}", "/backfill", "/glossary"):
            open_page(pg, demo_server.base + path)
            # no sideways scrolling of the page; the search box and its button are on screen
            assert pg.evaluate("() => document.documentElement.scrollWidth") <= 390, path
            for sel in ("#pf-search", "#pf-search-go"):
                b = boxes(pg, sel)[0]
                assert b["x"] >= 0 and b["right"] <= 390, (path, sel, b)
        open_page(pg, demo_server.base + "/")
        cards = boxes(pg, "#pf-headline .pf-stat")
        assert all(b["right"] <= 390 for b in cards)
        assert not any(overlap(a, b) for i, a in enumerate(cards) for b in cards[i + 1 :])
        # the attention table shows more than FID and path: the counts that rank it are on screen
        heads = boxes(pg, "#pf-worst thead th")
        assert len(heads) == 8 and all(h["right"] <= 390 for h in heads[:4])
        # the lag heatmap's numbers stay readable (it scrolls sideways inside its section instead)
        sizes = pg.evaluate(
            "() => Array.from(document.querySelectorAll('#pf-lag-fig text'))"
            ".filter(t => /^[0-9,]+$|^self$/.test(t.textContent))"
            ".map(t => parseFloat(getComputedStyle(t).fontSize))"
        )
        assert sizes and min(sizes) >= 10
        screenshot(pg, "demo-overview-390")
        open_page(pg, demo_server.base + f"/folder/{fid}")
        # "Download report" does not cover the title; the slider's visible labels do not overlap
        assert not overlap(boxes(pg, "main h1")[0], boxes(pg, "#folder-report-link")[0])
        labels = [
            b
            for b in pg.locator("#folder-slider .dash-slider-mark").evaluate_all(
                "els => els.filter(e => parseFloat(getComputedStyle(e).fontSize) > 0 && e.innerText.trim())"
                ".map(e => { const r = e.getBoundingClientRect();"
                " return {x: r.x, y: r.y, w: r.width, h: r.height, right: r.right, bottom: r.bottom}; })"
            )
        ]
        assert len(labels) >= 2
        assert not any(overlap(a, b) for i, a in enumerate(labels) for b in labels[i + 1 :])
        assert all(b["x"] >= 0 and b["right"] <= 390 for b in labels)
        screenshot(pg, "demo-folder-390")
    finally:
        context.close()
    assert errors == []


def test_every_table_downloads_as_csv(demo_server: Server, page, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import csv

    open_page(page, demo_server.base + "/")
    tables = page.locator("main table.pf-table[id]").evaluate_all("els => els.map(e => e.id)")
    assert "pf-worst" in tables
    page.wait_for_function(f"() => {len(tables)} === document.querySelectorAll('main button.pf-csv').length")
    with page.expect_download() as info:
        page.locator("#pf-worst-csv").click()
    assert info.value.suggested_filename == "pfscope-worst.csv"
    path = tmp_path / "worst.csv"
    info.value.save_as(path)
    with path.open(newline="", encoding="utf-8-sig") as fh:
        rows = list(csv.reader(fh))
    assert rows[0][:3] == ["FID", "path", "content at risk (CNs)"]  # the "?" links are left out
    assert [r[0] for r in rows[1:]] == page.locator("#pf-worst tbody td.pf-col-fid").all_inner_texts()
    assert [r[1] for r in rows[1:]] == page.locator("#pf-worst tbody td.pf-col-path").all_inner_texts()


def test_the_candidate_table_answers_why_not_that_store(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    cands, folders = table(demo_server.data, "backfill_candidates"), table(demo_server.data, "folders")
    replicas_of = folders.set_index("fid")["replicas"]
    found = [
        (
            key,
            str(g["fid"].iloc[0]),
            sorted(
                set(replicas_of[str(g["fid"].iloc[0])]) - {str(g["observer"].iloc[0])} - set(g["candidate"])
            ),
        )
        for key, g in cands.groupby(["entry_id", "attempt"])
    ]
    found = [x for x in found if x[2]]
    assert found, "the demo has a request with a non-candidate"
    (entry_id, attempt), fid, others = found[0]
    open_page(page, demo_server.base + f"/folder/{fid}?request={entry_id}:{attempt}")
    page.wait_for_selector("#pf-non-candidates")
    assert sorted(page.locator("#pf-non-candidates td.pf-col-store").all_inner_texts()) == others
    reasons = page.locator("#pf-non-candidates td.pf-col-reason").all_inner_texts()
    assert all("holds none of the CNs" in r or "never heard from it" in r for r in reasons)
    # after the candidates, never above them
    assert boxes(page, "#pf-candidates")[0]["bottom"] <= boxes(page, "#pf-non-candidates")[0]["y"]


def test_search_finds_servers_and_sites(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    stores = table(demo_server.data, "stores")
    one = stores.iloc[0]
    open_page(page, demo_server.base + "/")
    box = page.locator("#pf-search")
    box.fill(str(one["server"]).lower())
    box.press("Enter")
    page.wait_for_url(f"**/store/{one['store']}")
    site = str(one["site"])
    box = page.locator("#pf-search")
    box.fill(site)
    box.press("Enter")
    page.wait_for_url(re.compile(r"/search\?q="))
    page.wait_for_function("() => document.querySelector('main h1').innerText.startsWith('Search')")
    shown = page.locator("main li a").all_inner_texts()
    assert sorted(shown) == sorted(stores.loc[stores["site"] == site, "store"])


def test_the_request_picker_works_from_the_keyboard(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    fid = busiest_folder(demo_server.data)
    open_page(page, demo_server.base + f"/folder/{fid}")
    page.locator("#folder-slider [role=slider]").focus()
    for _ in range(120):
        page.keyboard.press("Tab")
        if page.evaluate("() => !!document.activeElement.closest('#folder-request')"):
            break
    else:
        pytest.fail("Tab never reached the request picker")
    page.keyboard.press("Enter")  # opens the list, focus in its search box
    page.wait_for_function("() => document.activeElement.classList.contains('dash-dropdown-search')")
    page.keyboard.press("ArrowDown")  # the first request
    page.wait_for_function(
        "() => document.activeElement.classList.contains('dash-options-list-option-checkbox')"
    )
    page.keyboard.press("Enter")
    page.wait_for_function("() => new URLSearchParams(location.search).get('request') !== null")
    page.wait_for_selector("#pf-candidates")


def test_the_matrix_keeps_its_size_while_the_slider_replays(we_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    open_page(page, we_server.base + f"/folder/{WE_FID}")
    before = boxes(page, "#pf-matrix")[0]
    columns = boxes(page, "#pf-matrix thead th")
    thumb = page.locator("#folder-slider [role=slider]")
    thumb.focus()
    thumb.press("Home")
    page.wait_for_function("() => document.querySelector('#folder-at').innerText.startsWith('at ')")
    page.wait_for_load_state("networkidle")
    # the observers differ in time (a store joins), but no column changes its width with its content
    widths_then = {round(c["w"]) for c in boxes(page, "#pf-matrix thead th")[1:]}
    widths_now = {round(c["w"]) for c in columns[1:]}
    assert len(widths_now) == 1 and widths_then == widths_now
    assert round(boxes(page, "#pf-matrix thead th")[0]["w"]) == round(columns[0]["w"])
    assert before["w"] > 0
    # the same columns and rows at every step (an observer with no row yet has empty cells): the
    # table's own width and the step's columns do not change either
    assert len(boxes(page, "#pf-matrix thead th")) == len(columns)
    assert round(boxes(page, "#pf-matrix")[0]["w"]) == round(before["w"])
    assert page.locator("#pf-matrix tbody td:not(.pf-cell)").count() > 0
