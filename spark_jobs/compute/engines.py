"""The two engines behind ``pfscope compute``: the Spark job (a refresh when the previous run's
state allows one, else in full) and the reference replay in this process
(``compute.python_engine``), each writing a run's tables into its folder; ``entry`` chooses
one, then writes the manifest and publishes."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pfscope.spark_jobs.compute.state import STATE_DIR, FileRead, Plan, load_manifest
from pfscope.spark_jobs.compute.writing import write_piece, write_tables
from pfscope.spark_jobs.model.topology import Topology
from pfscope.spark_jobs.published.runs import Run
from pfscope.spark_jobs.runtime.config import input_bytes

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: tables written at once (each a Spark job): their fixed latencies overlap
WRITER_THREADS = 4


@dataclass(frozen=True)
class SparkArgs:
    """What the Spark job is given beyond the log: its master, settings and fold partitions, and
    the log as given (its bytes size a full run's session)."""

    master: str | None
    conf: Mapping[str, str]
    partitions: int | None
    events: tuple[str, ...]


@dataclass(frozen=True)
class Done:
    """A run's tables written, by either engine: what its manifest and pointer say of it."""

    engine: str
    as_of: int
    counts: dict[str, Any]
    tables: frozenset[str]
    line: str | None
    #: a run that read the whole log: its lines by file index; a refresh: None
    file_lines: dict[int, int] | None
    #: a refresh: the files it read (again), by index; the others are as the earlier run read them
    reads: dict[int, FileRead] = field(default_factory=dict)


def replayed(
    topo: Topology, files: list[str], as_of: int | None, run: Run, why: str, previous: Path | None
) -> Done:
    """The run computed by the replay in this process (``compute.python_engine``), going on from
    the ``previous`` run where it can (its parsed lines, its fold states); ``why``: why this
    engine, said when the run is a full one."""
    from pfscope.spark_jobs.compute.python_engine import run_replay
    from pfscope.spark_jobs.model.tables import TABLES

    reason = f"the python engine replays the whole log ({why})"
    r = run_replay(topo, files, as_of, run, reason, previous)
    return Done("python", r.as_of, r.counts, frozenset(TABLES), r.line, r.file_lines)


def computed(
    args: SparkArgs,
    topo: Topology,
    files: list[str],
    as_of: int | None,
    plan: Plan,
    previous: Path | None,
    run: Run,
) -> Done:
    """The run computed by the Spark job: a refresh when the plan allows it, else in full."""
    from pfscope.spark_jobs.compute.job import compute
    from pfscope.spark_jobs.runtime.session import spark_session

    # a refresh's work is its new bytes and the state it folds on from, not the whole log
    # (the session's JIT and partitions are chosen by it)
    size = (
        refresh_bytes(plan, previous)
        if plan.incremental and previous is not None
        else input_bytes(list(args.events))
    )
    spark = spark_session(
        master=args.master, conf=dict(args.conf), progress=sys.stderr.isatty(), input_bytes=size
    )
    # leaving the pool waits for every write it runs, so nothing writes into an abandoned run
    with ThreadPoolExecutor(max_workers=WRITER_THREADS, thread_name_prefix="pfscope-write") as pool:
        started_writes: dict[str, Future[None]] = {}
        result = None
        reason = plan.reason
        if plan.incremental:
            from pfscope.spark_jobs.compute.refresh import refresh
            from pfscope.spark_jobs.compute.refresh_lines import CannotRefresh

            assert previous is not None
            manifest = load_manifest(previous)
            assert manifest is not None
            try:
                result = refresh(
                    spark,
                    topo,
                    manifest,
                    previous,
                    plan,
                    files,
                    as_of=as_of,
                    run_id=run.run_id,
                    partitions=args.partitions,
                )
            except CannotRefresh as e:
                reason = str(e)
        if result is None:

            def start_rejects(df: DataFrame) -> None:
                from pfscope.spark_jobs.compute.job import Piece

                started_writes["rejects"] = pool.submit(
                    write_piece, Piece("rejects", True, df), run.table_path
                )

            result = compute(
                spark,
                topo,
                files,
                as_of=as_of,
                run_id=run.run_id,
                partitions=args.partitions,
                on_rejects=start_rejects,
                full_reason=reason,
            )
        write_tables(result, run.table_path, pool, started_writes)
    tables = frozenset({p.table for p in result.pieces} | set(result.carry))
    line = result.refresh.line() if result.refresh else None
    whole = result.file_lines if result.read is not None else None
    return Done("spark", result.as_of, result.counts, tables, line, whole, result.reads)


def refresh_bytes(plan: Plan, previous: Path) -> int:
    """What a refresh reads: the new bytes, and the fold states and pending events it goes on from."""
    state = previous / STATE_DIR
    return sum(n.end - n.start for n in plan.new) + sum(
        f.stat().st_size for d in ("folds", "pending") for f in (state / d).glob("*.parquet")
    )
