"""Issue 36 item 2 in Chromium, on the demo: the forecast where the operator asks "when will it be
in sync?". The overview's recovery chart (both step lines and the floor of the replicas that will
not catch up, light and dark, and at 390 px), the causes' lines ending with the forecast, the
/backfill grid's forecast column (sorted by time, on a phone's card, in the CSV), the store
page's column and summary, and the reports. Expected values from the published ``forecast``
table read straight from Parquet (the demo: PFJNB02 is down at the as-of, its replicas held back)."""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from pfscope.app.figures.forecast import record_text
from pfscope.app.figures.outages import short_time
from pfscope.spark_jobs.model.forecast.folder import duration
from tests.e2e.conftest import Server, screenshot
from tests.e2e.test_dashboard import open_page, table
from tests.e2e.test_folder_replay import rows
from tests.e2e.test_overview_defects import grid_rows
from tests.e2e.test_readable import COLOUR_JS

pytestmark = pytest.mark.e2e

DAYS_14 = pd.Timedelta(days=14)


def forecast(data: Path) -> pd.DataFrame:
    return table(data, "forecast")


def as_of(data: Path) -> pd.Timestamp:
    return pd.Timestamp(table(data, "summary")["as_of"].iloc[0])


def waits(row: Any) -> list[str]:
    return [] if row["waits_for"] is None else list(row["waits_for"])


def expected_short(row: Any) -> str:
    """The grid's cell for a replica, from the Parquet row: in sync by when, not until the store it
    waits for is back (when its return would bring it in sync), or not within 14 days."""
    if pd.notna(row["in_sync_at"]):
        return f"in sync by ~{short_time(row['in_sync_at'])}"
    if waits(row) and pd.notna(row["after_back_s"]):
        return f"not until {' and '.join(waits(row))} is back"
    return "not within 14 days"


def reason_counts(stuck: pd.DataFrame) -> list[tuple[str, int]]:
    """Why they will not catch up: each blocked_by's reasons (without its last part when it waits
    for stores: what their return would do, as the data contract says), most replicas first."""
    parts = []
    for _, row in stuck.iterrows():
        ps = str(row["blocked_by"]).split("; ")
        parts += ps[:-1] if waits(row) and len(ps) > 1 else ps
    counts = pd.Series(parts).value_counts()
    return sorted(((str(k), int(v)) for k, v in counts.items()), key=lambda kv: (-kv[1], kv[0]))


@pytest.fixture
def context_for(browser) -> Any:  # type: ignore[no-untyped-def]
    """A page in a new context (colour scheme, viewport, phone); console and page errors fail."""
    made: list[Any] = []
    errors: list[str] = []

    def open_context(scheme: str = "light", width: int = 1440, height: int = 900, phone: bool = False) -> Any:
        context = browser.new_context(
            color_scheme=scheme,
            viewport={"width": width, "height": height},
            is_mobile=phone,
            has_touch=phone,
            accept_downloads=True,
        )
        made.append(context)
        pg = context.new_page()
        pg.set_default_timeout(20_000)
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        return pg

    yield open_context
    for context in made:
        context.close()
    assert errors == []


def utc(value: str) -> pd.Timestamp:
    """A drawn chart's time (plotly writes UTC times without their zone)."""
    ts = pd.Timestamp(value)
    return ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")


def drawn_traces(chart) -> dict[str, dict[str, Any]]:  # type: ignore[no-untyped-def]
    """A drawn chart's traces by name: x (as times), y."""
    got = chart.evaluate(
        "gd => gd._fullData.map(t => ({name: t.name, x: Array.from(t.x), y: Array.from(t.y)}))"
    )
    return {t["name"]: {"x": [utc(x) for x in t["x"]], "y": [int(v) for v in t["y"]]} for t in got}


