"""Reports opened from disk in Debian's Chromium with the network off and every request blocked.

Each report is made by ``pfscope report`` (a subprocess, as an operator runs it) from the real
Spark job's runs (the hostile worked example and the demo), then opened as a ``file://`` page
in an offline context whose router aborts and records anything that is not the file itself.
Checks: every chart drew its SVG marks, nothing was requested, no console error, no dialog,
the hostile folder path is shown literally (heading and plotly title) and ran nothing, hover
works, and the print stylesheet hides the controls and prints to PDF.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pfscope.app.figures import CELL_LABELS, cell_label
from tests.published_runs import HOSTILE_PATH, ROOT, _env, published
from tests.unit.app.test_report import busiest_fid

AT = "2026-11-04T20:00:00Z"
MB = 1024 * 1024


@dataclass
class Made:
    path: Path
    size: int
    seconds: float


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Made]:
    we, demo = published("worked-example"), published("demo")
    out = tmp_path_factory.mktemp("reports")
    views: dict[str, tuple[Path, list[str]]] = {
        "we-org": (we, []),
        "we-folder": (we, ["--fid", "1-123"]),
        "we-folder-at": (we, ["--fid", "1-123", "--at", AT]),
        "demo-org": (demo, []),
        "demo-folder": (demo, ["--fid", busiest_fid(demo)]),
    }
    made: dict[str, Made] = {}
    for name, (data, args) in views.items():
        path = out / f"{name}.html"
        started = time.perf_counter()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pfscope.app.cli",
                "report",
                "--data",
                str(data),
                "--out",
                str(path),
                *args,
            ],
            cwd=ROOT,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        made[name] = Made(path, path.stat().st_size, time.perf_counter() - started)
        print(f"{name}: {made[name].size:,} bytes in {made[name].seconds:.1f} s")
    return made


@dataclass
class Offline:
    page: Any
    blocked: list[str] = field(default_factory=list)
    requested: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)


@pytest.fixture
def offline(browser) -> Iterator[Any]:  # type: ignore[no-untyped-def]
    """Open a report from disk with the network off; yields an opener, closes the contexts after."""
    contexts = []

    def open_report(path: Path) -> Offline:
        context = browser.new_context(offline=True, viewport={"width": 1400, "height": 1000})
        contexts.append(context)
        page = context.new_page()
        state = Offline(page)

        def route(r: Any) -> None:
            if r.request.url.startswith("file:"):
                r.continue_()
            else:
                state.blocked.append(r.request.url)
                r.abort()

        context.route("**/*", route)
        page.on("request", lambda req: state.requested.append(req.url))
        page.on("console", lambda m: state.errors.append(m.text) if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda e: state.errors.append(str(e)))
        page.on("dialog", lambda d: (state.dialogs.append(d.message), d.dismiss()))
        page.goto(path.as_uri())
        page.wait_for_function(
            "() => [...document.querySelectorAll('div.chart')].every(d => d.querySelector('svg.main-svg'))",
            timeout=30_000,
        )
        return state

    yield open_report
    for c in contexts:
        c.close()


def assert_clean(state: Offline, path: Path) -> None:
    assert state.blocked == [], f"requests attempted: {state.blocked}"
    assert state.requested == [path.as_uri()], state.requested
    assert state.errors == [], state.errors
    assert state.dialogs == []
    assert state.page.evaluate("() => window.__pfxss === undefined")


def charts_drawn(page: Any) -> list[int]:
    """Per chart: how many data marks plotly drew (heatmap images, bar and scatter paths, points)."""
    return page.evaluate(
        """() => [...document.querySelectorAll('div.chart')].map(d =>
             d.querySelectorAll('.heatmaplayer image, .barlayer path, .scatterlayer path, .point').length)"""
    )


@pytest.mark.parametrize("name", ["we-org", "demo-org"])
def test_organisation_report_renders_offline(reports: dict[str, Made], offline: Any, name: str) -> None:
    made = reports[name]
    state = offline(made.path)
    page = state.page
    drawn = charts_drawn(page)
    # health bars, the recovery chart (the demo's replicas lack CNs at the as-of; none of the worked
    # example's does), the backfill totals, the per-store backfill heatmap, the lag heatmap
    recovery = 1 if name == "demo-org" else 0
    assert page.locator("#forecast div.chart").count() == recovery
    assert len(drawn) == 4 + recovery and all(n > 0 for n in drawn), drawn
    for section in ("accounting", "stores", "worst", "open-entries", "trend", "lag", "at-risk"):
        assert page.locator(f"section#{section}").is_visible()
    assert page.locator("#lag .heatmaplayer image").count() == 2  # the lag, and its diagonal ("self") over it
    # the organisation's open and overdue lines (and the marks of what happened), then one heatmap of
    # stores x time, a row per store: no line per store whose styles would repeat
    assert page.locator("#trend .scatterlayer .trace").count() >= 2
    assert page.locator("#trend .heatmaplayer image").count() >= 1
    stores = page.locator("#stores tbody tr").count()
    rows = page.locator("#trend .ytick").count()
    assert stores <= 40 and rows >= stores  # every store a row (the lines' axis adds its own ticks)
    assert made.size < 6 * MB
    assert_clean(state, made.path)


@pytest.mark.parametrize("name", ["we-folder", "we-folder-at", "demo-folder"])
def test_folder_report_renders_offline_and_is_interactive(
    reports: dict[str, Made], offline: Any, name: str
) -> None:
    made = reports[name]
    state = offline(made.path)
    page = state.page
    drawn = charts_drawn(page)
    assert len(drawn) == 1 and all(n > 0 for n in drawn), drawn  # the backfill timeline
    # the matrix is a table: every cell says its state and its CN set in words, no hover needed
    cells = page.locator("#matrix table.matrix td.cell")
    assert cells.count() > 0
    texts = cells.all_inner_texts()
    assert all(any(t.startswith(cell_label(state)) for state in CELL_LABELS) for t in texts), texts[:3]
    # hover a point of the timeline: plotly shows the entry
    page.locator("#entries .nsewdrag").first.scroll_into_view_if_needed()
    box = page.locator("#entries .scatterlayer .point").first.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.5)
    page.wait_for_selector("#entries .hoverlayer .hovertext", timeout=5_000)
    assert page.locator("#entries .hoverlayer .hovertext").count() > 0
    # the verdict first, on the first screen: a line per unhealthy replica, or that all is well
    page.mouse.move(0, 0)
    page.evaluate("() => window.scrollTo(0, 0)")
    verdict = page.locator("section#verdict")
    assert verdict.is_visible() and verdict.bounding_box()["y"] < 1000
    lines = page.locator("#verdict li").all_inner_texts()
    if name == "demo-folder":  # its replicas lack CNs: one line each, the next request for those it knows of
        assert lines and all(" lacks " in t for t in lines), lines
        assert all("next request" in t for t in lines if "it knows of" in t), lines
        assert any("not told yet" in t or "has not been told of" in t for t in lines), lines
    else:
        assert lines == [] and "Every replica is in sync" in verdict.inner_text()
    assert made.size < 6 * MB
    assert_clean(state, made.path)


def test_hostile_folder_path_stays_text_in_the_browser(reports: dict[str, Made], offline: Any) -> None:
    state = offline(reports["we-folder"].path)
    page = state.page
    assert HOSTILE_PATH in page.locator("h1").inner_text()
    assert HOSTILE_PATH in page.title()
    titles = [t.text_content() for t in page.locator("#matrix table.matrix caption, #entries .gtitle").all()]
    assert len(titles) == 2 and all(HOSTILE_PATH in t for t in titles), titles
    assert page.locator("img").count() == 0  # the <img onerror> is text, not an element
    assert (
        page.evaluate("() => document.scripts.length")
        == 2 + page.locator("script[type='application/json']").count()
    )
    assert_clean(state, reports["we-folder"].path)


def test_print_stylesheet_hides_controls_and_prints(reports: dict[str, Made], offline: Any) -> None:
    made = reports["demo-org"]
    state = offline(made.path)
    page = state.page
    assert page.locator("nav.toc").is_visible()
    page.emulate_media(media="print")
    assert page.locator("nav.toc").is_hidden()
    assert all(not m.is_visible() for m in page.locator(".modebar").all())
    assert page.evaluate("() => getComputedStyle(document.querySelector('table.data thead')).display") == (
        "table-header-group"
    )
    pdf = page.pdf(format="A4", landscape=True, print_background=False)
    assert pdf.startswith(b"%PDF") and pdf.count(b"/Type /Page") >= 2
    assert_clean(state, made.path)


def test_a_script_that_slipped_past_escaping_would_not_run(
    reports: dict[str, Made], offline: Any, tmp_path: Path
) -> None:
    """Defence in depth: the page's CSP allows only the hashed plotly.js and boot scripts."""
    page_text = reports["we-folder"].path.read_text(encoding="utf-8")
    tampered = tmp_path / "tampered.html"
    tampered.write_text(
        page_text.replace("<footer", "<script>window.__pfxss = 9</script><footer", 1), encoding="utf-8"
    )
    state = offline(tampered)
    assert all(n > 0 for n in charts_drawn(state.page))  # the listed scripts still run
    assert state.page.evaluate("() => window.__pfxss === undefined")
    assert any("Content Security Policy" in e for e in state.errors), state.errors
    assert state.blocked == [] and state.dialogs == []
