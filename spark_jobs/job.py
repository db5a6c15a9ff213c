"""``pfscope compute`` and the ``spark-submit`` entry: run the job, publish or leave the last
good run in place. Every failure an operator can meet is one line and a non-zero exit.

With spark-submit (the package installed on the cluster's Python, or shipped as a zip with
``--py-files``): ``spark-submit --master URL spark_jobs/job.py --topology ... --events ... --out ...``
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any

from spark_jobs.model.errors import OperatorError
from spark_jobs.model.events import expand_paths
from spark_jobs.model.timeutil import TimeError, format_ts, parse_ts
from spark_jobs.model.topology import TopologyError, load_topology
from spark_jobs.publish import (
    EXIT_LOCKED,
    Pruning,
    PublishError,
    RunLocked,
    abandon,
    keep_from,
    prune_runs,
    publish,
    run_lock,
    start_run,
    wait_seconds,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from spark_jobs.compute import JobResult

SMALL_TABLES = {"stores", "folders", "summary", "replicas", "rejects", "backfill_entries", "responders"}
#: tables the dashboard reads one folder at a time: written sorted by fid (see ``fold_groups``)
#: in row groups of about 1 MB, so a reader's ``fid ==`` filter skips the rest by statistics
FOLDER_TABLES = {"state_history", "state_table"}
ROW_GROUP_BYTES = 1 << 20
#: tables written at once (each a Spark job): their fixed latencies overlap
WRITER_THREADS = 4


class JobError(OperatorError):
    """A failure reported as one line."""


def parse_conf(pairs: list[str]) -> dict[str, str]:
    conf = {}
    for p in pairs:
        key, sep, value = p.partition("=")
        if not sep or not key:
            raise JobError(f"--conf {p!r}: expected KEY=VALUE")
        conf[key.strip()] = value.strip()
    return conf


def input_bytes(paths: list[str]) -> int | None:
    """The log's size in bytes, known before the JVM starts; None when some of it is remote."""
    if any("://" in p for p in paths):
        return None
    try:
        return sum(os.path.getsize(f) for f in expand_paths(paths))
    except OSError:
        return None


def run_job(args: argparse.Namespace) -> int:
    try:
        keep = keep_from(getattr(args, "keep", None))
        with run_lock(args.out, wait=wait_seconds(getattr(args, "wait_lock", None))):
            pointer = _run(args)
            try:  # the run is published: a failed clean-up is said, never reported as a failed run
                pruned: Pruning | None = prune_runs(args.out, keep, pointer)
            except OSError as e:
                print(f"pfscope compute: published, but old runs could not be removed: {e}", file=sys.stderr)
                pruned = None
    except RunLocked as e:
        print(f"pfscope compute: {e}", file=sys.stderr)
        return EXIT_LOCKED
    except (JobError, TopologyError, TimeError, PublishError, FileNotFoundError) as e:
        print(f"pfscope compute: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # a crash is still one line; the previous run stays
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        print(f"pfscope compute: failed ({type(e).__name__}): {first[:400]}; "
              "the previous run is still published", file=sys.stderr)
        return 1
    s = pointer["summary"]
    print(f"published run {pointer['run_id']} as of {pointer['as_of']}: {s['lines_read']:,} lines read, "
          f"{s['accepted']:,} accepted, {s['duplicates']:,} duplicates, {s['rejected']:,} rejected "
          f"in {pointer['seconds']:.1f} s -> {args.out}/{pointer['path']}")
    if pruned is not None:
        _report_pruning(pruned, keep)
    return 0


def _report_pruning(p: Pruning, keep: int) -> None:
    if p.old or p.leftovers:
        print(f"removed {len(p.old)} older run(s) (keeping {keep or 'all'}) and {len(p.leftovers)} left by "
              "interrupted runs")
    for run_id in p.spared:
        print(f"kept unfinished run {run_id}: its writer may still be running", file=sys.stderr)
    for line in p.failed:
        print(f"pfscope compute: could not remove {line}", file=sys.stderr)


def write_table(df: DataFrame, name: str, path: str) -> None:
    """One table, one Spark job."""
    out = df.coalesce(1) if name in SMALL_TABLES else df
    writer = out.write.mode("error")
    if name in FOLDER_TABLES:
        writer = writer.option("parquet.block.size", ROW_GROUP_BYTES)
    writer.parquet(path)


def write_tables(result: JobResult, table_path: Callable[[str], str], pool: ThreadPoolExecutor,
                 started: dict[str, Future[None]]) -> None:
    """Write every table, several Spark jobs at once from threads (Spark schedules concurrent
    jobs): each small table's job is mostly fixed latency (planning, task launch, commit), which
    runs side by side instead of one after the other. Two rounds: the rejects and the first fold
    table (which runs the fold and fills the cache), then all the others, which read the cache.
    ``started``: writes already running in ``pool`` (the rejects, started while the fold's
    plans were built). Every write finishes before this returns or raises, so a failed run is
    abandoned whole."""
    from spark_jobs.compute import FIRST_FOLD_TABLE

    names = list(result.tables)
    rounds = [[n for n in names if n in ("rejects", FIRST_FOLD_TABLE)]]
    rounds.append([n for n in names if n not in rounds[0]])
    for batch in rounds:
        futures = [started.get(n) or pool.submit(write_table, result.tables[n], n, table_path(n)) for n in batch]
        wait(futures)
        for f in futures:
            f.result()  # the first failure, once none is still writing
        for n in batch:
            result.written(n)


def _run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    topo = load_topology(args.topology)
    as_of = parse_ts(args.as_of) if args.as_of else None
    conf = parse_conf(args.conf)
    run = start_run(args.out)
    try:
        from spark_jobs.compute import compute
        from spark_jobs.session import spark_session

        spark = spark_session(master=args.master, conf=conf, progress=sys.stderr.isatty(),
                              input_bytes=input_bytes(args.events))
        # leaving the pool waits for every write it runs, so nothing writes into an abandoned run
        with ThreadPoolExecutor(max_workers=WRITER_THREADS, thread_name_prefix="pfscope-write") as pool:
            started_writes: dict[str, Future[None]] = {}

            def start_rejects(df: DataFrame) -> None:
                started_writes["rejects"] = pool.submit(write_table, df, "rejects", run.table_path("rejects"))

            result = compute(spark, topo, args.events, as_of=as_of, run_id=run.run_id,
                             partitions=args.partitions, on_rejects=start_rejects)
            write_tables(result, run.table_path, pool, started_writes)
    except BaseException:
        abandon(run)
        raise
    info = {
        "as_of": format_ts(result.as_of),
        "tables": sorted(result.tables),
        "seconds": round(time.perf_counter() - started, 3),
        "summary": {"lines_read": result.read.lines_read, "accepted": result.read.accepted,
                    "duplicates": result.read.duplicates,
                    "rejected": result.read.lines_read - result.read.accepted - result.read.duplicates},
    }
    return publish(run, info)


def main(argv: list[str] | None = None) -> int:
    from app.cli import main as cli_main

    return cli_main(["compute", *(argv if argv is not None else sys.argv[1:])])


if __name__ == "__main__":
    sys.exit(main())
