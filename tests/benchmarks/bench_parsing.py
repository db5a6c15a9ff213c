"""Stage 1 of reading (every line on its own) in the JVM against ``parse_line`` in Python
workers, on one log, in one Spark session. Prints; asserts nothing.

    PYTHONPATH=. python tests/benchmarks/bench_parsing.py LOG_FOLDER [--master local[2]] [--rounds 2]

Each round runs both, alternately, to the end (a ``noop`` write of every column): the JVM path
(``spark_jobs.parsing.parse_lines``) and the Python path (``verdict_row`` per line through
``mapInArrow``, as stage 1 ran before). Printed per run: wall seconds, CPU seconds of the whole
process tree (driver, JVM, Python workers), lines per CPU second, the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from spark_jobs.model.topology import topology_from_json
from spark_jobs.parsing import PARSED_COLUMNS, PARSED_DDL, parse_lines, verdict_row
from spark_jobs.reading import list_files, numbered_lines
from spark_jobs.session import spark_session
from spark_jobs.stream import arrow_schema
from tests.benchmarks.bench_compute import tree_cpu


def python_stage1(topology: dict, files: list[str]):  # type: ignore[no-untyped-def]
    """Stage 1 as it ran in Python workers: ``parse_line`` per line, plain lists through Arrow."""
    schema = arrow_schema(PARSED_COLUMNS)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        topo = topology_from_json(topology)
        for batch in batches:
            d = batch.to_pydict()
            rows = []
            for seq, i, uri, line, text in zip(d["seq"], d["file_index"], d["source_uri"], d["line"], d["text"],
                                               strict=True):
                source = files[i] if i < len(files) else uri
                if text is None:
                    rows.append((seq, source, line, "", "not UTF-8", *(None,) * 21))
                else:
                    rows.append((seq, source, line, text, *verdict_row(text, topo)))
            if rows:
                cols = list(zip(*rows, strict=True))
                yield pa.RecordBatch.from_arrays([pa.array(c, type=f.type) for c, f in zip(cols, schema, strict=True)],
                                                 schema=schema)

    return run


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    topo_json = json.loads((Path(a.log) / "topology.json").read_text())
    topo = topology_from_json(topo_json)
    spark = spark_session(a.master, "bench-parsing")
    files = list_files([a.log])
    lines = numbered_lines(spark, files).cache()
    n = lines.count()
    runs = {
        "jvm": lambda: parse_lines(lines, topo, files),
        "python": lambda: lines.mapInArrow(python_stage1(topo_json, files), schema=PARSED_DDL),
    }
    print(f"{n} lines, {a.master}, cores {os.cpu_count()}")
    for r in range(a.rounds):
        for name, make in runs.items():
            load = os.getloadavg()[0]
            c0, t0 = tree_cpu(psutil.Process()), time.perf_counter()
            make().write.format("noop").mode("overwrite").save()
            wall, cpu = time.perf_counter() - t0, tree_cpu(psutil.Process()) - c0
            print(f"round {r + 1} {name:6s}: {wall:6.1f} s wall, {cpu:6.1f} CPU s, {n / cpu:9.0f} lines/CPU s,"
                  f" load {load:.1f}", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
