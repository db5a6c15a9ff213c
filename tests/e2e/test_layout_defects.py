"""Issue 35's layout defects in Chromium, on the demo: the /backfill grid at 1440 px (the folder's
own name cut off, "next request" off screen) and at 390 px (FIDs and store names cut to "1-2…",
"PFD…"), the folder page's backfill entries table cut at 1440 px, and the standalone reports'
matrix (8 px white text on colour), their folders needing attention (cut without saying so) and
their words for the CNs a replica has not been told of.

What is on screen is measured on the rendered page: boxes of header cells and of the very text
of a value (a DOM Range), elements whose content is wider than their box. Waits are on conditions.
"""

from __future__ import annotations

import contextlib
import json
import re
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from pfscope.app.figures import CELL_LABELS, cell_label
from tests.e2e.conftest import Server, screenshot
from tests.e2e.test_dashboard import busiest_folder, open_page, table
from tests.e2e.test_readable import COLOUR_JS, low_contrast

pytestmark = pytest.mark.e2e

#: where a text of a row is drawn: the first cell of row ``index`` (pinned cells first) whose
#: text holds ``text``; the boxes of that text (a Range), of its cell and of the grid's body, and
#: whether an element between the text and its cell hides part of its content (an ellipsis)
TEXT_BOX_JS = """
() => { window.pfTextBox = ([grid, index, text]) => {
  const rows = document.querySelectorAll('#' + grid + ' .ag-row[row-index="' + index + '"]');
  for (const row of rows) {
    for (const cell of row.querySelectorAll('.ag-cell')) {
      const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
      const nodes = [];
      let all = '';
      for (let n = walker.nextNode(); n; n = walker.nextNode()) { nodes.push([n, all.length]); all += n.textContent; }
      const at = all.indexOf(text);
      if (at < 0) continue;
      const end = at + text.length;
      const range = document.createRange();
      let first = null;
      for (const [n, from] of nodes) {
        const to = from + n.textContent.length;
        if (from <= at && at < to) { range.setStart(n, at - from); first = n; }
        if (from < end && end <= to) { range.setEnd(n, end - from); break; }
      }
      const rects = Array.from(range.getClientRects()).filter(r => r.width > 0 && r.height > 0)
        .map(r => ({left: r.left, right: r.right, top: r.top, bottom: r.bottom}));
      const box = cell.getBoundingClientRect();
      const body = document.querySelector('#' + grid + ' .ag-root-wrapper').getBoundingClientRect();
      const hidden = [];
      for (let e = first.parentElement; e && e !== cell.parentElement; e = e.parentElement) {
        const s = getComputedStyle(e);
        if (s.overflowX !== 'visible' && e.scrollWidth > e.clientWidth + 1) hidden.push(e.className || e.tagName);
      }
      const inside = rects.length > 0 && rects.every(r =>
        r.left >= Math.max(box.left, body.left, 0) - 0.5 && r.right <= Math.min(box.right, body.right, window.innerWidth) + 0.5
        && r.top >= box.top - 0.5 && r.bottom <= box.bottom + 0.5);
      return {found: true, whole: inside && hidden.length === 0, col: cell.getAttribute('col-id'), rects: rects,
              hidden: hidden, cell: {left: box.left, right: box.right, top: box.top, bottom: box.bottom},
              body: {left: body.left, right: body.right}};
    }
  }
  return {found: false, whole: false};
}; }
"""


def text_shown(pg, grid: str, index: int, text: str) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """Where ``text`` of row ``index`` is drawn; ``whole``: all of it on screen and unclipped."""
    pg.evaluate(TEXT_BOX_JS)
    got: dict[str, Any] = pg.evaluate("args => window.pfTextBox(args)", [grid, index, text])
    return got


def grid_rows(pg, grid: str = "backfill-grid") -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    """The data of the rows the grid has drawn (``row-index`` -> row), in display order."""
    return pg.evaluate(
        """(grid) => {
          const api = dash_ag_grid.getApi(grid);
          const drawn = new Set(Array.from(document.querySelectorAll('#' + grid + ' .ag-row[row-index]'))
            .map(r => Number(r.getAttribute('row-index'))));
          return Array.from(drawn).sort((a, b) => a - b)
            .map(i => ({index: i, ...api.getDisplayedRowAtIndex(i).data}));
        }""",
        grid,
    )


