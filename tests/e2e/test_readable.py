"""Readable in Chromium, light and dark, at 1440 and 390 px: contrast (WCAG AA) of every text,
charts that follow the dark preference, tables that are not cut, a phone that sees what matters,
and a standalone report that is readable in the dark and colours its matrix as the dashboard does.

Everything is measured on computed colours and geometry; waits are on conditions.
"""

from __future__ import annotations

import colorsys
import contextlib
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Server
from tests.e2e.test_dashboard import busiest_folder, open_page, table
from tests.published_runs import ROOT, _env

pytestmark = pytest.mark.e2e

#: shared by the checks below: colours parsed, composited over what is behind, WCAG contrast
COLOUR_JS = """
window.pfColour = (function () {
  function parse(c) {
    const m = /rgba?\\(([^)]+)\\)/.exec(c || '');
    if (!m) return null;
    const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(parseFloat);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  }
  function over(top, bottom) {
    const a = top[3];
    return [0, 1, 2].map(i => top[i] * a + bottom[i] * (1 - a)).concat([1]);
  }
  function lum(c) {
    const f = v => { v /= 255; return v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
  }
  function ratio(a, b) { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); }
  /* the colour behind an element: its and its ancestors' backgrounds down to the first opaque one */
  function background(el) {
    const layers = [];
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    let bg = [255, 255, 255, 1];
    for (let i = layers.length - 1; i >= 0; i--) bg = over(layers[i], bg);
    return bg;
  }
  function opacity(el) {
    let o = 1;
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) o *= parseFloat(getComputedStyle(e).opacity);
    return o;
  }
  function hex(c) { return 'rgb(' + c.slice(0, 3).map(Math.round).join(', ') + ')'; }
  /* every visible HTML element with text of its own: its contrast and what it needs (AA) */
  function texts() {
    const out = [];
    for (const el of document.querySelectorAll('body *')) {
      if (el.closest('svg') || ['SCRIPT', 'STYLE', 'NOSCRIPT', 'TITLE', 'TEMPLATE'].includes(el.tagName)) continue;
      const text = Array.from(el.childNodes).filter(n => n.nodeType === 3).map(n => n.textContent).join('').trim();
      if (!text) continue;
      const r = el.getBoundingClientRect();
      const s = getComputedStyle(el);
      if (r.width <= 1 || r.height <= 1 || s.visibility !== 'visible') continue;
      const fg = parse(s.color), bg = background(el);
      const seen = over([fg[0], fg[1], fg[2], fg[3] * opacity(el)], bg);
      const size = parseFloat(s.fontSize), bold = parseInt(s.fontWeight, 10) >= 700;
      out.push({text: text.slice(0, 40), cls: String(el.className), color: s.color, background: hex(bg),
                ratio: ratio(seen, bg), need: size >= 24 || (bold && size >= 18.66) ? 3 : 4.5});
    }
    return out;
  }
  return {parse, over, ratio, background, opacity, hex, texts};
})();
"""


def low_contrast(pg) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    """The texts of the page below WCAG AA, one per (class, colour, background)."""
    pg.evaluate(COLOUR_JS)
    bad: dict[tuple[str, str, str], dict[str, Any]] = {}
    for t in pg.evaluate("() => window.pfColour.texts()"):
        if t["ratio"] < t["need"]:
            bad.setdefault((t["cls"], t["color"], t["background"]), t)
    return list(bad.values())


def down_store(data: Path) -> str:
    stores = table(data, "stores")
    down = stores[stores["status"] == "down"]["store"]
    return str(sorted(down)[0] if len(down) else sorted(stores["store"])[0])


@pytest.fixture
def context_for(browser) -> Iterator[Any]:  # type: ignore[no-untyped-def]
    """A page in a new context (colour scheme, viewport); page errors fail the test."""
    made: list[Any] = []
    errors: list[str] = []

    def open_context(scheme: str = "light", width: int = 1440, height: int = 900, phone: bool = False) -> Any:
        context = browser.new_context(
            color_scheme=scheme, viewport={"width": width, "height": height}, is_mobile=phone, has_touch=phone
        )
        made.append(context)
        pg = context.new_page()
        pg.set_default_timeout(20_000)
        pg.on("pageerror", lambda e: errors.append(str(e)))
        return pg

    yield open_context
    for context in made:
        context.close()
    assert errors == []


