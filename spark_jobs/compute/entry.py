"""``pfscope compute`` and the ``spark-submit`` entry: run the job, publish or leave the last
good run in place. Every failure an operator can meet is one line and a non-zero exit.

The job takes one typed :class:`JobSettings`. ``pfscope compute`` builds it from its flags, the
``PFSCOPE_*`` variables and the defaults (``app/settings.py``); under spark-submit (the package
installed on the cluster's Python, or shipped as a zip with ``--py-files``) :func:`main` builds
it from the same flags alone:
``spark-submit --master URL spark_jobs/compute/entry.py --topology ... --events ... --out ...``
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq

from pfscope.spark_jobs.compute.record import RECORD, write_forecast_record
from pfscope.spark_jobs.compute.state import (
    MANIFEST,
    STATE_DIR,
    TOPOLOGY,
    FileRead,
    Manifest,
    Plan,
    TopologyChange,
    code_version,
    folders_of_stores,
    load_manifest,
    nothing_new,
    plan_refresh,
    sizes,
    topology_change,
    topology_digest,
)
from pfscope.spark_jobs.compute.writing import write_piece, write_tables
from pfscope.spark_jobs.model.errors import ExitStatus, OperatorError
from pfscope.spark_jobs.model.events import expand_paths
from pfscope.spark_jobs.model.timeutil import format_ts, now_us, parse_ts
from pfscope.spark_jobs.model.topology import Topology, load_topology
from pfscope.spark_jobs.published.runs import (
    DEFAULT_KEEP,
    Pruning,
    abandon,
    check_keep,
    prune_runs,
    publish,
    read_latest,
    run_lock,
    start_run,
    wait_seconds,
)
from pfscope.spark_jobs.runtime.command import add_debug_argument, run_command
from pfscope.spark_jobs.runtime.config import input_bytes, parse_conf

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from pfscope.spark_jobs.compute.job import JobResult


#: tables written at once (each a Spark job): their fixed latencies overlap
WRITER_THREADS = 4


class JobError(OperatorError):
    """A failure reported as one line."""


@dataclass(frozen=True)
class JobSettings:
    """One run of the job: what to read, where to publish, how to run Spark."""

    topology: str
    events: tuple[str, ...]
    out: str
    as_of: str | None = None
    #: Spark master URL; None: spark-submit's when running under it, else ``local[*]``
    master: str | None = None
    #: extra Spark settings as ``KEY=VALUE`` (they win over the job's own)
    conf: tuple[str, ...] = ()
    partitions: int | None = None
    #: published runs retention keeps (0: every run)
    keep: int = DEFAULT_KEEP
    #: when another run holds the lock: None exits 75; -1 waits as long as it takes; else seconds
    wait_lock: float | None = None
    #: the driver's heap (``spark.driver.memory``); None: the session's default
    driver_memory: str | None = None
    #: read the whole log even when the previous run's state could be gone on from
    full: bool = False


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The job's flags, shared by ``pfscope compute`` and the spark-submit entry. Their
    defaults are None: the command line fills them from ``PFSCOPE_*`` variables, then defaults."""
    p.add_argument("--topology", required=True, help="topology JSON or YAML")
    p.add_argument("--events", required=True, nargs="+", help="event log files, folders, globs or URIs")
    p.add_argument("--as-of", help="RFC 3339 time; default: the last event's")
    p.add_argument(
        "--out", required=True, help="folder of published runs (LATEST points at the last good one)"
    )
    p.add_argument(
        "--master", help="Spark master URL (default: $PFSCOPE_SPARK_MASTER, spark-submit's, else local[*])"
    )
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="extra Spark setting")
    p.add_argument(
        "--partitions",
        type=int,
        help="partitions for the fold (default: one per 20,000 accepted "
        "events up to two per core; one per 250,000 beyond)",
    )
    p.add_argument(
        "--keep",
        type=int,
        metavar="N",
        help="after publishing, keep the newest N published runs, never fewer than the published one "
        "and the one before it (default: $PFSCOPE_KEEP, else 5; 0 keeps every run); folders "
        "left by killed runs are removed either way",
    )
    p.add_argument(
        "--full",
        action="store_true",
        default=None,
        help="read the whole log again, not only what is new since the published run",
    )
    p.add_argument(
        "--wait-lock",
        type=float,
        nargs="?",
        const=-1,
        metavar="SECONDS",
        help="when another run holds DIR/.lock: wait for it (as long as it takes, or SECONDS) "
        "instead of exiting with status 75",
    )
    add_debug_argument(p)


