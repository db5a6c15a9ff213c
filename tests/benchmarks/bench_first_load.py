"""First load of each dashboard page in Chromium with an EMPTY browser cache, then warm.
Prints; asserts nothing.

    python tests/benchmarks/bench_first_load.py --data DIR [--repeat 3] [--workers 0] [--page NAME]...

``DIR`` is a ``compute --out`` folder (e.g. the demo: ``pfscope simulate --scenario demo --out D &&
pfscope compute --topology D/topology.json --events D/events.jsonl --out D/runs``). A ``pfscope serve``
starts on a free port; for each page a fresh browser context (empty cache) loads it and records the
time until the page's heading is on screen and every chart is drawn, the requests made and the
bytes transferred (encoded: what went over the wire) and decoded; then the same page again in the
same context (warm: cached assets). Also: the server's CPU seconds, the load average.

Per load, measured in the page from the start of the navigation: *first screen*, the heading
there, every chart within the first screen (the viewport) drawn with its data, and the page
answering then (a frame and a task after it); *usable*, that or, when later, the end of the last
main-thread task of 50 ms or more begun before the network fell quiet (the last response + 0.5 s,
without scrolling): a time to interactive (on the overview, the charts drawn at once after the
first screen held the page past it); *task after*, the longest such task ending after *usable*
(median). From before the navigation, *charts*: the network idle (Playwright's 500 ms without a
request) and every chart of the page drawn with its data, the charts drawn when they are about
to be seen (app/lazy_figure.py: the overview's, all below the fold) scrolled to one by one, top
to bottom (the first version of this benchmark measured the network idle and every chart drawn,
then all drawn at once: its "cold"). ``--page overview`` measures only that page.

Target (issues 15 and 35): every page usable under 1.5 s cold.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd
import psutil

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.benchmarks.bench_compute import tree_cpu  # noqa: E402
from tests.benchmarks.bench_dashboard import CHROMIUM_ARGS, start  # noqa: E402


def pages(data: Path) -> dict[str, str]:
    latest = json.loads((data / "LATEST").read_text())
    run = data / latest["path"]
    entries = pd.read_parquet(run / "backfill_entries", columns=["fid"])
    fid = (
        str(entries[entries["fid"] != "1-1"].groupby("fid").size().sort_values().index[-1])
        if len(entries)
        else "1-1"
    )
    store = str(sorted(pd.read_parquet(run / "stores", columns=["store"])["store"])[0])
    return {
        "overview": "/",
        "folder": f"/folder/{fid}",
        "store": f"/store/{store}",
        "backfill": "/backfill",
        "replicas": "/replicas",
        "rejects": "/rejects",
        "glossary": "/glossary",
    }


#: a chart drawn with its data: plotly's svg in it and, for a chart drawn after the first screen
#: (app/lazy_figure.py: the overview's, all below the fold), its ``div[data-lazy]`` marked drawn
DRAWN = (
    "g => !!g.querySelector('.main-svg') && "
    "(!g.closest('[data-lazy]') || g.closest('[data-lazy]').hasAttribute('data-drawn'))"
)
#: every chart of the page drawn (the lazy ones are drawn without scrolling, when the browser is idle)
EVERY_CHART_DRAWN = f"() => Array.from(document.querySelectorAll('main .dash-graph')).every({DRAWN})"
#: measured in the page, from the start of the navigation (``performance.now()``): ``usable``, when
#: the heading is there and every chart within the first screen (the viewport) is drawn, and the
#: page then answers (a frame and a task after it); every main-thread task of 50 ms or more
#: (``longtask``), to say what a click after that moment may wait for
IN_PAGE = f"""
window.__pfLoad = {{long: []}};
try {{
  new PerformanceObserver(l => l.getEntries().forEach(e => window.__pfLoad.long.push([e.startTime, e.duration])))
    .observe({{type: 'longtask', buffered: true}});
}} catch (e) {{}}
const __pfFirst = () => !!document.querySelector('main h1') && Array.from(
  document.querySelectorAll('main .dash-graph')).filter(
  g => g.getBoundingClientRect().top < window.innerHeight).every({DRAWN});