# -- 1. every text reaches WCAG AA, light and dark --------------------------------------------


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_text_reaches_aa_contrast(scheme: str, demo_server: Server, context_for) -> None:  # type: ignore[no-untyped-def]
    pg = context_for(scheme)
    data = demo_server.data
    pages = [
        "/",
        f"/folder/{busiest_folder(data)}",
        f"/store/{sorted(table(data, 'stores')['store'])[0]}",
        f"/store/{down_store(data)}",
    ]
    seen_badges: set[str] = set()
    for path in pages:
        open_page(pg, demo_server.base + path)
        assert pg.evaluate("() => document.querySelectorAll('.pf-badge').length") > 0 or path != "/"
        seen_badges |= set(pg.locator(".pf-badge").evaluate_all("els => els.map(e => e.className)"))
        bad = low_contrast(pg)
        assert bad == [], (scheme, path, bad[:10])
    # the badges of every health were measured
    for health in ("in_sync", "backfilling", "overdue", "delete_pending", "deleted"):
        assert any(f"pf-health-{health}" in b for b in seen_badges), (health, seen_badges)


# -- 2. charts follow the dark preference -------------------------------------------------------

CHART_MARKS_JS = """
gd => {
  const C = window.pfColour, out = [];
  const bg = C.background(gd);
  const marks = gd.querySelectorAll('.scatterlayer path.js-line, .scatterlayer .point, .barlayer .point path, '
                                    + '.barlayer path.point');
  for (const el of marks) {
    const s = getComputedStyle(el);
    const line = el.classList.contains('js-line');
    let c = C.parse(line ? s.stroke : s.fill);
    if (!c || c[3] === 0) c = C.parse(s.stroke);  // an open marker: its outline
    if (!c || c[3] === 0 || parseFloat(s.opacity) === 0) continue;
    const seen = C.over([c[0], c[1], c[2], c[3] * C.opacity(el)], bg);
    out.push({fig: gd.parentElement && gd.parentElement.id, cls: el.getAttribute('class'), colour: C.hex(c),
              background: C.hex(bg), ratio: C.ratio(seen, bg)});
  }
  const bar = gd.querySelector('.modebar-group'), icon = gd.querySelector('.modebar-btn .icon path');
  let modebar = null;
  if (bar && icon) {
    const behind = C.over(C.parse(getComputedStyle(bar).backgroundColor), bg);
    const c = C.parse(getComputedStyle(icon).fill);
    modebar = {icon: C.hex(c), background: C.hex(behind), ratio: C.ratio(C.over(c, behind), behind)};
  }
  return {marks: out, modebar: modebar};
}
"""


def test_dark_charts_lines_markers_and_modebar_contrast(demo_server: Server, context_for) -> None:  # type: ignore[no-untyped-def]
    pg = context_for("dark")
    measured = 0
    for path in ("/", f"/folder/{busiest_folder(demo_server.data)}"):
        open_page(pg, demo_server.base + path)
        pg.evaluate(COLOUR_JS)
        charts = pg.locator("main .js-plotly-plot")
        assert charts.count() > 0, path
        for i in range(charts.count()):
            got = charts.nth(i).evaluate(CHART_MARKS_JS)
            bad = [m for m in got["marks"] if m["ratio"] < 3]
            assert bad == [], (path, bad[:5])
            measured += len(got["marks"])
            assert got["modebar"] is not None, path
            assert got["modebar"]["ratio"] >= 3, (path, got["modebar"])
    assert measured > 10  # lines, markers and bars were found


# -- 3. no table cut at 1440 px -----------------------------------------------------------------

CLIPPED_JS = """
() => Array.from(document.querySelectorAll('main table')).flatMap(t => {
  let box = t.parentElement;
  while (box && !['auto', 'scroll', 'hidden', 'clip'].includes(getComputedStyle(box).overflowX)) box = box.parentElement;
  const right = Math.min(box ? box.getBoundingClientRect().right : Infinity, window.innerWidth);
  return Array.from(t.querySelectorAll('thead th'))
    .filter(h => h.getBoundingClientRect().right > right + 0.5)
    .map(h => ({table: t.id, column: h.innerText.trim(), right: h.getBoundingClientRect().right, visible: right}));
})
"""


def test_no_table_column_is_cut_at_1440(demo_server: Server, context_for) -> None:  # type: ignore[no-untyped-def]
    pg = context_for("light", 1440, 900)
    data = demo_server.data
    for path in ("/", f"/folder/{busiest_folder(data)}", f"/store/{down_store(data)}"):
        open_page(pg, demo_server.base + path)
        assert pg.locator("main table").count() > 0
        assert pg.evaluate(CLIPPED_JS) == [], path
    # the folder's entries table has every column, "next due", "next request" and "closed" included
    open_page(pg, demo_server.base + f"/folder/{busiest_folder(data)}")
    heads = [h.replace("?", "").strip() for h in pg.locator("#pf-entries thead th").all_inner_texts()]
    assert {"next due", "next request", "closed"} <= set(heads)


# -- 4. a phone (390 px) ---------------------------------------------------------------------------

