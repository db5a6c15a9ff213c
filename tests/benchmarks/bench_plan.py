"""The what-if planner's speed on an organisation where each store holds about 5,000 folders.
Prints; asserts nothing.

    python tests/benchmarks/bench_plan.py [--data DIR] [--rounds 3]

Without ``--data`` it simulates one (``scale``: 6 stores, 10,000 folders, 3 replicas each, 2 days,
2 changes per folder and day) and publishes it with ``pfscope compute``. Then, per plan:

- ``make_plan`` (``pfscope plan``'s, suggestions included) in a fresh process, ``--rounds`` times:
  wall seconds, CPU seconds (its forked workers' included) and peak memory of the process and of
  its largest worker, the folders played and how many of them the plan changed (the others keep
  the plan's play as their baseline);
- the ``/plan`` page in Chromium (a ``pfscope serve`` started with an empty cache, the page opened
  once without a plan so its scripts are loaded): navigation until the verdict is on screen, cold
  (the first load of that plan), then until the suggestions are (they follow the verdict), and
  warm (the same URL again: the run's cache).

Target (issue 37): a plan over one store's folders (up to 5,000) answers on the page in under 3 s.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.benchmarks.bench_dashboard import start  # noqa: E402

SCALE = ["--stores", "6", "--sites", "2", "--folders", "10000", "--replicas", "3", "--days", "2"]
SCALE += ["--changes-per-day", "2"]
PLANS = {
    "maintenance (4 h)": ["down PF0002 at +1h until +5h"],
    "two stores, a day each": ["down PF0001 at +3d until +4d", "down PF0002 at +3d until +5d"],
    "down for good": ["down PF0003"],
    "decommission": ["decommission PF0004"],
    "restore from a day back": ["restore PF0005 from +0m"],  # replaced by the as-of less a day
    "add a replica": ["add PF0006 to FID"],  # FID: a folder PF0006 is not a replica of
}
#: what the child process runs: one plan, timed from inside, with its peak memory
CHILD = """
import json, resource, sys, time
t, c = time.perf_counter(), time.process_time()
from pfscope.spark_jobs.compute.planning import make_plan
plan = make_plan(sys.argv[1], sys.argv[2:])
kids = resource.getrusage(resource.RUSAGE_CHILDREN)  # the forked workers (plan_workers)
print(json.dumps({
    "wall": time.perf_counter() - t, "cpu": time.process_time() - c + kids.ru_utime + kids.ru_stime,
    "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "workers_rss_mb": kids.ru_maxrss / 1024,
    "folders": len(plan.played.planned),
    "changed": sum(f.diverged for f in plan.played.planned.values()),
    "verdict": plan.result.verdict,
}))
"""


def pfscope(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pfscope.app.cli", *args], cwd=ROOT, check=True)


def publish(work: Path) -> Path:
    pfscope("simulate", "--scenario", "scale", *SCALE, "--out", str(work), "--no-progress")
    started = time.perf_counter()
    out = work / "published"
    pfscope(
        "compute",
        "--topology",
        str(work / "topology.json"),
        "--events",
        str(work / "events.jsonl"),
        "--out",
        str(out),
    )
    print(f"published in {time.perf_counter() - started:.0f} s")
    return out


def concrete(data: Path) -> dict[str, list[str]]:
    """The plans with the run's own as-of and folder names filled in."""
    from pfscope.spark_jobs.compute.planning import open_run
    from pfscope.spark_jobs.model.timeutil import DAY, format_ts

    run = open_run(data)
    fid = next(f for f, stores in sorted(run.known.lists.items()) if "PF0006" not in stores and f != "1-1")
    out = dict(PLANS)
    out["restore from a day back"] = [f"restore PF0005 from {format_ts(run.as_of - DAY)}"]
    out["add a replica"] = [f"add PF0006 to {fid}"]
    return out


def run_cli(data: Path, actions: list[str]) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(data), *actions],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def page_seconds(base: str, actions: list[str]) -> tuple[float, float | None, float]:
    """Cold: until the verdict is on screen, then until the suggestions are (a plan that is not
    safe: they come after the verdict, None otherwise); warm: until the verdict, again."""
    from playwright.sync_api import sync_playwright

    url = base + "/plan?" + urllib.parse.urlencode([("action", a) for a in actions])
    times = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium")
        page = browser.new_page()
        page.goto(base + "/plan")  # the dashboard's scripts loaded: what follows is the plan's own
        page.locator("#plan-actions").wait_for(timeout=120_000)
        suggested = None
        for _ in range(2):
            started = time.perf_counter()
            page.goto(url)
            page.locator("#plan-verdict, #plan-error").first.wait_for(timeout=120_000)
            times.append(time.perf_counter() - started)
            if suggested is None and page.locator("#plan-suggestions-slot").count():
                page.locator("#plan-suggestions").wait_for(timeout=300_000)
                suggested = time.perf_counter() - started
        browser.close()
    return times[0], suggested, times[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, help="a compute --out folder (default: simulate and publish one)")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    data = args.data or publish(Path(tempfile.mkdtemp(prefix="pfscope-bench-plan-")))
    plans = concrete(data)
    print(f"load average {os.getloadavg()[0]:.1f}; {len(plans)} plans, {args.rounds} rounds each")
    print(
        "plan | folders | changed | CLI wall s (median, max) | CPU s, workers included | peak MB (workers) | verdict"
    )
    for name, actions in plans.items():
        runs = [run_cli(data, actions) for _ in range(args.rounds)]
        walls = [r["wall"] for r in runs]
        print(
            f"{name} | {runs[0]['folders']} | {runs[0]['changed']} | {statistics.median(walls):.2f}, {max(walls):.2f}"
            f" | {statistics.median(r['cpu'] for r in runs):.2f} | {max(r['rss_mb'] for r in runs):.0f}"
            f" ({max(r['workers_rss_mb'] for r in runs):.0f})"
            f" | {runs[0]['verdict']}"
        )
    with tempfile.TemporaryDirectory() as cache:
        proc, base = start(data, Path(cache), 0)
        try:
            print("plan | page cold s | suggestions shown s | page warm s (from navigation, on screen)")
            for name, actions in plans.items():
                cold, suggested, warm = page_seconds(base, actions)
                shown = "-" if suggested is None else f"{suggested:.2f}"
                print(f"{name} | {cold:.2f} | {shown} | {warm:.2f}")
        finally:
            proc.terminate()
    print(
        f"this process's children: {resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime:.0f} CPU s in all"
    )


if __name__ == "__main__":
    main()