HEADER_BOXES_JS = """
(grid) => Array.from(document.querySelectorAll('#' + grid + ' .ag-header-row-column .ag-header-cell'))
  .map(h => { const r = h.getBoundingClientRect();
              return {col: h.getAttribute('col-id'), left: r.left, right: r.right, width: r.width}; })
"""


@pytest.fixture
def context_for(browser) -> Any:  # type: ignore[no-untyped-def]
    """A page in a new context of the given size (a phone: mobile and touch); page errors fail."""
    made: list[Any] = []
    errors: list[str] = []

    def open_context(width: int, height: int, phone: bool = False) -> Any:
        context = browser.new_context(
            viewport={"width": width, "height": height}, is_mobile=phone, has_touch=phone
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


def open_grid(pg, url: str) -> None:  # type: ignore[no-untyped-def]
    open_page(pg, url)
    pg.wait_for_selector("#backfill-grid .ag-row")


def settled_grid(pg, grid: str, width: int) -> None:  # type: ignore[no-untyped-def]
    """Wait until the grid's columns are sized to the page (the grid sizes them again when the
    page's scroll bar appears, which a loaded machine draws late); the caller asserts what is
    on screen then, so a grid that never fits still fails, with its boxes."""
    with contextlib.suppress(PlaywrightTimeout):
        pg.wait_for_function(
            f"(w) => ({HEADER_BOXES_JS.strip()})({json.dumps(grid)}).every(h => h.left >= 0 && h.right <= w)",
            arg=width,
            timeout=10_000,
        )


# -- 1. /backfill at 1440 px ------------------------------------------------------------------


def test_backfill_at_1440_keeps_each_folders_own_name_and_every_column_on_screen(
    demo_server: Server, context_for
) -> None:  # type: ignore[no-untyped-def]
    pg = context_for(1440, 900)
    open_grid(pg, demo_server.base + "/backfill")
    settled_grid(pg, "backfill-grid", 1440)
    heads = pg.evaluate(HEADER_BOXES_JS, "backfill-grid")
    shown = {h["col"] for h in heads}
    # the columns an operator triages by, "next request" included, are shown...
    assert {
        "fid",
        "path",
        "observer",
        "overdue",
        "health",
        "open_for",
        "requests",
        "cnset_remaining_count",
        "next_due_at",
        "next_request",
        "entry_id",
    } <= shown, shown
    # ...and every shown column is on screen, whole, without scrolling the grid or the page
    off = [h for h in heads if h["left"] < 0 or h["right"] > 1440 or h["width"] < 40]
    assert off == [], off
    assert pg.evaluate("() => document.documentElement.scrollWidth") <= 1440
    # every drawn row: the folder's own name (the path's last segment) is whole and on screen, and
    # so are its next request and its store; the whole path is the cell's tooltip
    rows = grid_rows(pg)
    assert len(rows) >= 8
    long_paths = 0
    for r in rows:
        leaf = str(r["path"]).rsplit("\\", 1)[-1]
        got = text_shown(pg, "backfill-grid", r["index"], leaf)
        assert got["whole"] and got["col"] == "path", (r["path"], got)
        for value in (r["observer"], r["next_request"], r["entry_id"]):
            got = text_shown(pg, "backfill-grid", r["index"], str(value))
            assert got["whole"], (value, got)
        # the entry's locality and opening time, folded into its cell, are on screen too
        for value in (r["locality"], str(r["opened_at"]).split(" ")[0]):
            got = text_shown(pg, "backfill-grid", r["index"], str(value))
            assert got["whole"] and got["col"] == "entry_id", (value, got)
        whole_path = text_shown(pg, "backfill-grid", r["index"], str(r["path"]))
        long_paths += not whole_path["whole"]
    assert long_paths > 0  # some paths are too long for their column: their start gave way
    tooltip = pg.evaluate("() => dash_ag_grid.getApi('backfill-grid').getColumnDef('path').tooltipField")
    assert tooltip == "path"
    screenshot(pg, "layout-backfill-1440")


# -- 2. /backfill at 390 px -------------------------------------------------------------------


def test_backfill_on_a_phone_shows_fids_and_stores_whole(demo_server: Server, context_for) -> None:  # type: ignore[no-untyped-def]
    pg = context_for(390, 844, phone=True)
    open_grid(pg, demo_server.base + "/backfill")
    entries = table(demo_server.data, "backfill_entries")
    n_open = int((entries["state"] == "open").sum())

    # the grid settles into its layout once drawn: wait (a condition) until every drawn row shows
    # its FID and store whole, then say what is not
    pg.evaluate(TEXT_BOX_JS)
    with contextlib.suppress(Exception):
        pg.wait_for_function(
            """() => { const api = dash_ag_grid.getApi('backfill-grid');
              const drawn = document.querySelectorAll('#backfill-grid .ag-center-cols-container .ag-row[row-index]');
              return drawn.length > 0 && Array.from(drawn).every(row => {
                const d = api.getDisplayedRowAtIndex(Number(row.getAttribute('row-index'))).data;
                return [d.fid, d.observer].every(v => window.pfTextBox(['backfill-grid', row.getAttribute('row-index'), v]).whole);
              }); }""",
            timeout=10_000,
        )
    bad = [
        (r["index"], value, got)
        for r in grid_rows(pg)
        for value in (r["fid"], r["observer"], "overdue" if r["overdue"] == "yes" else "")
        if value and not (got := text_shown(pg, "backfill-grid", r["index"], str(value)))["whole"]
    ]
    assert bad == [], bad[:5]
    rows = grid_rows(pg)
    assert len(rows) >= 5
    # each drawn row also shows its folder's path, health, open for, next request and remaining
    # CNs whole (wrapped, not cut)
    for r in rows[:5]:
        for value in (str(r["path"]).rsplit("\\", 1)[-1], r["open_for"], r["next_request"], r["entry_id"]):
            got = text_shown(pg, "backfill-grid", r["index"], str(value))
            assert got["whole"], (value, got)
    # the count and the order are the grid's: every open entry, overdue first
    assert pg.evaluate("() => dash_ag_grid.getApi('backfill-grid').getDisplayedRowCount()") == n_open
    assert rows[0]["overdue"] == "yes"
    # nothing scrolls sideways
    assert pg.evaluate("() => document.documentElement.scrollWidth") <= 390
    screenshot(pg, "layout-backfill-390")


# -- 3. the folder page's backfill entries at 1440 px ------------------------------------------

#: each column of the entries table whose header or cells end right of what its box shows
ENTRIES_CUT_JS = """
() => {
  const t = document.querySelector('#pf-entries');
  let box = t.parentElement;
  while (box && !['auto', 'scroll', 'hidden', 'clip'].includes(getComputedStyle(box).overflowX)) box = box.parentElement;
  const right = Math.min(box ? box.getBoundingClientRect().right : Infinity, window.innerWidth);
  const heads = Array.from(t.querySelectorAll('thead th')).map(h => h.innerText.replace('?', '').trim());
  const cut = [];
  for (const row of t.querySelectorAll('tr')) {
    Array.from(row.children).forEach((c, i) => {
      if (c.getBoundingClientRect().right > right + 0.5) cut.push(heads[i]);
    });
  }
  return {heads: heads, cut: Array.from(new Set(cut)), scrolls: box ? box.scrollWidth > box.clientWidth + 0.5 : false};
}
"""


def test_folder_entries_table_shows_every_column_at_1440(demo_server: Server, context_for) -> None:  # type: ignore[no-untyped-def]
    entries = table(demo_server.data, "backfill_entries")
    # the folders whose tables are widest: an open entry (next due, next request) and a closed one
    # ("closed"), with the longest CN sets
    both = entries.groupby("fid")["state"].agg(lambda s: {"open", "satisfied"} <= set(s))
    widest = (
        entries[entries["fid"].isin(both[both].index)]
        .assign(chars=lambda e: e["cnset_opened"].str.len())
        .groupby("fid")["chars"]
        .max()
        .sort_values(ascending=False, kind="stable")
        .index[:8]
    )
    assert len(widest) == 8
    pg = context_for(1440, 900)
    for fid in widest:
        open_page(pg, demo_server.base + f"/folder/{fid}")
        got = pg.evaluate(ENTRIES_CUT_JS)
        assert {"next due", "next request", "closed"} <= set(got["heads"]), got["heads"]
        assert got["cut"] == [] and not got["scrolls"], (fid, got)
        # a closed entry's closing time is on screen, whole
        closed = pg.locator("#pf-entries td.pf-col-closed_at").filter(has_text="Z").first
        assert closed.evaluate(
            "e => e.scrollWidth <= e.clientWidth + 1 && e.getBoundingClientRect().right <= 1440"
        )
    screenshot(pg, "layout-folder-entries-1440")


# -- 4. the reports' matrix: readable cells ------------------------------------------------------

#: every text drawn in the cells of a report's who-knows-what matrix, HTML or SVG (a heatmap's cell
#: labels): its size, and its contrast against what is behind it (WCAG; for an SVG label, the
#: heatmap's pixel under its centre)
MATRIX_TEXTS_JS = """
async () => {
  const C = window.pfColour, out = [];
  for (const el of document.querySelectorAll('#matrix table.matrix td *, #matrix table.matrix td')) {
    const own = Array.from(el.childNodes).filter(n => n.nodeType === 3).map(n => n.textContent).join('').trim();
    const r = el.getBoundingClientRect();
    if (!own || r.width <= 1 || r.height <= 1) continue;
    const s = getComputedStyle(el), bg = C.background(el);
    const seen = C.over(C.parse(s.color), bg);
    out.push({text: own.slice(0, 30), size: parseFloat(s.fontSize), ratio: C.ratio(seen, bg)});
  }
  for (const image of document.querySelectorAll('#matrix .heatmaplayer image')) {
    const img = new Image();
    img.src = image.getAttribute('href') || image.getAttribute('xlink:href');
    await img.decode();
    const canvas = document.createElement('canvas');
    canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
    const ctx = canvas.getContext('2d');
    ctx.drawImage(img, 0, 0);
    const box = image.getBoundingClientRect();
    for (const t of image.closest('.heatmaplayer').querySelectorAll('text')) {
      if (!t.textContent.trim()) continue;
      const r = t.getBoundingClientRect();
      const x = Math.floor((r.x + r.width / 2 - box.x) / box.width * canvas.width);
      const y = Math.floor((r.y + r.height / 2 - box.y) / box.height * canvas.height);
      const p = ctx.getImageData(Math.max(0, Math.min(canvas.width - 1, x)), Math.max(0, Math.min(canvas.height - 1, y)), 1, 1).data;
      const bg = [p[0], p[1], p[2], 1];
      const fill = C.parse(getComputedStyle(t).fill);
      out.push({text: t.textContent.slice(0, 30), size: parseFloat(getComputedStyle(t).fontSize),
                ratio: C.ratio(C.over(fill, bg), bg)});
    }
  }
  return out;
}
"""


def _report_file(server: Server, fid: str, tmp: Path) -> Path:
    """The dashboard's "Download report" of a folder (the bytes ``pfscope report`` writes)."""
    with urllib.request.urlopen(f"{server.base}/report?fid={fid}", timeout=300) as r:
        path = tmp / f"report-{fid}.html"
        path.write_bytes(r.read())
    return path


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_report_matrix_cells_are_readable(scheme: str, demo_server: Server, browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    context = browser.new_context(color_scheme=scheme, viewport={"width": 1400, "height": 1000})
    try:
        pg = context.new_page()
        pg.set_default_timeout(20_000)
        # the busiest folder (3 stores: CN sets in the cells) and the hierarchy (10 stores)
        for fid in (busiest_folder(demo_server.data), "1-1"):
            pg.goto(_report_file(demo_server, fid, tmp_path).as_uri())
            figures = pg.locator("figure .chart").count()
            pg.wait_for_function(
                f"() => document.querySelectorAll('figure .chart .main-svg').length >= {figures}"
            )
            pg.evaluate(COLOUR_JS)
            texts = pg.evaluate(MATRIX_TEXTS_JS)
            assert len(texts) >= 9, (fid, texts)  # every cell says something
            small = [t for t in texts if t["size"] < 12]
            assert small == [], (scheme, fid, small[:5])
            faint = [t for t in texts if t["ratio"] < 4.5]
            assert faint == [], (scheme, fid, faint[:5])
            if fid == "1-1":
                screenshot(pg, f"layout-report-matrix-{scheme}")
    finally:
        context.close()


# -- 6. one wording for the CNs an observer has not been told of ----------------------------------


def test_dashboard_report_and_glossary_say_the_same_words(demo_server: Server, page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    fid = busiest_folder(demo_server.data)
    open_page(page, demo_server.base + f"/folder/{fid}")
    dashboard = page.evaluate(
        "() => Array.from(document.querySelectorAll('#pf-matrix td.pf-cell'))"
        ".map(e => [e.dataset.state, e.innerText])"
    )
    report_path = _report_file(demo_server, fid, tmp_path)
    page.goto(report_path.as_uri())
    grid = page.evaluate(
        "() => Array.from(document.querySelectorAll('#matrix td.cell')).map(e => [e.dataset.state, e.innerText])"
    )
    listed = page.locator("#matrix table.data tbody td:nth-child(3)").all_inner_texts()
    report_text = page.locator("body").inner_text()
    states = {s for s, _ in dashboard}
    assert {"told_later", "not_told"} <= states, states  # the demo's busiest folder has both
    for state in ("told_later", "not_told", "current", "owned"):
        words = cell_label(state)
        assert all(words in text for s, text in dashboard if s == state), (state, words)
        assert all(text.startswith(words) for s, text in grid if s == state), (state, words)
    assert set(listed) <= {cell_label(s) for s in CELL_LABELS} and cell_label("told_later") in listed
    assert "told later" not in report_text.lower()
    open_page(page, demo_server.base + "/glossary")
    assert page.locator("#told-later").inner_text().strip() == cell_label("told_later")
    assert page.locator("#not-told").inner_text().strip() == cell_label("not_told")


# -- 5. the organisation report's folders needing attention --------------------------------------


def test_report_says_how_many_folders_need_attention_as_the_dashboard_does(
    demo_server: Server, page, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    open_page(page, demo_server.base + "/?worst=all")
    count = page.locator("#pf-worst-count").inner_text()
    total = int(re.match(r"([\d,]+) folders? needs? attention", count).group(1).replace(",", ""))  # type: ignore[union-attr]
    dashboard = page.locator("#pf-worst td.pf-col-fid").all_inner_texts()
    assert len(dashboard) == total > 25  # the demo has more than the report's table holds
    with urllib.request.urlopen(demo_server.base + "/report", timeout=300) as r:
        (tmp_path / "org.html").write_bytes(r.read())
    page.goto((tmp_path / "org.html").as_uri())
    said = page.locator("#worst-count").inner_text()
    assert said.startswith(f"{total:,} folders need attention: the 25 worst of {total:,} are listed below"), (
        said
    )
    listed = page.locator("#worst table tbody tr td:first-child").all_inner_texts()
    rest = page.locator("#worst-rest").inner_text()
    assert rest.startswith(f"The other {total - 25:,}, worst first: ")
    named = rest.split(": ", 1)[1].rstrip(".").split(", ")
    # the table and the names after it are the dashboard's list, in its order
    assert listed + named == dashboard


@pytest.mark.parametrize(
    ("scheme", "width"), [("light", 1440), ("dark", 1440), ("light", 390), ("dark", 390)]
)
def test_backfill_texts_reach_aa_contrast(scheme: str, width: int, demo_server: Server, browser) -> None:  # type: ignore[no-untyped-def]
    """The grid's new texts (the entry's muted lines, the cards' labels) and the page's chips read
    4.5:1 or more, light and dark, wide and on a phone."""
    context = browser.new_context(
        color_scheme=scheme, viewport={"width": width, "height": 900}, is_mobile=width < 640
    )
    try:
        pg = context.new_page()
        open_grid(pg, demo_server.base + "/backfill")
        drawn = ".pf-entry-card" if width < 640 else ".pf-entry-kind"
        pg.wait_for_selector(f"#backfill-grid {drawn}")
        bad = low_contrast(pg)
        assert bad == [], (scheme, width, bad[:5])
    finally:
        context.close()
