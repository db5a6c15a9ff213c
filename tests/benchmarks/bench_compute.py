"""The Spark job against its floor and its oracle, measured in one run. Prints; asserts nothing.

    python tests/benchmarks/bench_compute.py --events 1000000 [--events 10000000] [--keep DIR]

For each size: a ``scale`` log is simulated (or reused from --keep), then, each in its own
process so peak memory is its own: Spark reading the JSONL and counting it (the floor), the job
on local[1] and on local[2], and the reference replay. Wall time, events/s and peak RSS of the
process tree are printed as a table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

FLOOR = """
import sys
from spark_jobs.session import spark_session
spark = spark_session(sys.argv[1])
print(spark.read.text(sys.argv[2]).count())
"""


def scale_options(events: int) -> list[str]:
    """Sizes that give about ``events`` events (about 48 events per folder-day at 4 changes)."""
    folders = max(200, events // (48 * 14))
    return ["--stores", "30", "--sites", "5", "--folders", str(folders), "--replicas", "3", "--days", "14",
            "--changes-per-day", "4"]


def measure(cmd: list[str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (GB) of the whole process tree, and stdout."""
    start = time.perf_counter()
    proc = psutil.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    peak = 0
    while proc.poll() is None:
        try:
            tree = [proc, *proc.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
        except psutil.Error:
            pass
        time.sleep(0.2)
    out = proc.stdout.read() if proc.stdout else ""
    if proc.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed with {proc.returncode}")
    return time.perf_counter() - start, peak / 1e9, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, action="append", help="target log size (repeatable)")
    ap.add_argument("--keep", help="folder to keep (and reuse) simulated logs in")
    args = ap.parse_args()
    sizes = args.events or [1_000_000]
    root = Path(args.keep or tempfile.mkdtemp(prefix="pfscope-bench-"))
    py = sys.executable
    pfscope = str(Path(py).with_name("pfscope"))
    print(f"machine: {os.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB, Python {sys.version.split()[0]}")
    print(f"{'events':>12} {'what':<22} {'seconds':>9} {'events/s':>12} {'peak GB':>8}")
    for size in sizes:
        data = root / f"scale-{size}"
        if not (data / "events.jsonl").exists():
            subprocess.run([pfscope, "simulate", "--scenario", "scale", "--out", str(data), "--no-progress",
                            *scale_options(size)], check=True, stdout=subprocess.DEVNULL)
        with open(data / "events.jsonl", "rb") as fh:
            n = sum(1 for _ in fh)
        topo, events = str(data / "topology.json"), str(data / "events.jsonl")
        runs = {
            "floor: read + count": [py, "-c", FLOOR, "local[2]", events],
            "job local[1]": [pfscope, "compute", "--topology", topo, "--events", events,
                             "--out", str(data / "runs1"), "--master", "local[1]"],
            "job local[2]": [pfscope, "compute", "--topology", topo, "--events", events,
                             "--out", str(data / "runs2"), "--master", "local[2]"],
            "replay (plain Python)": [pfscope, "replay", "--topology", topo, "--events", events],
        }
        for what, cmd in runs.items():
            seconds, peak, _ = measure(cmd)
            print(f"{n:>12,} {what:<22} {seconds:>9.1f} {n / seconds:>12,.0f} {peak:>8.2f}", flush=True)
    print(json.dumps({"logs": str(root)}))


if __name__ == "__main__":
    main()
