"""The chain an operator runs (``pfscope refresh``: ingest, then compute), hour 2 against a fresh
chain. Prints figures, asserts nothing.

The share is ``bench_ingest.py``'s (12 servers, 1,000 folders x 3 replicas, 7 days, one
``wevtutil`` XML export per server). Hour 1: each server's first 80 % of records; hour 2: each
server's later export, overlapping the first by 50 records. The chain's two steps, as ``pfscope
refresh`` runs them (``ingest`` into ``OUT/ingested``, ``compute`` into ``OUT/published``), each
measured as a process tree (``bench_ingest.run``: wall, CPU seconds, peak RSS, its first line).

    PYTHONPATH=. python tests/benchmarks/bench_chain.py [--servers 12] [--folders 1000] [--cache DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

from pfscope.spark_jobs.exchange.event_files import EVENTS_FOLDER
from tests.benchmarks.bench_ingest import PFSCOPE, ROOT, export, render, run

CUT = 0.8


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
    args = ap.parse_args()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    _, by_server = render(cache, args.servers, args.folders, args.days)
    work = Path(tempfile.mkdtemp(prefix="bench-chain-", dir=cache))
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


if __name__ == "__main__":
    os.chdir(ROOT)
    main()