def check_recovery(traces: dict[str, dict[str, Any]], fc: pd.DataFrame, start: pd.Timestamp) -> None:
    """The chart's lines are the forecast table's: a step down at each in_sync_at (solid) and each
    latest_in_sync_at (dashed), to the floor of the replicas that will not catch up."""
    total = len(fc)
    stuck = fc["in_sync_at"].isna()
    blocked = int(stuck.sum())
    coming = fc[~stuck]
    unbounded = int(coming["latest_in_sync_at"].isna().sum())
    solid = traces["by the forecast"]
    dashed = traces["at the latest (the first reply of each entry lost)"]
    floor = traces["will not catch up within 14 days"]
    assert floor["y"] == [blocked, blocked] and floor["x"][0] == start
    assert solid["y"][0] == total and dashed["y"][0] == total and solid["x"][0] == start
    for x, y in list(zip(solid["x"], solid["y"], strict=True))[1:]:
        assert y == blocked + int((coming["in_sync_at"] > x).sum()), (x, y)
    for x, y in list(zip(dashed["x"], dashed["y"], strict=True))[1:]:
        assert y == blocked + unbounded + int((coming["latest_in_sync_at"] > x).sum()), (x, y)
    # it steps at every forecast time (and nowhere else), down to the floor
    assert set(solid["x"][1:-1]) == set(coming["in_sync_at"])
    assert solid["y"][-1] == blocked and dashed["y"][-1] == blocked + unbounded
    # x: from the as-of to the last forecast time, at most the horizon
    end = solid["x"][-1]
    assert coming["latest_in_sync_at"].max() <= end <= start + DAYS_14


# -- the overview ------------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_recovery_chart_draws_both_lines_and_the_floor_from_the_forecast(
    scheme: str, demo_server: Server, context_for
) -> None:  # type: ignore[no-untyped-def]
    fc, start = forecast(demo_server.data), as_of(demo_server.data)
    stuck = fc[fc["in_sync_at"].isna()]
    assert len(stuck) > 0 and len(stuck) < len(fc)
    pg = context_for(scheme)
    open_page(pg, demo_server.base + "/")
    section = pg.locator("#pf-recovery")
    assert section.locator("h2").inner_text() == "When will it be in sync? The forecast"
    said = pg.locator("#pf-recovery-summary").inner_text()
    assert said.startswith(f"{len(fc):,} replicas lack CNs at the as-of (what is so). By the forecast, ")
    # how far to trust it: the record of the demo's first run's forecasts, judged by its second
    record = table(demo_server.data, "forecast_record")
    assert len(record) > 0
    assert pg.locator("#pf-forecast-record").inner_text() == f"How far to trust it: {record_text(record)}"
    assert f"the last by ~{short_time(fc['in_sync_at'].max())}" in said
    assert f"{len(stuck):,} will not catch up within 14 days" in said
    # and what would make it sooner: the return of the store they wait for
    assert all(waits(r) == ["PFJNB02"] for _, r in stuck.iterrows())
    assert (
        f"once PFJNB02 is back, all {len(stuck)} in sync within ~{duration(stuck['after_back_s'].max())}"
        in said
    )
    # whose view, and what it assumes
    assert (
        "A forecast of what is so, not a store's belief: the model's rules played forward"
        in section.inner_text()
    )
    chart = pg.locator("#pf-recovery-fig")
    assert chart.get_attribute("data-lazy") == "pf-recovery-fig"  # drawn when about to be seen
    chart.scroll_into_view_if_needed()
    pg.wait_for_function("() => document.querySelector('#pf-recovery-fig').hasAttribute('data-drawn')")
    gd = chart.locator(".js-plotly-plot")
    check_recovery(drawn_traces(gd), fc, start)
    # the floor is labelled with why (the blocked_by texts, grouped), readable on the page's colour
    top = reason_counts(stuck)[0][0]
    label = gd.locator(".annotation-text").first
    flat = re.sub(r"\s+", "", label.text_content() or "")  # its lines are tspans
    assert flat.startswith(f"{len(stuck)}replicaswillnotcatchup:") and re.sub(r"\s+", "", top) in flat, flat
    pg.evaluate(COLOUR_JS)
    ratio = label.evaluate(
        "el => { const C = window.pfColour; const bg = C.background(el.closest('.js-plotly-plot'));"
        " return C.ratio(C.over(C.parse(getComputedStyle(el).fill), bg), bg); }"
    )
    assert ratio >= 4.5, (scheme, ratio)
    # and grouped under the chart, in words
    blocked = pg.locator("#pf-recovery-blocked li").all_inner_texts()
    assert blocked == [f"{n:,} replica{'s' if n > 1 else ''}: {why}" for why, n in reason_counts(stuck)]
    screenshot(pg, f"demo-overview-recovery-{scheme}")


