"""First load of each dashboard page in Chromium with an EMPTY browser cache, then warm.
Prints; asserts nothing.

    python tests/benchmarks/bench_first_load.py --data DIR [--repeat 3] [--workers 0]

``DIR`` is a ``compute --out`` folder (e.g. the demo: ``pfscope simulate --scenario demo --out D &&
pfscope compute --topology D/topology.json --events D/events.jsonl --out D/runs``). A ``pfscope serve``
starts on a free port; for each page a fresh browser context (empty cache) loads it and records the
time until the page's heading is on screen and every chart is drawn, the requests made and the
bytes transferred (encoded: what went over the wire) and decoded; then the same page again in the
same context (warm: cached assets). Also: the server's CPU seconds, the load average.

Target (issue 15): every page under 1.5 s cold.
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
    t0 = time.perf_counter()
    page.goto(url)
    page.wait_for_selector("main h1")
    page.wait_for_load_state("networkidle")
    figures = page.locator("main .pf-figure").count()
    if figures:
        page.wait_for_function(
            f"() => document.querySelectorAll('main .pf-figure .main-svg').length >= {figures}"
        )
    grids = page.locator("main .ag-root").count()
    seconds = time.perf_counter() - t0
    return {
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
                for path in pages(args.data).values():
                    load(warm_ctx.new_page(), warm_ctx.new_cdp_session(warm_ctx.pages[-1]), base + path)
                warm_ctx.close()
                print(
                    f"{'page':<10} {'cold s (median)':>15} {'cold max':>9} {'warm s':>7} {'requests':>8} "
                    f"{'wire KiB':>9} {'decoded KiB':>11}"
                )
                for name, path in pages(args.data).items():
                    cold, warm, last = [], [], {}
                    for _ in range(args.repeat):
                        ctx = browser.new_context()  # empty cache
                        pg = ctx.new_page()
                        cdp = ctx.new_cdp_session(pg)
                        cdp.send("Network.enable")
                        cdp.send("Network.setCacheDisabled", {"cacheDisabled": False})
                        last = load(pg, cdp, base + path)
                        cold.append(last["s"])
                        pg2 = ctx.new_page()
                        cdp2 = ctx.new_cdp_session(pg2)
                        cdp2.send("Network.enable")
                        warm.append(load(pg2, cdp2, base + path)["s"])
                        ctx.close()
                    print(
                        f"{name:<10} {statistics.median(cold):>15.2f} {max(cold):>9.2f} {statistics.median(warm):>7.2f} "
                        f"{last['requests']:>8} {last['wire_kb']:>9.0f} {last['decoded_kb']:>11.0f}"
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
