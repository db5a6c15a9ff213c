"""The chain an operator runs (``pfscope refresh``: ingest, then compute), hour after hour against
a fresh chain. Prints figures, asserts nothing.

The share is ``bench_ingest.py``'s (12 servers, 1,000 folders x 3 replicas, 7 days, one
``wevtutil`` XML export per server). By default, hour 1: each server's first 80 % of records;
hour 2: each server's later export, overlapping the first by 50 records. With ``--hours N``: the
share starts with each server's first records but N x ``--growth`` (1 %) of them, and each hour
adds every server's next export (``--growth`` of its records, overlapping the one before by 50),
as a dashboard serves the chain's folder: each hour's wall and CPU, against a fresh chain of the
whole share at the last hour, and the time from the exports landing to the dashboard's
``/latest.json`` naming a run that holds them. The chain's two steps, as ``pfscope refresh`` runs
them (``ingest`` into ``OUT/ingested``, ``compute --events OUT/ingested/events`` into
``OUT/published``), each measured as a process tree (``bench_ingest.run``: wall, CPU seconds,
peak RSS, its first line).

    PYTHONPATH=. python tests/benchmarks/bench_chain.py [--servers 12] [--folders 1000] [--cache DIR]
    PYTHONPATH=. python tests/benchmarks/bench_chain.py --hours 10 [--growth 0.01] [--engine auto]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from pfscope.spark_jobs.exchange.event_files import EVENTS_FOLDER
from tests.benchmarks.bench_dashboard import start
from tests.benchmarks.bench_ingest import PFSCOPE, ROOT, export, render, run

CUT = 0.8


#: compute's ``--engine`` (``--engine``)
ENGINE = ["spark"]


def chain(label: str, share: Path, out: Path) -> tuple[float, float]:
    """The two steps ``pfscope refresh`` runs, each measured as its own process tree (a tree's CPU
    seconds are sampled: a step that ended would be lost from the refresh's), summed."""
    ingested = out / "ingested"
    wall_i, cpu_i, _, _ = run(
        f"{label}: ingest", [*PFSCOPE, "ingest", "--logs", str(share), "--out", str(ingested)]
    )
    wall_c, cpu_c, _, _ = run(
        f"{label}: compute",
        [
            *PFSCOPE,
            "compute",
            "--topology",
            str(ingested / "topology.json"),
            "--events",
            str(ingested / EVENTS_FOLDER),
            "--out",
            str(out / "published"),
            "--engine",
            ENGINE[0],
        ],
    )
    print(f"  {label + ': the chain':44s} {wall_i + wall_c:6.1f} s wall  {cpu_i + cpu_c:6.1f} CPU s")
    return wall_i + wall_c, cpu_i + cpu_c


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--servers", type=int, default=12)
    ap.add_argument("--folders", type=int, default=1000)
    ap.add_argument("--days", type=float, default=7.0)
    ap.add_argument("--cache", default=os.environ.get("PFSCOPE_BENCH_CACHE", "/tmp/pfscope-bench"))
    ap.add_argument("--hours", type=int, default=0, help="hours of a share growing by --growth each")
    ap.add_argument("--growth", type=float, default=0.01)
    ap.add_argument("--engine", choices=("spark", "python", "auto"), default="spark", help="compute's")
    args = ap.parse_args()
    ENGINE[0] = args.engine
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    _, by_server = render(cache, args.servers, args.folders, args.days)
    work = Path(tempfile.mkdtemp(prefix="bench-chain-", dir=cache))
    if args.hours:
        try:
            hour_by_hour(by_server, work, args.hours, args.growth)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return
    try:
        share, whole = work / "share", work / "whole"
        share.mkdir()
        whole.mkdir()
        cut = {s: int(len(recs) * CUT) for s, recs in by_server.items()}
        for s, recs in by_server.items():
            export(recs[: cut[s]], share / f"{s}-1.xml")
        n = sum(len(r) for r in by_server.values())
        print(
            f"{len(by_server)} servers, {n:,} records (load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores)"
        )
        chain("hour 1 (first exports, 80 %)", share, work / "chain")
        for s, recs in by_server.items():
            start = cut[s] - 50
            export(recs[start:], share / f"{s}-2.xml", start + 1)
        for f in share.iterdir():
            shutil.copy(f, whole / f.name)
        w2, c2 = chain("hour 2 (later exports added)", share, work / "chain")
        wf, cf = chain("fresh chain of the whole share", whole, work / "fresh")
        print(
            f"hour 2 / fresh: {w2 / wf:.2f}x wall, {c2 / cf:.2f}x CPU (load average {os.getloadavg()[0]:.1f})"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def hour_by_hour(by_server: dict[str, list[Any]], work: Path, hours: int, growth: float) -> None:
    """The share growing by ``growth`` of each server's records an hour, for ``hours`` hours."""
    share = work / "share"
    share.mkdir()
    cut = {s: int(len(recs) * (1 - hours * growth)) for s, recs in by_server.items()}
    for s, recs in by_server.items():
        export(recs[: cut[s]], share / f"{s}-00.xml")
    n = sum(len(r) for r in by_server.values())
    print(
        f"{len(by_server)} servers, {n:,} records, {hours} hours of {growth:.0%} "
        f"(load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores)"
    )
    chain("hour 0 (the first exports)", share, work / "chain")
    proc, base = start(work / "chain", work / "cache", 0)
    rows = []
    try:
        for hour in range(1, hours + 1):
            for s, recs in by_server.items():
                end = len(recs) if hour == hours else int(len(recs) * (1 - (hours - hour) * growth))
                export(recs[cut[s] - 50 : end], share / f"{s}-{hour:02d}.xml", cut[s] - 49)
                cut[s] = end
            before = _served(base)
            landed = time.monotonic()
            wall, cpu = chain(f"hour {hour}", share, work / "chain")
            while _served(base) == before:
                time.sleep(0.05)
            rows.append((hour, wall, cpu, time.monotonic() - landed))
    finally:
        proc.terminate()
        proc.wait()
    wf, cf = chain("fresh chain of the whole share", share, work / "fresh")
    print(
        f"{'hour':>5} {'wall s':>8} {'CPU s':>8} {'x fresh wall':>13} {'x fresh CPU':>12} {'export to /latest.json s':>25}"
    )
    for hour, wall, cpu, seen in rows:
        print(f"{hour:5d} {wall:8.1f} {cpu:8.1f} {wall / wf:13.2f} {cpu / cf:12.2f} {seen:25.1f}")
    print(f"(load average {os.getloadavg()[0]:.1f})")


def _served(base: str) -> str | None:
    """The run the dashboard serves now."""
    try:
        with urllib.request.urlopen(base + "/latest.json", timeout=10) as r:
            return str(json.loads(r.read()).get("run_id"))
    except (OSError, ValueError):
        return None


if __name__ == "__main__":
    os.chdir(ROOT)
    main()
