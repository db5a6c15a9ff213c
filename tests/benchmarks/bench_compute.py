"""The Spark job against its floor and its oracle, measured in one run. Prints; asserts nothing.

    PYTHONPATH=. python tests/benchmarks/bench_compute.py [--events 1000000] [--events 10000000]
        [--scenario worked-example] [--scenario demo] [--cache DIR] [--skip-local1] [--repeat 3]
        [--refresh 0.01] [--refresh-only]

For each size a ``scale`` log is simulated once and cached on disk (``--cache``, default
``$PFSCOPE_BENCH_CACHE`` or ``/tmp/pfscope-bench``; a log is reused when its folder holds it);
``--scenario`` adds a named scenario's log (the worked example, the demo).
Then, each in its own process so that peak memory is its own: Spark reading the JSONL and
counting it (the floor), the job on ``local[1]`` and on ``local[2]``, and the reference replay.
Printed per run: wall seconds, events/s, CPU seconds and peak RSS of the whole process tree (a
fork counts only beyond its parent), the number of Spark jobs it ran (from its Spark event log),
and the load average around it (the machine may be shared: a load above the core count means the
wall times are inflated). Then a refresh: the log less its last share of lines in full, then with
them, as an hourly ``compute`` meets it (``--repeat`` refreshes, each printed, from one kept full run).

The replay holds every row in memory (about 1.9 GB per million events), so it is not run on
logs above ``REPLAY_LIMIT`` events: it would exhaust a 24 GiB machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[2]
REPLAY_LIMIT = 2_000_000
EVENTS_PER_FOLDER = 230  # scale, 14 days, 4 changes per folder-day, 3 replicas (measured)

FLOOR = """
import sys
from pfscope.spark_jobs.runtime.session import spark_session
spark = spark_session(sys.argv[1], conf=dict(c.split("=", 1) for c in sys.argv[3:]))
print(spark.read.text(sys.argv[2]).count())
"""


def event_log_conf(folder: Path) -> list[str]:
    """Settings that make a run write its Spark event log (uncompressed) into ``folder``."""
    return [
        "spark.eventLog.enabled=true",
        "spark.eventLog.compress=false",
        f"spark.eventLog.dir=file://{folder}",
    ]


def spark_jobs(folder: Path) -> int:
    """Spark jobs recorded in the event logs under ``folder``."""
    return sum(
        line.count('"Event":"SparkListenerJobStart"')
        for f in folder.rglob("*")
        if f.is_file()
        for line in f.open(errors="replace")
    )


def scale_options(events: int) -> list[str]:
    """Simulator sizes that give about ``events`` events."""
    folders = max(50, round(events / EVENTS_PER_FOLDER))
    return [
        "--stores",
        "30",
        "--sites",
        "5",
        "--folders",
        str(folders),
        "--replicas",
        "3",
        "--days",
        "14",
        "--changes-per-day",
        "4",
    ]


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "SPARK_LOCAL_IP": "127.0.0.1"}


def tree_cpu(proc: psutil.Process) -> float:
    """CPU seconds of a process and its descendants, finished ones included (as reaped)."""
    total = 0.0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            t = p.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
        except psutil.Error:
            pass
    return total


def tree_rss(proc: psutil.Process) -> int:
    """Resident bytes of a process and its descendants. A child still running its parent's
    program (a fork that has not exec'd: the JVM spawning ``chmod`` for Hadoop, a Python worker
    forked by PySpark's daemon) shares its parent's pages until it writes them, so it counts only
    what it holds beyond its parent: summing plain RSS counted the 2.8 GB JVM twice whenever a
    snapshot fell inside a spawn (1M: 6.2 GB reported, 3.7 GB real)."""
    seen: dict[int, tuple[int, list[str]]] = {}
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            rss, cmdline, parent = p.memory_info().rss, p.cmdline(), p.ppid()
        except psutil.Error:
            continue
        seen[p.pid] = (rss, cmdline)
        if parent in seen and seen[parent][1] == cmdline:
            rss = max(0, rss - seen[parent][0])
        total += rss
    return total


def measure(
    cmd: list[str], sample: Callable[[psutil.Process], None] | None = None
) -> tuple[float, float, float, str]:
    """Wall seconds, CPU seconds, peak RSS (GB) of the whole process tree, and stdout;
    ``sample``: also called with the process at every sample (a caller's own figures)."""
    start = time.perf_counter()
    proc = psutil.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env(), cwd=ROOT)
    peak, cpu = 0, 0.0
    while proc.poll() is None:
        try:
            peak = max(peak, tree_rss(proc))
            cpu = max(cpu, tree_cpu(proc))
            if sample is not None:
                sample(proc)
        except psutil.Error:
            pass
        time.sleep(0.2)
    out, err = proc.communicate()
    if proc.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed with {proc.returncode}: {err[-2000:]}")
    return time.perf_counter() - start, cpu, peak / 1e9, out


def simulate(data: Path, size: int | str) -> None:
    """A scale log of about ``size`` events, or the named scenario's log."""
    if (data / "events.jsonl").exists():
        return
    if isinstance(size, str):
        print(f"simulating the {size} scenario into {data} ...", flush=True)
        options = ["--scenario", size]
    else:
        print(f"simulating a scale log of about {size:,} events into {data} ...", flush=True)
        options = ["--scenario", "scale", *scale_options(size)]
    subprocess.run(
        [sys.executable, "-m", "pfscope.app.cli", "simulate", "--out", str(data), "--no-progress", *options],
        check=True,
        stdout=subprocess.DEVNULL,
        env=env(),
        cwd=ROOT,
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, action="append", help="target log size (repeatable; default 1M)")
    ap.add_argument(
        "--scenario",
        action="append",
        default=[],
        choices=["worked-example", "demo"],
        help="also a named scenario's log (repeatable)",
    )
    ap.add_argument(
        "--cache",
        default=os.environ.get("PFSCOPE_BENCH_CACHE", "/tmp/pfscope-bench"),
        help="folder keeping the simulated logs between runs",
    )
    ap.add_argument("--skip-local1", action="store_true", help="do not run the job on local[1]")
    ap.add_argument(
        "--refresh-only",
        action="store_true",
        help="measure only the refresh (its full run is kept in the cache between benchmarks)",
    )
    ap.add_argument(
        "--refresh",
        type=float,
        default=0.01,
        metavar="SHARE",
        help="also measure a refresh: the log less its last SHARE of lines in full, then with them "
        "(default 0.01; 0: no refresh)",
    )
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run each measurement this many times; print the median wall time (its run's CPU "
        "and jobs), the highest peak and the range of wall times",
    )
    args = ap.parse_args()
    sizes: list[int | str] = [*args.scenario, *(args.events or ([] if args.scenario else [1_000_000]))]
    root = Path(args.cache)
    py = sys.executable
    cpu_model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        "?",
    )
    print(
        f"machine: {os.cpu_count()} cores ({cpu_model}), {psutil.virtual_memory().total / 2**30:.0f} GiB, "
        f"Python {sys.version.split()[0]}"
    )
    print(
        f"{'events':>12} {'what':<24} {'seconds':>8} {'events/s':>10} {'cpu s':>7} {'peak GB':>8} "
        f"{'jobs':>5} {'load':>10} {'range s':>11}"
    )
    for size in sizes:
        data = root / (size if isinstance(size, str) else f"scale-{size}")
        simulate(data, size)
        with open(data / "events.jsonl", "rb") as fh:
            n = sum(1 for _ in fh)
        topo, events = str(data / "topology.json"), str(data / "events.jsonl")
        logs = Path(tempfile.mkdtemp(prefix="pfscope-evlog-"))
        job = [py, "-m", "pfscope.app.cli", "compute", "--topology", topo, "--events", events]
        job_conf = [x for c in event_log_conf(logs) for x in ("--conf", c)]
        runs: dict[str, list[str] | str] = {
            "floor: read + count": [py, "-c", FLOOR, "local[2]", events, *event_log_conf(logs)],
            "job local[2]": [*job, "--out", str(data / "runs2"), "--master", "local[2]", "--full", *job_conf],
            "job local[1]": "skipped (--skip-local1)"
            if args.skip_local1
            else [*job, "--out", str(data / "runs1"), "--master", "local[1]", "--full", *job_conf],
            "replay (plain Python)": f"not run: above {REPLAY_LIMIT:,} events it needs ~1.9 GB per million "
            "events and would exhaust the machine"
            if n > REPLAY_LIMIT
            else [py, "-m", "pfscope.app.cli", "replay", "--topology", topo, "--events", events],
        }
        for what, cmd in ({} if args.refresh_only else runs).items():
            if isinstance(cmd, str):
                print(f"{n:>12,} {what:<24} {cmd}", flush=True)
                continue
            before = os.getloadavg()[0]
            tries = []
            for _ in range(max(1, args.repeat)):
                shutil.rmtree(logs, ignore_errors=True)
                logs.mkdir()
                seconds, cpu, peak, _ = measure(cmd)
                tries.append((seconds, cpu, peak, str(spark_jobs(logs)) if "replay" not in what else "-"))
            load = f"{before:.1f}/{os.getloadavg()[0]:.1f}"
            tries.sort()
            seconds, cpu, _, jobs = tries[len(tries) // 2]
            peak = max(t[2] for t in tries)
            spread = f"{tries[0][0]:.1f}-{tries[-1][0]:.1f}" if len(tries) > 1 else ""
            print(
                f"{n:>12,} {what:<24} {seconds:>8.1f} {n / seconds:>10,.0f} {cpu:>7.0f} {peak:>8.2f} {jobs:>5} "
                f"{load:>10} {spread:>11}",
                flush=True,
            )
        if args.refresh:
            measure_refresh(data, n, args.refresh, logs, args.repeat)
        shutil.rmtree(logs, ignore_errors=True)
    print(f"logs kept in {root}")


def measure_refresh(data: Path, n: int, share: float, logs: Path, repeat: int = 1) -> None:
    """A refresh: the log without its last ``share`` of lines computed in full, then those lines
    appended and computed again (the simulator writes lines in time order: they are new, but for
    any stamped in the same second as the first part's last, which are late and refold their
    folders). Printed like the others, the refresh with its own one line.

    The full run is kept in the cache (``refresh-SHARE/``) and reused by later benchmarks of the
    same log (a 10M log's takes 9 minutes); each refresh goes on from a hard-linked copy of it,
    so ``repeat`` refreshes all start from the same run."""
    py = sys.executable
    folder = data / f"refresh-{share:g}"
    base, log = folder / "base", folder / "events.jsonl"
    lines = (data / "events.jsonl").read_bytes().splitlines(keepends=True)
    cut = len(lines) - max(1, round(len(lines) * share))
    conf = [x for c in event_log_conf(logs) for x in ("--conf", c)]
    job = [
        py,
        "-m",
        "pfscope.app.cli",
        "compute",
        "--topology",
        str(data / "topology.json"),
        "--events",
        str(log),
        "--master",
        "local[2]",
        *conf,
    ]

    def show(what: str, seconds: float, cpu: float, peak: float, out: str, before: float) -> None:
        said = next((line for line in out.splitlines() if line.startswith(("full:", "incremental:"))), "?")
        print(
            f"{n:>12,} {what:<24} {seconds:>8.1f} {n / seconds:>10,.0f} {cpu:>7.0f} {peak:>8.2f} "
            f"{spark_jobs(logs):>5} {before:.1f}/{os.getloadavg()[0]:.1f}  {said}",
            flush=True,
        )

    if not (base / "LATEST").exists():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        log.write_bytes(b"".join(lines[:cut]))
        shutil.rmtree(logs, ignore_errors=True)
        logs.mkdir()
        before = os.getloadavg()[0]
        show(f"job, first {1 - share:.1%} (full)", *measure([*job, "--out", str(base)]), before)
        with open(log, "ab") as fh:
            fh.write(b"".join(lines[cut:]))
    else:
        print(
            f"{n:>12,} job, first {1 - share:.1%} (full): kept from an earlier benchmark in {base}",
            flush=True,
        )
    for _ in range(max(1, repeat)):
        out = folder / "refreshed"
        shutil.rmtree(out, ignore_errors=True)
        subprocess.run(["cp", "-al", str(base), str(out)], check=True)
        shutil.rmtree(logs, ignore_errors=True)
        logs.mkdir()
        before = os.getloadavg()[0]
        show(f"refresh +{share:g} of the log", *measure([*job, "--out", str(out)]), before)
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
