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
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from pfscope.spark_jobs.compute.engines import Done, SparkArgs, computed, replayed
from pfscope.spark_jobs.compute.flags import (
    AFTER_CRASH,
    AUTO_SPARK_BYTES,
    JobSettings,
    add_arguments,
    settings_from_flags,
)
from pfscope.spark_jobs.compute.record import RECORD, write_forecast_record
from pfscope.spark_jobs.compute.state import (
    MANIFEST,
    STATE_DIR,
    TOPOLOGY,
    FileRead,
    Manifest,
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
from pfscope.spark_jobs.model.errors import ExitStatus, OperatorError
from pfscope.spark_jobs.model.events import expand_paths
from pfscope.spark_jobs.model.timeutil import format_ts, now_us, parse_ts
from pfscope.spark_jobs.model.topology import Topology, load_topology
from pfscope.spark_jobs.published.runs import (
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
from pfscope.spark_jobs.runtime.command import run_command
from pfscope.spark_jobs.runtime.config import parse_conf


class JobError(OperatorError):
    """A failure reported as one line."""


def choose_engine(args: JobSettings, files: list[str], size: int) -> tuple[str, str]:
    """The engine, and why when it is not Spark. ``auto`` runs the replay in this process for a
    small local log: the JVM's start and Spark's fixed costs per query outweigh such a log's whole
    work (docs/performance.md, "The Python engine"); any Spark flag, a remote file or a larger log
    runs Spark."""
    remote = any("://" in f for f in files)
    if args.engine == "python":
        if remote:
            raise JobError("--engine python reads local files only; a URI needs --engine spark")
        if args.spark_flags:
            raise JobError("--master, --conf and --partitions are Spark's: give them with --engine spark")
        return "python", "--engine python"
    if args.engine == "spark" or args.spark_flags:
        return "spark", ""
    if remote or size >= AUTO_SPARK_BYTES:
        return "spark", ""
    return "python", f"the log is under {AUTO_SPARK_BYTES >> 20} MB"


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
    engine, why = choose_engine(args, files, sum(before.values()))
    run = start_run(args.out)
    try:
        if engine == "python":
            done = replayed(topo, files, as_of, run, why, None if args.full else previous)
        else:
            spark = SparkArgs(args.master, conf, args.partitions, args.events)
            done = computed(spark, topo, files, as_of, plan, previous, run)
        write_forecast_record(previous, run.path, done.as_of)
        _write_manifest(run.path, done, files, before, local, topo, previous)
    except BaseException:
        abandon(run)
        raise
    last_ts = done.counts.get("last_ts")
    info = {
        "as_of": format_ts(done.as_of),
        "tables": [t for t in sorted({*done.tables, RECORD}) if not t.startswith("_")],
        # the latest accepted line, when it is stamped after the as-of (not applied in this run)
        "last_event_after_as_of": format_ts(last_ts)
        if last_ts is not None and last_ts > done.as_of
        else None,
        "refresh": done.line,
        "seconds": round(time.perf_counter() - started, 3),
        "summary": {
            "lines_read": done.counts["lines_read"],
            "accepted": done.counts["accepted"],
            "duplicates": done.counts["duplicates"],
            "rejected": done.counts["lines_read"] - done.counts["accepted"] - done.counts["duplicates"],
        },
    }
    return publish(run, info)


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
    done: Done,
    files: list[str],
    before: dict[str, int],
    local: list[str],
    topo: Topology,
    previous: Path | None,
) -> None:
    """What the next run needs of this one (``state``); none when some file is remote."""
    if len(local) != len(files):
        return
    if done.file_lines is not None:  # read whole: the files as they were before it read them
        reads = [FileRead.of(f, before[f], done.file_lines.get(i, 0)) for i, f in enumerate(files)]
        stable = sizes(local) == before
    else:
        earlier = load_manifest(previous) if previous else None
        assert earlier is not None
        known = {i: r for i, r in enumerate(earlier.files)}
        reads = [done.reads.get(i) or known.get(i) or FileRead.of(f, 0, 0) for i, f in enumerate(files)]
        stable = True
    counts = done.counts
    folds = run_dir / "_state" / "folds"
    folders = sum(pq.ParquetFile(f).metadata.num_rows for f in folds.glob("*.parquet"))
    manifest = Manifest(
        run_id=run_dir.name,
        as_of=done.as_of,
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
        engine=done.engine,
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
