"""Stage 1 of reading (every line on its own): the JVM fast path for the lines it proves
certain plus ``parse_line`` for the rest, against ``parse_line`` for every line, on one log, in
one Spark session. Prints; asserts nothing.

    PYTHONPATH=. python tests/benchmarks/bench_reading.py LOG_FOLDER [--master local[2]] [--rounds 2]

Each round runs, alternately, from the log file to a filled cache of the parsed lines (as
``read_events`` does): ``fast`` (``parse_stage1``), ``python`` (``parse_stage1(fast=False)``),
and the parts of the fast path alone: ``scan`` (the numbered lines, no parse), ``condition``
(the lines the pattern admits, counted). Printed per run: wall seconds, CPU seconds of the
whole process tree (driver, JVM, Python workers), lines per CPU second, the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
from pyspark.sql import functions as F

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from spark_jobs.fastparse import fast_condition
from spark_jobs.model.topology import topology_from_json
from spark_jobs.reading import counted_lines, list_files, parse_stage1
from spark_jobs.session import spark_session
from tests.benchmarks.bench_compute import tree_cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--only", nargs="*", default=["scan", "condition", "fast", "python"])
    a = ap.parse_args()
    topo = topology_from_json(json.loads((Path(a.log) / "topology.json").read_text()))
    spark = spark_session(a.master, "bench-reading")
    lines, n, _ = counted_lines(spark, list_files([a.log]))

    def filled(make: Callable[[], object]) -> Callable[[], int]:
        def run() -> int:
            df = make().cache()  # type: ignore[attr-defined]
            count = df.count()
            df.unpersist()
            return count
        return run

    runs = {
        "scan": lambda: lines.write.format("noop").mode("overwrite").save(),
        "condition": lambda: lines.filter(fast_condition(F.col("text"), topo)).count(),
        "fast": filled(lambda: parse_stage1(lines, topo)),
        "python": filled(lambda: parse_stage1(lines, topo, fast=False)),
    }
    admitted = lines.filter(fast_condition(F.col("text"), topo)).count()
    print(f"{n} lines ({admitted} taken by the fast path), {a.master}, cores {os.cpu_count()}")
    for r in range(a.rounds):
        for name in a.only:
            load = os.getloadavg()[0]
            c0, t0 = tree_cpu(psutil.Process()), time.perf_counter()
            runs[name]()
            wall, cpu = time.perf_counter() - t0, tree_cpu(psutil.Process()) - c0
            print(f"round {r + 1} {name:9s}: {wall:6.1f} s wall, {cpu:6.1f} CPU s, {n / cpu:9.0f} lines/CPU s,"
                  f" load {load:.1f}", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