def settings_from_flags(args: argparse.Namespace, **defaults: Any) -> JobSettings:
    """:class:`JobSettings` from parsed :func:`add_arguments` flags; a flag left unset takes
    ``defaults[name]`` (the caller's environment), else the field's default."""

    def pick(name: str) -> Any:
        value = getattr(args, name)
        return value if value is not None else defaults.get(name)

    fields = {
        "master": pick("master"),
        "partitions": args.partitions,
        "wait_lock": args.wait_lock,
        "driver_memory": defaults.get("driver_memory"),
        "full": bool(args.full),
    }
    keep = pick("keep")
    if keep is not None:
        fields["keep"] = keep
    return JobSettings(
        topology=args.topology,
        events=tuple(args.events),
        out=args.out,
        as_of=args.as_of,
        conf=tuple(args.conf),
        **fields,
    )


#: what a crash of the job leaves: the run it was writing is abandoned
AFTER_CRASH = "the previous run is still published"


def run_job(args: JobSettings, *, debug: bool = False) -> int:
    """Run the job and say what it published; an error is one line and its exit status."""
    return run_command("compute", lambda: publish_and_report(args), debug=debug, after_crash=AFTER_CRASH)


def publish_and_report(args: JobSettings) -> int:
    """Run the job under the output folder's lock, publish, prune, and print what it did. An
    operator's error is raised; the caller turns it and any crash into an exit status."""
    keep = check_keep(args.keep)
    try:
        with run_lock(args.out, wait=wait_seconds(args.wait_lock)):
            pointer = _run(args)
            try:  # the run is published: a failed clean-up is said, never reported as a failed run
                pruned: Pruning | None = prune_runs(args.out, keep, pointer)
            except OSError as e:
                print(f"pfscope compute: published, but old runs could not be removed: {e}", file=sys.stderr)
                pruned = None
    except FileNotFoundError as e:  # a topology or log that is not there: the operator's to fix
        raise JobError(str(e)) from None
    if pointer.get("unchanged"):
        print(
            f"incremental: nothing new since run {pointer['run_id']} (as of {pointer['as_of']}): "
            "it stays published"
        )
        if pruned is not None:
            _report_pruning(pruned, keep)
        return ExitStatus.OK
    s = pointer["summary"]
    if pointer.get("refresh"):
        print(pointer["refresh"])
    print(
        f"published run {pointer['run_id']} as of {pointer['as_of']}: {s['lines_read']:,} lines read, "
        f"{s['accepted']:,} accepted, {s['duplicates']:,} duplicates, {s['rejected']:,} rejected "
        f"in {pointer['seconds']:.1f} s -> {args.out}/{pointer['path']}"
    )
    if pointer.get("last_event_after_as_of"):
        print(after_as_of_note(pointer["last_event_after_as_of"], explicit=bool(args.as_of)))
    if pruned is not None:
        _report_pruning(pruned, keep)
    return ExitStatus.OK


def after_as_of_note(last_event: str, *, explicit: bool) -> str:
    """Said when accepted lines are stamped after the as-of: they are not applied in this run."""
    why = "the --as-of given" if explicit else "the run's clock (a server's clock ahead?)"
    return (
        f"note: the latest accepted line is stamped {last_event}, after {why}: lines after the "
        "as-of are not applied in this run"
    )


def _report_pruning(p: Pruning, keep: int) -> None:
    if p.old or p.leftovers:
        print(
            f"removed {len(p.old)} older run(s) (keeping {keep or 'all'}) and {len(p.leftovers)} left by "
            "interrupted runs"
        )
    for run_id in p.spared:
        print(f"kept unfinished run {run_id}: its writer may still be running", file=sys.stderr)
    for line in p.failed:
        print(f"pfscope compute: could not remove {line}", file=sys.stderr)


def _run(args: JobSettings) -> dict[str, Any]:
    started = time.perf_counter()
    code_version()  # the running code's digest, before an upgrade could rewrite its files
    topo = load_topology(args.topology)
    as_of = parse_ts(args.as_of) if args.as_of else None
    conf = parse_conf(list(args.conf))
    if args.driver_memory:
        conf.setdefault("spark.driver.memory", args.driver_memory)
    files = list_log_files(list(args.events))
    if not files:
        raise FileNotFoundError(f"{', '.join(args.events)}: no event log files")
    previous = _previous_run(args.out)
    manifest = load_manifest(previous) if previous else None
    topology = topology_digest(topo.to_json())
    plan = plan_refresh(
        manifest,
        files,
        topology=topology,
        as_of=as_of,
        force_full=args.full,
        change=_topology_change(previous, manifest, topo),
    )
    if manifest is not None and nothing_new(plan, manifest, files, topology, as_of, now_us()):
        return {**(read_latest(args.out) or {}), "unchanged": True}
    local = [f for f in files if "://" not in f]
    before = sizes(local)
    run = start_run(args.out)
    try:
        from pfscope.spark_jobs.compute.job import compute
        from pfscope.spark_jobs.runtime.session import spark_session

        # a refresh's work is its new bytes and the state it folds on from, not the whole log
        # (the session's JIT and partitions are chosen by it)
        size = (
            refresh_bytes(plan, previous)
            if plan.incremental and previous is not None
            else input_bytes(list(args.events))
        )
        spark = spark_session(master=args.master, conf=conf, progress=sys.stderr.isatty(), input_bytes=size)
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
        write_forecast_record(previous, run.path, result.as_of)
        _write_manifest(run.path, result, files, before, local, topo, previous)
    except BaseException:
        abandon(run)
        raise
    counts = result.counts
    last_ts = counts.get("last_ts")
    tables = sorted({p.table for p in result.pieces} | set(result.carry) | {RECORD})
    info = {
        "as_of": format_ts(result.as_of),
        "tables": [t for t in tables if not t.startswith("_")],
        # the latest accepted line, when it is stamped after the as-of (not applied in this run)
        "last_event_after_as_of": format_ts(last_ts)
        if last_ts is not None and last_ts > result.as_of
        else None,
        "refresh": result.refresh.line() if result.refresh else None,
        "seconds": round(time.perf_counter() - started, 3),
        "summary": {
            "lines_read": counts["lines_read"],
            "accepted": counts["accepted"],
            "duplicates": counts["duplicates"],
            "rejected": counts["lines_read"] - counts["accepted"] - counts["duplicates"],
        },
    }
    return publish(run, info)


