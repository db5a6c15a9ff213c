"""The dashboard in a real browser against a live ``pfscope serve`` on real published runs.

Expected values come from the published Parquet, read here with pandas (not through the app).
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from urllib.parse import parse_qs, quote, urlparse

import pandas as pd
import pytest

from tests.e2e.conftest import Server, screenshot, start_server, stop_server
from tests.published_runs import HOSTILE_CHILD, HOSTILE_CONFLICT_LINE, HOSTILE_LINES, HOSTILE_PATH

pytestmark = pytest.mark.e2e

WE_FID = "1-123"


def table(data: Path, name: str) -> pd.DataFrame:
    latest = json.loads((data / "LATEST").read_text())
    frame = pd.read_parquet(data / latest["path"] / name)
    for col in frame.columns:
        if str(frame[col].dtype).startswith("datetime64"):
            frame[col] = pd.to_datetime(frame[col], utc=True)
    return frame


def open_page(pg, url: str) -> None:  # type: ignore[no-untyped-def]
    """Go, wait for the page callback, then for every figure to be drawn by plotly.js."""
    pg.goto(url)
    pg.wait_for_selector("main h1")
    pg.wait_for_load_state("networkidle")
    if "/folder/" in url and not pg.locator("main.pf-not-found, .pf-not-found").count():
        # the sections drawn as markup (app/frozen.py) appear once Dash's Markdown chunk has run
        pg.wait_for_function(
            "() => ['pf-matrix', 'pf-replicas', 'pf-entries', 'pf-pending']"
            ".every(id => document.getElementById(id))"
        )
    figures = pg.locator("main .pf-figure").count()
    if figures:
        pg.wait_for_function(
            f"() => document.querySelectorAll('main .pf-figure .main-svg').length >= {figures}"
        )
    draw_lazy_charts(pg)


def draw_lazy_charts(pg) -> None:  # type: ignore[no-untyped-def]
    """Scroll to each chart drawn when it is about to be seen (app/lazy_figure.py: the overview's),
    wait until it is drawn, then back to where the page was."""
    charts = pg.locator("main [data-lazy]").all()
    if not charts:
        return
    y = pg.evaluate("() => window.scrollY")
    for chart in charts:
        chart.scroll_into_view_if_needed()
        pg.wait_for_function("el => el.hasAttribute('data-drawn')", arg=chart.element_handle())
    pg.evaluate(f"() => window.scrollTo(0, {y})")


def matrix_cells(pg) -> dict[tuple[str, str], str]:  # type: ignore[no-untyped-def]
    return {
        (c["observer"], c["subject"]): c["cnset"]
        for c in pg.locator("#pf-matrix td.pf-cell").evaluate_all(
            "cells => cells.map(c => ({observer: c.dataset.observer, subject: c.dataset.subject, cnset: c.dataset.cnset}))"
        )
    }


def expected_at(history: pd.DataFrame, at: pd.Timestamp) -> dict[tuple[str, str], str]:
    """Each row's CN set at ``at``: the last history row at or before it (input order breaks ties)."""
    past = history[history["at"] <= at]
    last = past.groupby(["observer", "subject"], sort=False).tail(1)
    return {(r.observer, r.subject): r.cnset or "" for r in last.itertuples(index=False)}


def busiest_folder(data: Path) -> str:
    entries = table(data, "backfill_entries")
    entries = entries[entries["fid"] != "1-1"]
    return str(entries.groupby("fid").size().sort_values(ascending=False).index[0])


# -- every page renders, without console errors ---------------------------------------------


@pytest.mark.parametrize("dataset", ["worked-example", "demo"])
def test_every_page_renders(dataset: str, we_server: Server, demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    server = we_server if dataset == "worked-example" else demo_server
    fid = WE_FID if dataset == "worked-example" else busiest_folder(server.data)
    store = sorted(table(server.data, "stores")["store"])[0]
    pages = {
        "overview": ("/", "Overview"),
        "folder": (f"/folder/{fid}", "Folder"),
        "store": (f"/store/{store}", "Store"),
        "backfill": ("/backfill", "Open backfill entries"),
        "rejects": ("/rejects", "Rejected input lines"),
        "search": ("/search?q=IPM", "Search: IPM"),
        "unknown-page": ("/no/such/page", "Page not found"),
        "unknown-folder": ("/folder/1-12", "Folder not found"),
        "unknown-store": (f"/store/{store[:-1]}X", "Store not found"),
        "bad-at": (f"/folder/{fid}?at=garbage", "Bad at parameter"),
    }
    for name, (path, heading) in pages.items():
        open_page(page, server.base + path)
        assert page.locator("main h1").first.inner_text().startswith(heading), path
        screenshot(page, f"{dataset}-{name}")


def test_not_found_pages_suggest_close_matches(we_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    open_page(page, we_server.base + "/folder/1-12")
    assert page.get_by_role("link", name=f"{WE_FID} ").first.get_attribute("href") == f"/folder/{WE_FID}"
    open_page(page, we_server.base + "/store/PFS")
    names = page.locator(".pf-not-found li a").all_inner_texts()
    assert {"PFS1", "PFS2", "PFS3"} <= set(names)
    open_page(page, we_server.base + f"/folder/{WE_FID}?at=garbage")
    assert "RFC 3339" in page.locator("main").inner_text()
    assert page.get_by_role("link", name=f"{WE_FID} as of the run").count() == 1


# -- the folder page ------------------------------------------------------------------------


@pytest.mark.parametrize("dataset", ["worked-example", "demo"])
def test_matrix_shows_the_published_state_tables(
    dataset: str, we_server: Server, demo_server: Server, page
) -> None:  # type: ignore[no-untyped-def]
    server = we_server if dataset == "worked-example" else demo_server
    fid = WE_FID if dataset == "worked-example" else busiest_folder(server.data)
    state = table(server.data, "state_table")
    state = state[state["fid"] == fid]
    open_page(page, server.base + f"/folder/{fid}")
    shown = matrix_cells(page)
    want = {(r.observer, r.subject): r.cnset or "" for r in state.itertuples(index=False)}
    assert want, "the folder has state table rows"
    assert {k: v for k, v in shown.items() if k in want} == want
    # the diagonal carries the owned set and the last sent CN
    for r in state[state["is_self"]].itertuples(index=False):
        cell = page.locator(f'#pf-matrix td[data-observer="{r.observer}"][data-subject="{r.subject}"]')
        assert "owned" in cell.inner_text()
        if pd.notna(r.last_sent_cn):
            assert f"{r.subject}:{int(r.last_sent_cn)}" in cell.inner_text()


def test_ingested_matrix_marks_derived_cells(ingested_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    """CN sets ingest derived from Exchange's logs say so in words and have a dashed border."""
    state = table(ingested_server.data, "state_table")
    state = state[state["fid"] == WE_FID]
    assert state["derived"].any() and not state["derived"].all()
    open_page(page, ingested_server.base + f"/folder/{WE_FID}")
    for r in state.itertuples(index=False):
        cell = page.locator(f'#pf-matrix td[data-observer="{r.observer}"][data-subject="{r.subject}"]')
        assert cell.get_attribute("data-derived") == ("true" if r.derived else "false")
        assert ("≥ lower bound (derived from Exchange logs)" in cell.inner_text()) == bool(r.derived)
        style = cell.evaluate("c => getComputedStyle(c).borderTopStyle")
        assert style == ("dashed" if r.derived else "solid")
    assert "inferred from Exchange's event logs" in page.locator(".pf-legend").first.inner_text()
    screenshot(page, "ingested-folder-derived")


def test_worked_example_matrix_tells_not_told_from_lacking(we_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    """Seed 004 after the outage: PFS3 files a backfill entry for PFS1:12-16;PFS2:21-28."""
    entries = table(we_server.data, "backfill_entries")
    entry = (
        entries[(entries["observer"] == "PFS3") & (entries["fid"] == WE_FID)].sort_values("opened_at").iloc[0]
    )
    assert entry["cnset_opened"] == "PFS1:12-16;PFS2:21-28"
    at = entry["opened_at"].strftime("%Y-%m-%dT%H:%M:%SZ")
    open_page(page, we_server.base + f"/folder/{WE_FID}?at={at}")
    # PFS3's own row lacks what it has not received; PFS1 has not been told what PFS3 holds yet
    pfs3 = page.locator('#pf-matrix td[data-observer="PFS3"][data-subject="PFS3"]')
    assert "PFS1:12-16;PFS2:21-28" in pfs3.inner_text()
    states = {
        c: page.locator(f'#pf-matrix td[data-observer="{c[0]}"][data-subject="{c[1]}"]').get_attribute(
            "data-state"
        )
        for c in [("PFS1", "PFS3"), ("PFS3", "PFS1"), ("PFS1", "PFS1")]
    }
    assert states[("PFS1", "PFS1")] == "owned"
    assert states[("PFS3", "PFS1")] in ("current", "not_told", "told_later")
    if (
        states[("PFS3", "PFS1")] == "told_later"
    ):  # PFS3 holds what it was not told of: shown healthy, saying so
        cell = page.locator('#pf-matrix td[data-observer="PFS3"][data-subject="PFS1"]')
        assert "not told, holds them" in cell.inner_text()
        assert "told-later" in cell.locator("a").first.get_attribute("href")
    assert states[("PFS1", "PFS3")] in ("lacks", "not_told", "told_later")
    assert len({states[("PFS1", "PFS3")], states[("PFS1", "PFS1")]}) == 2


def test_time_slider_replays_state_history(we_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    history = table(we_server.data, "state_history")
    history = history[history["fid"] == WE_FID].sort_values("at", kind="stable")
    times = sorted(history["at"].unique())
    open_page(page, we_server.base + f"/folder/{WE_FID}")
    thumb = page.locator("#folder-slider [role=slider]")
    thumb.focus()
    thumb.press("Home")
    first = pd.Timestamp(times[0])
    page.wait_for_function("() => new URLSearchParams(location.search).get('at') !== null")
    page.wait_for_function(
        f"() => document.querySelector('#folder-at').innerText.includes('{first:%Y-%m-%dT%H:%M:%SZ}')"
    )
    assert matrix_cells(page) == expected_at(history, first)
    assert parse_qs(urlparse(page.url).query)["at"] == [first.strftime("%Y-%m-%dT%H:%M:%SZ")]
    for _ in range(5):
        thumb.press("ArrowRight")
    sixth = pd.Timestamp(times[5])
    page.wait_for_function(
        f"() => document.querySelector('#folder-at').innerText.includes('{sixth:%Y-%m-%dT%H:%M:%SZ}')"
    )
    page.wait_for_load_state("networkidle")
    assert matrix_cells(page) == expected_at(history, sixth)
    # the URL is a link to what is on screen
    shared = page.url
    open_page(page, shared)
    assert matrix_cells(page) == expected_at(history, sixth)
    # the last position is the run's as-of state
    thumb = page.locator("#folder-slider [role=slider]")
    thumb.focus()
    thumb.press("End")
    page.wait_for_function("() => document.querySelector('#folder-at').innerText === 'as of the run'")
    assert "at=" not in page.url


def test_selecting_a_request_shows_its_candidates(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    cands = table(demo_server.data, "backfill_candidates")
    per = cands.groupby(["entry_id", "attempt"]).size().sort_values(ascending=False)
    entry_id, attempt = per.index[0]
    fid = str(cands[cands["entry_id"] == entry_id]["fid"].iloc[0])
    want = cands[(cands["entry_id"] == entry_id) & (cands["attempt"] == attempt)].sort_values("rank")
    open_page(page, demo_server.base + f"/folder/{fid}")
    page.locator("#folder-request").click()
    page.get_by_role("option", name=f"entry {entry_id} attempt {attempt} ").click()
    page.wait_for_selector("#pf-candidates")
    names = page.locator("#pf-candidates tbody tr td.pf-col-candidate").all_inner_texts()
    assert names == list(want["candidate"])
    chosen = page.locator("#pf-candidates tbody tr td.pf-col-chosen").all_inner_texts()
    assert chosen == ["yes" if c else "no" for c in want["chosen"]]
    assert parse_qs(urlparse(page.url).query)["request"] == [f"{entry_id}:{attempt}"]
    # the same selection from a shared link
    open_page(page, demo_server.base + f"/folder/{fid}?request={quote(f'{entry_id}:{attempt}')}")
    assert page.locator("#pf-candidates tbody tr td.pf-col-candidate").all_inner_texts() == list(
        want["candidate"]
    )


# -- search, grid export, hostile text, rejects, new runs -----------------------------------


def test_search_goes_to_fid_store_and_path(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    folders = table(demo_server.data, "folders")
    target = folders[folders["path"].str.endswith("Atlas\\Specs")].iloc[0]
    open_page(page, demo_server.base + "/")
    for query, expected in [
        (target["fid"], f"/folder/{target['fid']}"),
        ("pfred01", "/store/PFRED01"),
        ("atlas\\specs", f"/folder/{target['fid']}"),
    ]:
        box = page.locator("#pf-search")
        box.fill(query)
        box.press("Enter")
        page.wait_for_url(f"**{expected}")
        page.wait_for_selector("main h1")
    box = page.locator("#pf-search")
    box.fill("Projects")
    page.locator("#pf-search-go").click()
    page.wait_for_url("**/search?q=Projects")
    page.wait_for_selector("#pf-search-results td.pf-col-fid")
    shown = page.locator("#pf-search-results td.pf-col-fid").all_inner_texts()
    want = folders[folders["path"].str.lower().str.contains("projects", regex=False)]["fid"]
    assert sorted(shown) == sorted(want)


def test_csv_export_downloads_the_rows_shown(demo_server: Server, page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    entries = table(demo_server.data, "backfill_entries")
    open_entries = entries[entries["state"] == "open"]
    store = open_entries.groupby("observer").size().sort_values().index[-1]
    open_page(page, demo_server.base + f"/backfill?observer={store}")
    page.wait_for_selector("#backfill-grid .ag-row")
    with page.expect_download() as info:
        page.locator("#backfill-export").click()
    path = tmp_path / "export.csv"
    info.value.save_as(path)
    with path.open(newline="", encoding="utf-8-sig") as fh:
        rows = list(csv.DictReader(fh))
    want = open_entries[open_entries["observer"] == store]
    assert sorted(r["entry"] for r in rows) == sorted(want["entry_id"])
    assert {r["store"] for r in rows} == {store}
    by_id = want.set_index("entry_id")
    as_of = table(demo_server.data, "summary")["as_of"].iloc[0]
    for r in rows:
        assert int(r["CNs remaining"]) == int(by_id.loc[r["entry"], "cnset_remaining_count"])
        # "open for" also as whole seconds: a column a spreadsheet sorts as a duration
        assert int(r["open for (s)"]) == int((as_of - by_id.loc[r["entry"], "opened_at"]).total_seconds())
    # the unfiltered grid shows every open entry of the organisation
    open_page(page, demo_server.base + "/backfill")
    assert page.locator("#pf-backfill-count").inner_text().startswith(f"{len(open_entries):,} open")


def test_hostile_folder_paths_stay_text(we_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    for path in (
        f"/folder/{WE_FID}",
        f"/folder/{HOSTILE_CHILD['fid']}",
        "/search?q=Folder1",
        "/rejects",
        "/store/PFS1",
    ):
        open_page(page, we_server.base + path)
        assert page.evaluate("() => window.__pfxss") is None, path
        assert page.locator("main img").count() == 0, path
        assert page.locator("main script").count() == 0, path
        assert page.locator("main b, main i").count() == 0, path
    open_page(page, we_server.base + f"/folder/{WE_FID}")
    assert page.locator("#pf-folder-path").inner_text() == HOSTILE_PATH
    open_page(page, we_server.base + f"/folder/{HOSTILE_CHILD['fid']}")
    crumbs = page.locator(".pf-breadcrumb li").all_inner_texts()
    assert crumbs[-2:] == [HOSTILE_PATH, HOSTILE_CHILD["path"]]


def test_rejects_banner_links_to_the_rejected_lines(we_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    rejects = table(we_server.data, "rejects")
    assert len(rejects) == len(HOSTILE_LINES)
    open_page(page, we_server.base + "/")
    banner = page.locator("#pf-rejects-banner")
    assert banner.inner_text().startswith(f"{len(rejects)} input lines")
    banner.get_by_role("link").click()
    page.wait_for_url("**/rejects")
    page.wait_for_selector("#pf-rejects")
    shown = page.locator("#pf-rejects td.pf-col-text").all_inner_texts()
    assert sorted(shown) == sorted(rejects["text"])
    assert sorted(page.locator("#pf-rejects td.pf-col-reason").all_inner_texts()) == sorted(rejects["reason"])
    # a reject an accepted line caused names it (file:line); the others name nothing
    rows = page.locator("#pf-rejects tbody tr")
    named = {
        rows.nth(i).locator("td.pf-col-line").inner_text(): rows.nth(i)
        .locator("td.pf-col-conflict_line")
        .inner_text()
        for i in range(rows.count())
    }
    events = str(we_server.data.parent / "events.jsonl")
    assert page.get_by_role("columnheader", name="conflicts with").is_visible()
    assert sorted(named.values()) == ["", "", f"{events}:{HOSTILE_CONFLICT_LINE}"]


def test_a_new_run_is_served_without_a_restart(we_data: Path, demo_data: Path, page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    data = tmp_path / "runs"
    (data / "runs").mkdir(parents=True)
    pointers = {}
    for source in (we_data, demo_data):
        latest = json.loads((source / "LATEST").read_text())
        shutil.copytree(source / latest["path"], data / latest["path"])
        pointers[source] = latest
    server = start_server(data, tmp_path / "cache", tmp_path / "serve.log")
    try:
        open_page(page, server.base + "/")  # nothing published yet: said so, no error
        assert page.locator("main h1").inner_text() == "No published run yet"
        (data / "LATEST").write_text(json.dumps(pointers[we_data]))
        open_page(page, server.base + "/")
        assert pointers[we_data]["run_id"] in page.locator("#pf-run-facts").inner_text()
        (data / "LATEST").write_text(json.dumps(pointers[demo_data]))
        open_page(page, server.base + "/")
        assert pointers[demo_data]["run_id"] in page.locator("#pf-run-facts").inner_text()
        assert page.locator("#pf-stores").get_by_role("link", name="PFRED01").count() == 1
    finally:
        stop_server(server)


def test_dark_theme_and_keyboard(demo_server: Server, browser) -> None:  # type: ignore[no-untyped-def]
    """Dark preference: dark page, light text; Tab from the top reaches the search box and the slider."""
    context = browser.new_context(color_scheme="dark", viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    fid = busiest_folder(demo_server.data)
    try:
        open_page(pg, demo_server.base + f"/folder/{fid}")
        colours = pg.evaluate(
            "() => [getComputedStyle(document.body).backgroundColor, getComputedStyle(document.body).color]"
        )
        assert colours == ["rgb(13, 17, 23)", "rgb(230, 237, 243)"]
        screenshot(pg, "demo-folder-dark")
        reached = []
        for _ in range(30):
            pg.keyboard.press("Tab")
            reached.append(
                pg.evaluate("() => document.activeElement.id || document.activeElement.getAttribute('role')")
            )
        assert "pf-search" in reached and "slider" in reached
        assert reached.index("pf-search") < reached.index("slider")
    finally:
        context.close()
    assert errors == []


def test_the_navbar_says_how_old_the_data_is_and_auto_refresh_follows_a_new_run(
    we_data: Path, demo_data: Path, page, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    data = tmp_path / "runs"
    (data / "runs").mkdir(parents=True)
    pointers = []
    for source in (we_data, demo_data):
        latest = json.loads((source / "LATEST").read_text())
        shutil.copytree(source / latest["path"], data / latest["path"])
        pointers.append(latest)
    (data / "LATEST").write_text(json.dumps(pointers[0]))
    server = start_server(data, tmp_path / "cache", tmp_path / "serve.log")
    try:
        open_page(page, server.base + "/?refresh=2")
        run = page.locator("#pf-run")
        as_of = pd.Timestamp(table(data, "summary")["as_of"].iloc[0])
        days = (pd.Timestamp.now(tz="UTC") - as_of).days
        assert run.get_attribute("data-run-id") == pointers[0]["run_id"]
        assert f"({days} d" in run.inner_text() and run.inner_text().count(" old)") == 1
        page.locator("#pf-auto-refresh input[type=checkbox]").check()
        (data / "LATEST").write_text(json.dumps(pointers[1]))  # a newer run is published
        page.wait_for_function(
            f"() => (document.getElementById('pf-run') || {{}}).dataset?.runId === '{pointers[1]['run_id']}'",
            timeout=60_000,
        )
        assert page.locator("#pf-auto-refresh input[type=checkbox]").is_checked()  # the choice is kept
        page.wait_for_load_state("networkidle")
        page.goto("about:blank")  # stop polling before the server stops
    finally:
        stop_server(server)
