"""Ingest speed and memory. Prints figures, asserts nothing.

Default: a simulated organisation of 12 servers (1,000 folders x 3 replicas, 7 days: the ``scale``
scenario) rendered as one ``wevtutil`` XML export per server, then, each as its own process
(``pfscope ingest``, ``pfscope compute``) measured as a whole process tree (wall, CPU seconds,
peak RSS, sampled every 0.2 s):

- ingest on Spark of 6 and of 12 exports (``--engine spark``, ``local[*]``), and the reference
  (``--engine python``) of the 12;
- ``compute`` on what ingest wrote (the target: ingest no slower), and what a binary hand-off of
  the events could save at most (their JSON encoding and decoding, in this process);
- the grown share: each server's later export, overlapping its first by EventRecordID, added;
  the incremental refresh, against a full ingest of the grown share (``--full``).

Each line also gives the peak of each part of the tree (the ``pfscope`` process, which is Spark's
driver; the JVM; the Python workers), to tell which grows with the share.

    PYTHONPATH=. python tests/benchmarks/bench_ingest.py [--servers 12] [--folders 1000] [--cache DIR]

``--formats``: the earlier figure instead, ``run_ingest`` in this process on 5,000 demo records
exported in every format (records/s, per CPU second).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import psutil

from tests.benchmarks.bench_compute import measure
from tests.unit.exchange.exports import event_xml

ROOT = Path(__file__).resolve().parents[2]
PFSCOPE = [sys.executable, "-m", "pfscope.app.cli"]


def render(cache: Path, servers: int, folders: int, days: float) -> tuple[Path, dict[str, list]]:
    """The simulated organisation and its records per server (simulated once per size)."""
    from pfscope.spark_jobs.model.topology import load_topology
    from pfscope.spark_jobs.simulator import simulate_to_folder
    from tests.render import render_log

    sim = cache / f"scale-{servers}-{folders}-{days:g}"
    if not (sim / "events.jsonl").exists():
        simulate_to_folder(
            "scale",
            sim,
            seed=1,
            options={"stores": servers, "sites": 4, "folders": folders, "replicas": 3, "days": days},
        )
    topo = load_topology(sim / "topology.json")
    r = render_log(topo, (sim / "events.jsonl").read_text(encoding="utf-8").splitlines())
    by_server: dict[str, list] = defaultdict(list)
    for rec in r.records:
        by_server[rec.server.split(".")[0]].append(rec)
    return sim, dict(sorted(by_server.items()))


def export(recs: list, path: Path, first_id: int = 1) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for i, r in enumerate(recs):
            fh.write(event_xml(r, first_id + i, rendered=True))


def parts_rss(proc: psutil.Process) -> dict[str, int]:
    """Resident bytes of the process itself (Spark's driver), its JVM and the rest (the Python
    workers), a fork counted only beyond its parent as ``tree_rss`` counts it."""
    parts = {"driver": 0, "jvm": 0, "workers": 0}
    seen: dict[int, tuple[int, list[str]]] = {}
    for p in [proc, *proc.children(recursive=True)]:
        try:
            rss, cmdline, parent, name = p.memory_info().rss, p.cmdline(), p.ppid(), p.name()
        except psutil.Error:
            continue
        seen[p.pid] = (rss, cmdline)
        if parent in seen and seen[parent][1] == cmdline:  # a fork not exec'd: beyond its parent
            rss = max(0, rss - seen[parent][0])
        parts["driver" if p.pid == proc.pid else "jvm" if name == "java" else "workers"] += rss
    return parts


def measure_parts(cmd: list[str]) -> tuple[float, float, float, dict[str, float], str]:
    """``bench_compute.measure``'s wall, CPU seconds, peak RSS (GB) and stdout, and each part's peak."""
    parts = {"driver": 0, "jvm": 0, "workers": 0}

    def sample(proc: psutil.Process) -> None:
        for k, v in parts_rss(proc).items():
            parts[k] = max(parts[k], v)

    seconds, cpu, peak, out = measure(cmd, sample)
    return seconds, cpu, peak, {k: v / 1e9 for k, v in parts.items()}, out


def run(label: str, cmd: list[str]) -> tuple[float, float, float, str]:
    wall, cpu, peak, parts, out = measure_parts(cmd)
    first = next(
        (ln for ln in out.splitlines() if ln.startswith(("incremental", "full", "read", "published"))), ""
    )
    each = " ".join(f"{k} {v:4.2f}" for k, v in parts.items())
    print(f"  {label:44s} {wall:6.1f} s wall  {cpu:6.1f} CPU s  peak {peak:4.2f} GB ({each})   {first[:90]}")
    return wall, cpu, peak, out


def scale(args: argparse.Namespace) -> None:
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    sim, by_server = render(cache, args.servers, args.folders, args.days)
    topo = str(sim / "topology.json")
    work = Path(tempfile.mkdtemp(prefix="bench-ingest-", dir=cache))
    try:
        full, half, grown = work / "logs12", work / "logs6", work / "grown"
        for d in (full, half, grown):
            d.mkdir()
        cut = {s: int(len(recs) * 0.7) for s, recs in by_server.items()}
        for i, (s, recs) in enumerate(by_server.items()):
            export(recs, full / f"{s}.xml")
            if i < len(by_server) // 2:
                shutil.copy(full / f"{s}.xml", half / f"{s}.xml")
            export(recs[: cut[s]], grown / f"{s}-1.xml")
        n = sum(len(r) for r in by_server.values())
        size = sum(p.stat().st_size for p in full.iterdir())
        print(
            f"{len(by_server)} servers, {args.folders:,} folders x 3 replicas, {args.days:g} days: {n:,} records, "
            f"{size / 1e6:.0f} MB of XML (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"
        )
        ingest = [*PFSCOPE, "ingest", "--topology", topo, "--engine"]
        run("ingest on Spark, 6 exports", [*ingest, "spark", "--logs", str(half), "--out", str(work / "o6")])
        wall, cpu, _, _ = run(
            "ingest on Spark, 12 exports", [*ingest, "spark", "--logs", str(full), "--out", str(work / "o12")]
        )
        print(
            f"  {'':44s} {n / cpu:,.0f} records per CPU second, {n / wall:,.0f} records/s on "
            f"{os.cpu_count()} cores"
        )
        run(
            "ingest, reference (one process), 12 exports",
            [*ingest, "python", "--logs", str(full), "--out", str(work / "ref")],
        )
        events = json.loads((work / "o12" / "ingest_summary.json").read_text())["events_written"]
        run(
            f"compute on what it wrote ({sum(events.values()):,} events)",
            [
                *PFSCOPE,
                "compute",
                "--topology",
                str(work / "o12" / "topology.json"),
                "--events",
                str(work / "o12" / "events.jsonl"),
                "--out",
                str(work / "published"),
            ],
        )
        handoff(work / "o12" / "events.jsonl")
        run(
            "grown share: first exports (70 %)",
            [*ingest, "spark", "--logs", str(grown), "--out", str(work / "g")],
        )
        for s, recs in by_server.items():
            start = cut[s] - 50  # the later export repeats the first one's last 50 records
            export(recs[start:], grown / f"{s}-2.xml", start + 1)
        run(
            "grown share: the later exports added",
            [*ingest, "spark", "--logs", str(grown), "--out", str(work / "g")],
        )
        run(
            "grown share: full ingest (--full)",
            [*ingest, "spark", "--logs", str(grown), "--out", str(work / "g"), "--full"],
        )
        print(f"(load average {os.getloadavg()[0]:.1f} at the end)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def handoff(events: Path) -> None:
    """What passing the events as Parquet could save at most: the CPU seconds of turning the
    event lines into JSON (ingest) and back (compute), the only work a binary hand-off drops
    (each line's validation into an event stays, on one side or the other)."""
    lines = events.read_text(encoding="utf-8").splitlines()
    started = time.process_time()
    objs = [json.loads(line) for line in lines]
    decode = time.process_time() - started
    started = time.process_time()
    for o in objs:
        json.dumps(o, ensure_ascii=False, separators=(",", ":"))
    encode = time.process_time() - started
    print(
        f"  {'the event lines as JSON (a hand-off saves at most)':44s} {decode:6.2f} CPU s to read, "
        f"{encode:.2f} to write ({len(lines):,} lines)"
    )


def formats(args: argparse.Namespace) -> None:
    from pfscope.spark_jobs.exchange import run_ingest
    from pfscope.spark_jobs.model.topology import load_topology
    from pfscope.spark_jobs.simulator import simulate_to_folder
    from tests.render import render_log
    from tests.unit.exchange.test_roundtrip import WRITERS

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        simulate_to_folder("demo", base / "sim", seed=1)
        topo = load_topology(base / "sim" / "topology.json")
        r = render_log(topo, (base / "sim" / "events.jsonl").read_text(encoding="utf-8").splitlines())
        records = r.records[: args.limit]
        by_server = defaultdict(list)
        for rec in records:
            by_server[rec.server.split(".")[0]].append(rec)
        print(
            f"demo: {len(records):,} records from {len(by_server)} servers "
            f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"
        )
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
            print(
                f"  {fmt:17s} {s['records_read']:>7,} records  {best:6.2f} s  "
                f"{s['records_read'] / best:>8,.0f} records/s  (CPU {cpu:.2f} s: "
                f"{s['records_read'] / cpu:,.0f} records per CPU second; {size / 1e6:.1f} MB, {s['rejected']} rejected)"
            )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--servers", type=int, default=12)
    ap.add_argument("--folders", type=int, default=1000)
    ap.add_argument("--days", type=float, default=7.0)
    ap.add_argument("--cache", default=os.environ.get("PFSCOPE_BENCH_CACHE", "/tmp/pfscope-bench"))
    ap.add_argument("--formats", action="store_true", help="run_ingest per export format instead")
    ap.add_argument("--limit", type=int, default=5000, help="--formats: the first N records of the demo")
    args = ap.parse_args()
    formats(args) if args.formats else scale(args)


if __name__ == "__main__":
    os.chdir(ROOT)
    main()
