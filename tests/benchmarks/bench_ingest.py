"""Ingest speed: a simulated organisation rendered as Exchange events, exported in each format,
read back by ``run_ingest``; prints records/s per format (wall clock, best of 3) and per CPU
second (the fairer figure on a shared machine). Asserts nothing.

    PYTHONPATH=. python tests/benchmarks/bench_ingest.py [--scenario demo] [--limit 5000]

``--limit`` keeps the first N replication records (sends and receives) of the rendered log.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from spark_jobs.ingest import run_ingest
from spark_jobs.ingest.render import render_log
from spark_jobs.model.topology import load_topology
from spark_jobs.simulator import simulate_to_folder
from tests.unit.ingest.test_roundtrip import WRITERS


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", default="demo")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--limit", type=int, default=5000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        simulate_to_folder(args.scenario, base / "sim", seed=args.seed)
        topo = load_topology(base / "sim" / "topology.json")
        r = render_log(topo, (base / "sim" / "events.jsonl").read_text(encoding="utf-8").splitlines())
        records = r.records[: args.limit]
        by_server = defaultdict(list)
        for rec in records:
            by_server[rec.server.split(".")[0]].append(rec)
        load = os.getloadavg()[0]
        print(f"{args.scenario}: {len(records):,} records from {len(by_server)} servers "
              f"(load average {load:.1f} on {os.cpu_count()} cores)")
        for fmt, write in WRITERS.items():
            logs = base / fmt
            logs.mkdir()
            for server, recs in by_server.items():
                write(recs, logs, server)
            best = cpu = float("inf")
            for _ in range(3):
                started, cpu_started = time.perf_counter(), time.process_time()
                s = run_ingest([str(logs)], base / f"out-{fmt}", topology=str(base / "sim" / "topology.json"))
                best = min(best, time.perf_counter() - started)
                cpu = min(cpu, time.process_time() - cpu_started)
            size = sum(f.stat().st_size for f in logs.iterdir())
            print(f"  {fmt:17s} {s['records_read']:>7,} records  {best:6.2f} s  "
                  f"{s['records_read'] / best:>8,.0f} records/s  (CPU {cpu:.2f} s: "
                  f"{s['records_read'] / cpu:,.0f} records per CPU second; {size / 1e6:.1f} MB, {s['rejected']} rejected)")


if __name__ == "__main__":
    main()