const __pfWatch = new MutationObserver(() => {{
  if (window.__pfLoad.ready || !__pfFirst()) {{ return; }}
  window.__pfLoad.ready = performance.now();
  __pfWatch.disconnect();
  requestAnimationFrame(() => setTimeout(() => {{ window.__pfLoad.usable = performance.now(); }}, 0));
}});
__pfWatch.observe(document, {{childList: true, subtree: true, attributes: true, attributeFilter: ['data-drawn']}});
"""


def load(page: Any, cdp: Any, url: str) -> dict[str, float]:
    """One navigation: seconds to heading and charts, requests, bytes over the wire and decoded."""
    sizes: dict[str, dict[str, float]] = {}
    cdp.on(
        "Network.responseReceived",
        lambda e: sizes.setdefault(e["requestId"], {}).update(
            {"decoded": 0.0, "cached": float(e["response"].get("fromDiskCache", False))}
        ),
    )
    cdp.on(
        "Network.dataReceived",
        lambda e: sizes.setdefault(e["requestId"], {}).update(
            {"decoded": sizes.get(e["requestId"], {}).get("decoded", 0.0) + e["dataLength"]}
        ),
    )
    cdp.on(
        "Network.loadingFinished",
        lambda e: sizes.setdefault(e["requestId"], {}).update({"wire": float(e["encodedDataLength"])}),
    )
    page.add_init_script(IN_PAGE)
    t0 = time.perf_counter()
    page.goto(url)
    page.wait_for_function("() => window.__pfLoad && window.__pfLoad.usable !== undefined")
    # the network idle (Playwright: 500 ms without a request), without scrolling; then a frame and a
    # task, so that the long tasks are reported
    page.wait_for_load_state("networkidle")
    got = page.evaluate(
        "() => new Promise(r => requestAnimationFrame(() => setTimeout(() => r({...window.__pfLoad,"
        " quiet: Math.max(0, ...performance.getEntriesByType('resource').map(e => e.responseEnd)) + 500"
        "}), 0)))"
    )
    first = got["usable"]
    # usable: the first screen answering and every long task begun before the network fell quiet
    # over (a time to interactive: the overview's charts, drawn at once, held the page past it)
    before_quiet = [start + d for start, d in got["long"] if start < got["quiet"]]
    usable = max([first, *before_quiet]) / 1000
    longest_after = max([d for start, d in got["long"] if start + d > usable * 1000], default=0.0)
    # charts: every chart drawn with its data, a chart drawn when it is about to be seen
    # (app/lazy_figure.py) scrolled to, top to bottom (seconds from before the navigation)
    for chart in page.locator("main [data-lazy]").all():
        chart.scroll_into_view_if_needed()
        page.wait_for_function("el => el.hasAttribute('data-drawn')", arg=chart.element_handle())
    page.wait_for_function(EVERY_CHART_DRAWN)
    seconds = time.perf_counter() - t0
    figures = page.locator("main .dash-graph").count()
    grids = page.locator("main .ag-root").count()
    return {
        "first": first / 1000,
        "usable": usable,
        "longest_after_ms": longest_after,
        "s": seconds,
        "requests": len(sizes),
        "wire_kb": sum(s.get("wire", 0) for s in sizes.values()) / 1024,
        "decoded_kb": sum(s.get("decoded", 0) for s in sizes.values()) / 1024,
        "charts": figures,
        "grids": grids,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--page", action="append", help="only this page (overview, folder, ...); repeatable")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as cache:
        proc, base = start(args.data, Path(cache), args.workers)
        server = psutil.Process(proc.pid)
        try:
            cpu0 = tree_cpu(server)  # pfscope serve's gunicorn workers are its children
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
                # the server's own cache warmed once per page: the figures measure the browser's first load
                warm_ctx = browser.new_context()
                for name, path in pages(args.data).items():
                    if args.page and name not in args.page:
                        continue
                    load(warm_ctx.new_page(), warm_ctx.new_cdp_session(warm_ctx.pages[-1]), base + path)
                warm_ctx.close()
                print(
                    f"{'page':<10} {'first screen':>12} {'usable s (median)':>17} {'usable max':>10} "
                    f"{'charts s (median)':>17} "
                    f"{'charts max':>10} {'warm usable':>11} {'warm charts':>11} {'task after ms':>13} {'requests':>8} "
                    f"{'wire KiB':>9} {'decoded KiB':>11}"
                )
                for name, path in pages(args.data).items():
                    if args.page and name not in args.page:
                        continue
                    cold, warm, last = [], [], {}
                    usable, warm_usable, after, first = [], [], [], []
                    for _ in range(args.repeat):
                        ctx = browser.new_context()  # empty cache
                        pg = ctx.new_page()
                        cdp = ctx.new_cdp_session(pg)
                        cdp.send("Network.enable")
                        cdp.send("Network.setCacheDisabled", {"cacheDisabled": False})
                        last = load(pg, cdp, base + path)
                        cold.append(last["s"])
                        usable.append(last["usable"])
                        after.append(last["longest_after_ms"])
                        first.append(last["first"])
                        pg2 = ctx.new_page()
                        cdp2 = ctx.new_cdp_session(pg2)
                        cdp2.send("Network.enable")
                        again = load(pg2, cdp2, base + path)
                        warm.append(again["s"])
                        warm_usable.append(again["usable"])
                        ctx.close()
                    print(
                        f"{name:<10} {statistics.median(first):>12.2f} {statistics.median(usable):>17.2f} "
                        f"{max(usable):>10.2f} "
                        f"{statistics.median(cold):>17.2f} {max(cold):>10.2f} {statistics.median(warm_usable):>11.2f} "
                        f"{statistics.median(warm):>11.2f} {statistics.median(after):>13.0f} "
                        f"{last['requests']:>8} {last['wire_kb']:>9.0f} "
                        f"{last['decoded_kb']:>11.0f}"
                    )
                browser.close()
            cpu = tree_cpu(server) - cpu0
            print(
                f"server CPU {cpu:.1f} s; load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}; "
                f"cores {os.cpu_count()}"
            )
        finally:
            proc.terminate()
            proc.wait(timeout=10)


if __name__ == "__main__":
    main()