BREAKS_JS = """
el => {
  /* at each line break of the element's text: the text around it (the character before, and
     whether white space was between) */
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  const chars = [];
  let text = '';
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    for (let i = 0; i < n.textContent.length; i++) {
      const r = document.createRange();
      r.setStart(n, i); r.setEnd(n, i + 1);
      const box = r.getClientRects()[0];
      if (box && n.textContent[i].trim()) chars.push({c: n.textContent[i], at: text.length + i, top: box.top});
    }
    text += n.textContent;
  }
  const breaks = [];
  for (let i = 1; i < chars.length; i++) {
    if (chars[i].top > chars[i - 1].top + 2) {
      const between = text.slice(chars[i - 1].at + 1, chars[i].at);
      breaks.push({before: chars[i - 1].c, space: /\\s/.test(between),
                   at: text.slice(Math.max(0, chars[i - 1].at - 8), chars[i].at + 8)});
    }
  }
  return {text: text, lines: breaks.length + 1, breaks: breaks};
}
"""


def mid_word(got: dict[str, Any]) -> list[dict[str, Any]]:
    """The breaks that are neither after a ``\\`` separator (or a ``/`` inside a name, as in
    ``EX:/o=Contoso/ou=Johannesburg``) nor between words."""
    return [b for b in got["breaks"] if b["before"] not in ("\\", "/") and not b["space"]]


def test_phone_heatmap_shows_every_column(demo_server: Server, context_for) -> None:  # type: ignore[no-untyped-def]
    pg = context_for("light", 390, 844, phone=True)
    open_page(pg, demo_server.base + "/")
    stores = len(table(demo_server.data, "stores"))
    svg = pg.locator("#pf-lag-fig .main-svg").first.evaluate(
        "e => { const r = e.getBoundingClientRect(); return {x: r.x, right: r.right}; }"
    )
    ticks = pg.locator("#pf-lag-fig .xtick text").evaluate_all(
        "els => els.map(e => { const r = e.getBoundingClientRect(); return {x: r.x, right: r.right}; })"
    )
    assert len(ticks) == stores
    # ten stores fit the screen: the whole heatmap, every column, without scrolling
    assert svg["x"] >= 0 and svg["right"] <= 390, svg
    assert all(t["x"] >= 0 and t["right"] <= 390 for t in ticks), ticks
    # and its cells' numbers are still readable, each inside its cell
    sizes = pg.evaluate(
        "() => Array.from(document.querySelectorAll('#pf-lag-fig text'))"
        ".filter(t => /^[0-9,]+$|^self$/.test(t.textContent))"
        ".map(t => parseFloat(getComputedStyle(t).fontSize))"
    )
    assert sizes and min(sizes) >= 10
    # the section's heading does not scroll sideways with it
    scroller = pg.locator("#pf-lag").evaluate("e => e.scrollWidth <= e.clientWidth")
    assert scroller


def test_phone_paths_break_at_separators_not_mid_word(demo_server: Server, context_for) -> None:  # type: ignore[no-untyped-def]
    pg = context_for("light", 390, 844, phone=True)
    open_page(pg, demo_server.base + "/")
    cells = pg.locator("#pf-worst td.pf-col-path")
    wrapped = 0
    for i in range(cells.count()):
        got = cells.nth(i).evaluate(BREAKS_JS)
        assert mid_word(got) == [], got
        wrapped += any(b["before"] == "\\" for b in got["breaks"])
    assert wrapped > 0  # some paths are long enough to wrap at 390 px, after a separator
    fid = busiest_folder(demo_server.data)
    open_page(pg, demo_server.base + f"/folder/{fid}")
    got = pg.locator("#pf-folder-path").evaluate(BREAKS_JS)
    assert mid_word(got) == [], got


def test_phone_backfill_grid_shows_fid_path_store_overdue(demo_server: Server, context_for) -> None:  # type: ignore[no-untyped-def]
    """A phone sees each open entry as a card (one column, the screen's width): FID, store,
    overdue and path in full, not columns cut to "1-2…" (tests/e2e/test_layout_defects.py
    measures every value's text)."""
    pg = context_for("light", 390, 844, phone=True)
    open_page(pg, demo_server.base + "/backfill")
    pg.wait_for_selector("#backfill-grid .ag-row")
    fits = """() => {
      const grid = document.querySelector('#backfill-grid').getBoundingClientRect();
      const right = Math.min(grid.right, window.innerWidth);
      const heads = Array.from(document.querySelectorAll('#backfill-grid .ag-header-row-column .ag-header-cell'));
      return heads.map(h => { const r = h.getBoundingClientRect();
        return {col: h.getAttribute('col-id'), x: r.x, right: r.right,
                visible: r.x >= grid.x - 0.5 && r.right <= right + 0.5 && r.width >= 300}; });
    }"""
    with contextlib.suppress(Exception):  # the assertion below says what is shown
        pg.wait_for_function(
            f"() => {{ const c = ({fits})(); return c.length === 1 && c[0].visible; }}", timeout=10_000
        )
    cols = pg.evaluate(fits)
    assert [c["col"] for c in cols] == ["card"] and cols[0]["visible"], cols
    first = pg.evaluate("() => dash_ag_grid.getApi('backfill-grid').getDisplayedRowAtIndex(0).data")
    card = pg.locator("#backfill-grid .ag-row[row-index='0'] .pf-entry-card")
    assert card.locator(".pf-ec-fid").inner_text() == first["fid"]
    assert card.locator(".pf-ec-store").inner_text() == first["observer"]
    assert card.locator(".pf-ec-path").inner_text().replace("\n", "") == first["path"]
    assert (card.locator(".pf-ec-overdue").count() == 1) == (first["overdue"] == "yes")
    assert card.evaluate("e => e.getBoundingClientRect().width") >= 300