def refresh_bytes(plan: Plan, previous: Path) -> int:
    """What a refresh reads: the new bytes, and the fold states and pending events it goes on from."""
    state = previous / STATE_DIR
    return sum(n.end - n.start for n in plan.new) + sum(
        f.stat().st_size for d in ("folds", "pending") for f in (state / d).glob("*.parquet")
    )


def list_log_files(paths: list[str]) -> list[str]:
    """Local files, folders and globs as the replay lists them; URIs as given (the reading's order)."""
    local = [p for p in paths if "://" not in p]
    remote = sorted(p for p in paths if "://" in p)
    return sorted(expand_paths(local)) + remote if local else remote


def _topology_change(
    previous: Path | None, manifest: Manifest | None, topo: Topology
) -> TopologyChange | None:
    """How the topology changed since the published run (None: its topology cannot be read)."""
    if previous is None or manifest is None:
        return None
    try:
        before = json.loads((previous / STATE_DIR / TOPOLOGY).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    rejected = manifest.lines_read - manifest.accepted - manifest.duplicates
    change = topology_change(before, topo.to_json(), rejected_before=rejected > 0)
    if change.reason or not change.stores:
        return change
    involved = folders_of_stores(previous, change.stores)
    return TopologyChange("", tuple(sorted({*change.refold, *involved})), change.stores)


def _previous_run(out: str) -> Path | None:
    """The published run's folder, if there is one that can be read."""
    try:
        pointer = read_latest(out)
    except OperatorError:
        return None
    return Path(out) / str(pointer["path"]) if pointer else None


def _write_manifest(
    run_dir: Path,
    result: JobResult,
    files: list[str],
    before: dict[str, int],
    local: list[str],
    topo: Topology,
    previous: Path | None,
) -> None:
    """What the next run needs of this one (``state``); none when some file is remote."""
    if len(local) != len(files):
        return
    if result.read is not None:  # a full run: the files as they were before it read them
        reads = [FileRead.of(f, before[f], result.file_lines.get(i, 0)) for i, f in enumerate(files)]
        stable = sizes(local) == before
    else:
        earlier = load_manifest(previous) if previous else None
        assert earlier is not None
        known = {i: r for i, r in enumerate(earlier.files)}
        reads = [result.reads.get(i) or known.get(i) or FileRead.of(f, 0, 0) for i, f in enumerate(files)]
        stable = True
    counts = result.counts
    folds = run_dir / "_state" / "folds"
    folders = sum(pq.ParquetFile(f).metadata.num_rows for f in folds.glob("*.parquet"))
    manifest = Manifest(
        run_id=run_dir.name,
        as_of=result.as_of,
        last_ts=counts.get("last_ts"),
        code=code_version(),
        topology=topology_digest(topo.to_json()),
        files=reads,
        lines_read=counts["lines_read"],
        accepted=counts["accepted"],
        duplicates=counts["duplicates"],
        status=[tuple(s) for s in counts["status"]],
        stable=stable,
        folders=folders,
    )
    (run_dir / STATE_DIR / MANIFEST).write_text(manifest.to_json(), encoding="utf-8")
    # what a plan on this run reads beside the fold states (``compute.planning``)
    (run_dir / STATE_DIR / TOPOLOGY).write_text(json.dumps(topo.to_json()), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """The spark-submit entry: the job's flags alone (spark-submit sets the master and memory)."""
    p = argparse.ArgumentParser(
        prog="spark_jobs/compute/entry.py", description="pfscope's Spark job: compute and publish"
    )
    add_arguments(p)
    args = p.parse_args(argv)
    return run_job(settings_from_flags(args), debug=args.debug)


if __name__ == "__main__":
    sys.exit(main())