def test_the_overview_at_390_px_draws_the_recovery_chart_on_screen(demo_server: Server, context_for) -> None:  # type: ignore[no-untyped-def]
    pg = context_for("light", 390, 844, phone=True)
    open_page(pg, demo_server.base + "/")
    gd = pg.locator("#pf-recovery-fig .js-plotly-plot")
    check_recovery(drawn_traces(gd), forecast(demo_server.data), as_of(demo_server.data))
    boxes = gd.evaluate(
        "gd => Array.from(gd.querySelectorAll('.main-svg, .annotation-text, .legendtext'))"
        ".map(e => { const r = e.getBoundingClientRect(); return {x: r.x, right: r.right}; })"
    )
    assert boxes and all(b["x"] >= 0 and b["right"] <= 390 for b in boxes), boxes
    assert pg.evaluate("() => document.documentElement.scrollWidth") <= 390
    screenshot(pg, "demo-overview-recovery-390")


def test_a_cause_line_ends_with_the_forecast(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    fc = forecast(demo_server.data)
    open_page(page, demo_server.base + "/")
    # the down store: its own replicas that lack CNs, all held back, and why
    mine = fc[fc["store"] == "PFJNB02"]
    assert mine["in_sync_at"].isna().all()
    [(why, n)] = reason_counts(mine)
    assert n == len(mine)
    down = (
        page.locator("#pf-causes > li").filter(has_text="PFJNB02 down").locator("ul > li").all_inner_texts()
    )
    said = next(x for x in down if "of its own lack CNs" in x)
    assert said.startswith(
        f"{len(mine)} replicas of its own lack CNs; forecast: all {len(mine)} replicas will not catch up within "
        f"14 days: {why}; once PFJNB02 is back, all {len(mine)} in sync within ~{duration(mine['after_back_s'].max())} "
        f"({duration(mine['latest_after_back_s'].max())} at the latest"
    ), said
    # the overdue replica: its line ends with its own forecast
    row = fc.set_index(["store", "fid"]).loc[("PFDUB02", "1-2AB2")]
    [line] = page.locator("#pf-causes > li").filter(has_text="(overdue)").locator("ul > li").all_inner_texts()
    assert re.search(rf"; forecast: in sync by ~{re.escape(short_time(row['in_sync_at']))} via \S", line), (
        line
    )
    # the backfill under way: the last of its replicas in sync, at the latest
    entries = table(demo_server.data, "backfill_entries")
    young = entries[(entries["state"] == "open") & (entries["observer"] != "PFJNB02")][["observer", "fid"]]
    theirs = fc.merge(young.drop_duplicates().rename(columns={"observer": "store"}), on=["store", "fid"])
    [under_way] = (
        page.locator("#pf-causes > li").filter(has_text="under way").locator("ul > li").all_inner_texts()
    )
    assert under_way.endswith(
        f"forecast: all {len(theirs)} replicas in sync by ~{short_time(theirs['in_sync_at'].max())} "
        f"({short_time(theirs['latest_in_sync_at'].max())} at the latest)"
    ), under_way


# -- the backfill grid -------------------------------------------------------------------------


def test_the_grid_has_a_forecast_column_sorted_by_time_and_exported(
    demo_server: Server, context_for, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    fc = forecast(demo_server.data).set_index(["store", "fid"])
    pg = context_for("light", 1440, 900)
    open_page(pg, demo_server.base + "/backfill")
    pg.wait_for_selector("#backfill-grid .ag-row")
    got = grid_rows(pg)
    assert got and all(r["forecast"] == expected_short(fc.loc[(r["observer"], r["fid"])]) for r in got), got[
        :3
    ]
    assert {"not until PFJNB02 is back"} < {r["forecast"] for r in got}  # both kinds are there
    # the column is on screen at 1440 px, with its full text on hover
    head = pg.locator("#backfill-grid .ag-header-row-column .ag-header-cell[col-id=forecast]")
    box = head.bounding_box()
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= 1440
    tooltip = pg.evaluate("() => dash_ag_grid.getApi('backfill-grid').getColumnDef('forecast').tooltipField")
    assert tooltip == "forecast_detail"
    # each links to its explanation
    first = pg.locator("#backfill-grid .ag-row[row-index='0'] [col-id=forecast] a")
    assert first.inner_text() == got[0]["forecast"]
    assert first.get_attribute("href") == f"/forecast?fid={got[0]['fid']}&store={got[0]['observer']}"
    # sorted by it: by time, those that will not catch up last (not as text: "in sync by ~Mon" < "~Sun")
    head.locator(".ag-header-cell-label").click()
    pg.wait_for_function(
        "() => dash_ag_grid.getApi('backfill-grid').getColumnState().some(c => c.colId === 'forecast' && c.sort === 'asc')"
    )
    shown = grid_rows(pg)
    times = [fc.loc[(r["observer"], r["fid"]), "in_sync_at"] for r in shown]
    known = [t for t in times if pd.notna(t)]
    assert known == sorted(known) and all(pd.isna(t) for t in times[len(known) :])
    # the CSV has it, with the times and the forecast in words
    with pg.expect_download() as info:
        pg.locator("#backfill-export").click()
    path = tmp_path / "export.csv"
    info.value.save_as(path)
    with path.open(newline="", encoding="utf-8-sig") as fh:
        exported = list(csv.DictReader(fh))
    assert len(exported) == len(got)
    entries = table(demo_server.data, "backfill_entries").set_index("entry_id")
    for r in exported:
        row = fc.loc[(entries.loc[r["entry"], "observer"], entries.loc[r["entry"], "fid"])]
        assert r["forecast"] == expected_short(row)
        at = row["in_sync_at"]
        assert r["forecast: in sync by (UTC)"] == ("" if pd.isna(at) else at.strftime("%Y-%m-%d %H:%M:%SZ"))
        assert r["forecast, in words"].startswith("forecast: ")
        if pd.isna(at):
            assert r["forecast, in words"].endswith(str(row["blocked_by"]))
            assert r["forecast, in words"].startswith("forecast: not in sync until PFJNB02 is back: ")
    screenshot(pg, "demo-backfill-forecast-1440")


def test_a_phones_card_shows_the_forecast(demo_server: Server, context_for) -> None:  # type: ignore[no-untyped-def]
    fc = forecast(demo_server.data).set_index(["store", "fid"])
    pg = context_for("light", 390, 844, phone=True)
    open_page(pg, demo_server.base + "/backfill")
    card = pg.locator("#backfill-grid .ag-row[row-index='0'] .pf-entry-card")
    card.wait_for()
    first = pg.evaluate("() => dash_ag_grid.getApi('backfill-grid').getDisplayedRowAtIndex(0).data")
    line = card.locator(".pf-ec-forecast")
    assert line.inner_text() == f"forecast: {expected_short(fc.loc[(first['observer'], first['fid'])])}"
    assert (
        line.locator("a").get_attribute("href") == f"/forecast?fid={first['fid']}&store={first['observer']}"
    )
    box = line.bounding_box()
    assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390
    assert pg.evaluate("() => document.documentElement.scrollWidth") <= 390


# -- the store page ----------------------------------------------------------------------------


def test_the_store_page_has_the_forecast_column_and_says_when_its_last_replica_is_in_sync(
    demo_server: Server, page
) -> None:  # type: ignore[no-untyped-def]
    fc = forecast(demo_server.data)
    # a store whose replicas all catch up: when the last of them does, and at the latest
    store = "PFSIN02"
    mine = fc[fc["store"] == store]
    assert len(mine) > 1 and mine["in_sync_at"].notna().all()
    open_page(page, demo_server.base + f"/store/{store}")
    said = page.locator("#pf-store-forecast").inner_text()
    assert said.startswith(
        f"{len(mine)} replicas of {store} lack CNs at the as-of (what is so). By the forecast, all will be in "
        f"sync, the last by ~{short_time(mine['in_sync_at'].max())} ({short_time(mine['latest_in_sync_at'].max())} "
        "at the latest, if a reply is lost)."
    ), said
    shown = {r["fid"]: r["forecast"] for r in rows(page, "pf-store-replicas", ["fid", "forecast"])}
    for r in mine.itertuples(index=False):
        assert shown[r.fid] == (
            f"in sync by ~{short_time(r.in_sync_at)} ("
            + (
                "also"
                if short_time(r.latest_in_sync_at) == short_time(r.in_sync_at)
                else short_time(r.latest_in_sync_at)
            )
            + " at the latest)"
        ), (r.fid, shown[r.fid])
    href = page.locator("#pf-store-replicas td.pf-col-forecast a").first.get_attribute("href") or ""
    assert re.fullmatch(rf"/forecast\?fid=[0-9A-F-]+&store={store}", href), href
    lacking_nothing = set(shown) - set(mine["fid"])
    assert lacking_nothing and all(shown[f] == "" for f in lacking_nothing)
    heads = page.locator("#pf-store-replicas thead th").all_inner_texts()
    assert any(h.startswith("forecast: in sync by, at the latest, or why not") for h in heads)
    # the down store: none of its replicas catches up, and why; what its return would do
    down = fc[fc["store"] == "PFJNB02"]
    open_page(page, demo_server.base + "/store/PFJNB02")
    said = page.locator("#pf-store-forecast").inner_text()
    [(why, _n)] = reason_counts(down)
    assert said.startswith(
        f"{len(down)} replicas of PFJNB02 lack CNs at the as-of (what is so). By the forecast, none of them "
        f"catches up within 14 days: {why}; once PFJNB02 is back, all {len(down)} in sync within "
        f"~{duration(down['after_back_s'].max())}"
    ), said
    cells = {r["fid"]: r["forecast"] for r in rows(page, "pf-store-replicas", ["fid", "forecast"])}
    for r in down.itertuples(index=False):
        if r.fid in cells:  # the table shows the worst 100
            assert cells[r.fid] == f"not in sync until PFJNB02 is back: {r.blocked_by}"
    screenshot(page, "demo-store-forecast")


# -- the reports -------------------------------------------------------------------------------


def test_the_reports_contain_the_forecast(demo_server: Server, context_for, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    fc, start = forecast(demo_server.data), as_of(demo_server.data)
    pg = context_for("light", 1440, 900)
    # the organisation report, as the dashboard serves it, opened from disk
    org = tmp_path / "org.html"
    org.write_bytes(pg.request.get(demo_server.base + "/report").body())
    pg.goto(org.as_uri())
    chart = pg.locator("#forecast .js-plotly-plot")
    pg.wait_for_function("() => !!document.querySelector('#forecast .js-plotly-plot .main-svg')")
    check_recovery(drawn_traces(chart), fc, start)
    stuck = fc[fc["in_sync_at"].isna()]
    assert (
        pg.locator("#forecast-summary").inner_text().startswith(f"{len(fc):,} replicas lack CNs at the as-of")
    )
    record = table(demo_server.data, "forecast_record")
    assert pg.locator("#forecast-record").inner_text() == f"How far to trust it: {record_text(record)}"
    assert pg.locator("#forecast-blocked li").all_inner_texts() == [
        f"{n:,} replica{'s' if n > 1 else ''}: {why}" for why, n in reason_counts(stuck)
    ]
    # the attention list's forecast column
    heads = pg.locator("#worst table thead th").all_inner_texts()
    col = heads.index("forecast")
    for tr in pg.locator("#worst table tbody tr").all():
        cells = tr.locator("td").all_inner_texts()
        mine = fc[fc["fid"] == cells[0]]
        if len(mine) > 1:
            coming = mine[mine["in_sync_at"].notna()]
            if len(coming):
                assert f"in sync by ~{short_time(coming['in_sync_at'].max())}" in cells[col], cells
    screenshot(pg, "demo-report-forecast")
    # the folder report: each replica's verdict ends with its forecast
    fid = "1-2C3E"
    page_bytes = pg.request.get(demo_server.base + f"/report?fid={fid}").body()
    folder = tmp_path / "folder.html"
    folder.write_bytes(page_bytes)
    pg.goto(folder.as_uri())
    lines = {
        li.get_attribute("data-store"): li.locator(".verdict-text").inner_text()
        for li in pg.locator("#verdict li").all()
    }
    mine = fc[fc["fid"] == fid]
    assert len(mine) == 2
    for r in mine.itertuples(index=False):
        if pd.isna(r.in_sync_at):
            assert lines[r.store].endswith(f"; forecast: not in sync until PFJNB02 is back: {r.blocked_by}.")
        else:
            assert f"; forecast: in sync by ~{short_time(r.in_sync_at)}" in lines[r.store]