# -- 5. the standalone report: dark, readable, its matrix coloured as the dashboard's ---------------


@pytest.fixture(scope="module")
def folder_report(tmp_path_factory: pytest.TempPathFactory, demo_data: Path) -> tuple[Path, str]:
    fid = busiest_folder(demo_data)
    path = tmp_path_factory.mktemp("readable-report") / "folder.html"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pfscope.app.cli",
            "report",
            "--data",
            str(demo_data),
            "--out",
            str(path),
            "--fid",
            fid,
        ],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return path, fid


def open_report(pg, path: Path) -> None:  # type: ignore[no-untyped-def]
    pg.goto(path.as_uri())
    figures = pg.locator("figure .chart").count()
    pg.wait_for_function(f"() => document.querySelectorAll('figure .chart .main-svg').length >= {figures}")


def hue_family(css: str) -> str:
    """A colour's family: grey, or its hue in 30° steps (green, orange, blue...)."""
    r, g, b = (int(x) / 255 for x in re.findall(r"\d+", css)[:3])
    h, light, s = colorsys.rgb_to_hls(r, g, b)
    if s < 0.2 or light < 0.08 or light > 0.95:
        return "grey"
    return str(round(h * 360 / 30) % 12)


def test_report_is_readable_in_the_dark(folder_report: tuple[Path, str], context_for) -> None:  # type: ignore[no-untyped-def]
    path, _fid = folder_report
    for scheme in ("light", "dark"):
        pg = context_for(scheme, 1400, 1000)
        open_report(pg, path)
        bg = pg.evaluate("() => getComputedStyle(document.documentElement).backgroundColor")
        if scheme == "dark":
            assert hue_family(bg) == "grey" and sum(int(x) for x in re.findall(r"\d+", bg)[:3]) < 100, bg
        assert pg.locator(".health").count() > 0
        bad = low_contrast(pg)
        assert bad == [], (scheme, bad[:10])
        # the charts' axis labels are light on the dark page
        if scheme == "dark":
            fills = pg.locator('g[class$="tick"] > text').evaluate_all(
                "els => els.map(e => getComputedStyle(e).fill)"
            )
            assert fills and all(sum(int(x) for x in re.findall(r"\d+", f)[:3]) > 600 for f in fills), fills[
                :5
            ]


def test_report_matrix_colours_mean_what_the_dashboards_do(
    folder_report: tuple[Path, str], demo_server: Server, context_for
) -> None:  # type: ignore[no-untyped-def]
    path, fid = folder_report
    pg = context_for("light")
    open_page(pg, demo_server.base + f"/folder/{fid}")
    cells_js = (
        "() => Array.from(document.querySelectorAll('#pf-matrix td.pf-cell'))"
        ".map(e => [e.dataset.state, getComputedStyle(e).borderLeftColor])"
    )
    pg.wait_for_function(f"() => {{ const c = ({cells_js})(); return c.length > 0 && c.every(x => x[1]); }}")
    dashboard: dict[str, set[str]] = {}
    for cell in pg.evaluate(cells_js):
        dashboard.setdefault(cell[0], set()).add(hue_family(cell[1]))
    open_report(pg, path)
    report: dict[str, set[str]] = {}
    for state, colour in pg.evaluate(
        "() => Array.from(document.querySelectorAll('#matrix td.cell'))"
        ".map(e => [e.dataset.state, getComputedStyle(e).borderLeftColor])"
    ):
        report.setdefault(state, set()).add(hue_family(colour))
    shared = set(dashboard) & set(report)
    assert dashboard and len(shared) >= 3, (dashboard, report)
    for state in shared:
        assert report[state] == dashboard[state], (state, report[state], dashboard[state])
    # states that alarm on the dashboard alarm in the report, and the harmless ones do not
    assert all(report[s] != report.get("not_told") for s in ("current", "told_later") if s in report)
