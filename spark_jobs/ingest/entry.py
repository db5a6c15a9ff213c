"""``pfscope ingest`` as a Spark job, and its ``spark-submit`` entry:
``spark-submit --master URL spark_jobs/ingest/entry.py --logs ... --out ...``.

The exports are read by Spark's workers, each running the reference rules of ``spark_jobs.exchange``
on one file or one piece of a large XML export (``stages``); duplicates and the accounting are
found in Spark SQL; the steps of ``exchange.build.build_events`` (REPLIDs, message matching,
derivation) run as Spark steps too (``build_steps``), so the driver holds no event.
The outputs are those of ``run_ingest`` (the reference, which the differential test holds them
equal to), written the same way (``outputs``): beside their place, renamed in when all are complete.

Incremental: the step-1 rows of every file are kept under ``OUT/.ingest_state`` (``incremental``);
a later run reads only the files it has not read (new exports, a server's later export) and
reuses the rows of the others, so its result is that of a fresh ingest of the whole share.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pfscope.spark_jobs.exchange import InputError, check_some_file_read
from pfscope.spark_jobs.exchange.build import summarize
from pfscope.spark_jobs.exchange.formats import expand_log_paths, sniff
from pfscope.spark_jobs.exchange.identity import load_replids
from pfscope.spark_jobs.exchange.stage import ReadTask
from pfscope.spark_jobs.exchange.xml_splits import SPLIT_BYTES, plan, splittable
from pfscope.spark_jobs.ingest import incremental
from pfscope.spark_jobs.ingest.incremental import BUILD_SUFFIX
from pfscope.spark_jobs.ingest.outputs import built_as_they_are, write_outputs
from pfscope.spark_jobs.model.errors import ExitStatus, OperatorError
from pfscope.spark_jobs.runtime.command import add_debug_argument, run_command

#: the JVM's heap unless ``--conf spark.driver.memory=...``: the rows pass through in batches, the
#: duplicate check's projection is narrow, the workers write the event lines
DRIVER_MEMORY = "1g"
#: ``--engine auto`` runs Spark from this much input on
AUTO_SPARK_BYTES = 32 << 20
_BREAK_RE = re.compile(r"^unreadable (?:file|after record \d+): ")


@dataclass(frozen=True)
class IngestSettings:
    """One run of ingest on Spark."""

    logs: tuple[str, ...]
    out: str
    replids: str | None = None
    topology: str | None = None
    default_offset_min: int = 0
    zone: str | None = None
    strict: bool = False
    master: str | None = None
    conf: tuple[str, ...] = ()
    #: the master when none is given (``PFSCOPE_SPARK_MASTER``)
    default_master: str | None = None
    #: read every file again, whatever the state says
    full: bool = False
    split_bytes: int = SPLIT_BYTES
    #: kept records per partition of the build steps (``build_steps``), at least
    build_records_per_part: int = 25_000


@dataclass
class IngestRun:
    summary: dict[str, Any]
    #: ``incremental: ...`` or ``full ingest: <why>``
    mode: str
    reused_files: int = 0
    new_files: int = 0
    new_records: int = 0
    reused_records: int = 0
    timings: dict[str, float] = field(default_factory=dict)
    #: nothing new: the outputs are the last run's, untouched
    unchanged: bool = False


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Ingest's flags, shared by ``pfscope ingest`` and the spark-submit entry."""
    p.add_argument(
        "--logs", required=True, nargs="+", help="XML, CSV or .evtx exports: files, folders or globs"
    )
    p.add_argument(
        "--out", required=True, help="folder for events.jsonl, topology.json and the ingest reports"
    )
    p.add_argument("--replids", help="CSV server,replid,store: which store each server's REPLIDs mean")
    p.add_argument("--topology", help="topology to complete with the stores and folders found")
    p.add_argument(
        "--time-offset",
        default="+00:00",
        help="UTC offset of exported times that carry none (CSV exports), e.g. +01:00",
    )
    p.add_argument(
        "--timezone",
        help="time zone of exported times that carry no offset, with its daylight "
        "saving rules, e.g. Europe/Paris (instead of --time-offset)",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="stop at the first file that cannot be read whole, writing nothing (exit 2), instead "
        "of rejecting it and ingesting the rest (exit 3, partial)",
    )
    p.add_argument(
        "--master",
        help="Spark master URL (default: $PFSCOPE_SPARK_MASTER, spark-submit's, else "
        "local[*]); implies --engine spark",
    )
    p.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra Spark setting; implies --engine spark",
    )
    p.add_argument(
        "--full", action="store_true", help="read every export again, even those an earlier run read (Spark)"
    )
    p.add_argument(
        "--engine",
        choices=("auto", "spark", "python"),
        default="auto",
        help="spark: the Spark job (incremental); python: this process, the reference "
        "implementation; auto (default): Spark for exports of 32 MB or more, a folder an "
        "earlier Spark run wrote, or any Spark flag, else python",
    )
    add_debug_argument(p)


def choose_engine(engine: str, s: IngestSettings) -> str:
    """``spark`` or ``python`` (see ``--engine``): the JVM's start costs more than a small share's
    whole ingest in this process."""
    if engine != "auto":
        return engine
    if s.master or s.conf or s.full or (incremental.state_root(s.out) / "state.json").exists():
        return "spark"
    size = sum(_size(f) for f in expand_log_paths(s.logs))
    return "spark" if size >= AUTO_SPARK_BYTES else "python"


def parse_offset(text: str, zone: str | None) -> int:
    """``--time-offset`` in minutes; an operator error when it is not ``±HH:MM`` or comes with a zone."""
    m = re.fullmatch(r"([+-])(\d{1,2}):?(\d{2})?", text.strip())
    if not m:
        raise InputError(f"--time-offset {text!r}: expected +HH:MM or -HH:MM")
    offset = (1 if m.group(1) == "+" else -1) * (int(m.group(2)) * 60 + int(m.group(3) or 0))
    if zone and offset:
        raise InputError("give --time-offset or --timezone, not both")
    return offset


def settings_from_flags(args: argparse.Namespace, master: str | None = None) -> IngestSettings:
    """``master``: the environment's, used when ``--master`` is not given (it does not choose Spark)."""
    return IngestSettings(
        logs=tuple(args.logs),
        out=args.out,
        replids=args.replids,
        topology=args.topology,
        default_offset_min=parse_offset(args.time_offset, args.timezone),
        zone=args.timezone,
        strict=args.strict,
        master=args.master,
        conf=tuple(args.conf),
        full=args.full,
        default_master=master,
    )


def _zone(name: str | None) -> ZoneInfo | None:
    if not name:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InputError(f"--timezone {name!r}: no such time zone (e.g. Europe/Paris)") from None


def _tasks(path: str, key: str, split_bytes: int) -> list[ReadTask]:
    """A plain XML export in pieces; any other file whole."""
    size = _size(path)
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        head = b""
    if size and sniff_or_none(path) == "xml" and splittable(head):
        return [ReadTask(path, key, i, a, b) for i, (a, b) in enumerate(plan(size, split_bytes))]
    return [ReadTask(path, key)]


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:  # gone since it was listed: its reading says so, as one reject
        return 0


def sniff_or_none(path: str) -> str | None:
    try:
        return sniff(path)
    except OSError:
        return None


def run_ingest_spark(s: IngestSettings) -> IngestRun:
    """Read, build and write; the summary (as ``run_ingest``'s) and what was read again.
    Raises ``OperatorError`` for what the operator must fix (nothing written), ``RunLocked``
    (an ``OperatorError``) when another ingest into the same folder is running."""
    from pfscope.spark_jobs.model.topology import load_topology
    from pfscope.spark_jobs.published.runs import run_lock

    started = time.perf_counter()
    zone = _zone(s.zone)
    files = expand_log_paths(s.logs)
    table = load_replids(s.replids) if s.replids else None
    topo = load_topology(s.topology) if s.topology else None
    with run_lock(incremental.state_root(s.out)):  # one run at a time updates the state
        run_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
        try:
            return _run(s, started, zone, files, table, topo, run_id)
        except BaseException:  # this run's rows are no state's: removed (the last state's stay)
            incremental.prune_run(s.out, run_id)
            raise


def _run(
    s: IngestSettings,
    started: float,
    zone: ZoneInfo | None,
    files: list[str],
    table: dict[tuple[str, int], str] | None,
    topo: Any,
    run_id: str,
) -> IngestRun:
    options = {"time_offset": s.default_offset_min, "timezone": s.zone, "code": incremental.code_digest()}
    state, why = (None, "--full") if s.full else incremental.load(s.out, options)
    keys = {f: incremental.file_key(f) for f in files}
    stored = state.files if state else {}
    new = [f for f in files if keys[f] not in stored]
    topo_json = topo.to_json() if topo is not None else None
    inputs = incremental.built_from([keys[f] for f in files], table, topo_json, s.strict)
    if state is not None and built_as_they_are(s.out, state, files, keys, inputs):
        return _as_they_are(s.out, files, keys, stored)

    from pyspark.sql import SparkSession

    from pfscope.spark_jobs.ingest import stages as ks
    from pfscope.spark_jobs.ingest.build_cache import BuildCache
    from pfscope.spark_jobs.ingest.build_steps import Layers, build_on_spark
    from pfscope.spark_jobs.runtime.config import input_bytes
    from pfscope.spark_jobs.runtime.session import spark_session

    # a session the caller built (a notebook, the tests) is used as it is
    spark = SparkSession.getActiveSession() or spark_session(
        master=s.master or s.default_master,
        app_name="pfscope-ingest",
        conf=session_conf(s),
        progress=sys.stderr.isatty(),
        input_bytes=input_bytes(files),
    )
    timings: dict[str, float] = {"session": time.perf_counter() - started}

    def lap(name: str) -> None:
        timings[name] = time.perf_counter() - started - sum(timings.values())

    root = incremental.state_root(s.out) / "rows"
    entries: dict[str, incremental.Stored] = {}
    if new:
        tasks = [t for f in new for t in _tasks(f, keys[f], s.split_bytes)]
        got = ks.read_exports(spark, tasks, str(root / run_id), s.default_offset_min, zone)
        resplit = sorted({g["file_key"] for g in got if g["kind"] == "resplit"})
        if resplit:
            path_of = {keys[f]: f for f in new}
            got += ks.read_exports(
                spark,
                [ReadTask(path_of[k], k) for k in resplit],
                str(root / (run_id + "-whole")),
                s.default_offset_min,
                zone,
            )
        entries = incremental.stored_entries(got, set(resplit), run_id)
    lap("read")
    entries |= {keys[f]: stored[keys[f]] for f in files if keys[f] in stored}
    _counts, broken, empty = _file_statuses(files, keys, entries, s.strict)

    plans = [
        ks.FilePlan(f, keys[f], i, str(root / entries[keys[f]].dataset), entries[keys[f]].offsets)
        for i, f in enumerate(files)
    ]
    classified = ks.Classified(spark, plans)
    try:
        counted = classified.accounting()
        lap("accounting")
        acc = counted.acc
        made = build_on_spark(
            spark,
            classified.kept(),
            counted.kept,
            str(root / (run_id + BUILD_SUFFIX)),
            counted.kept_servers,
            counted.error_servers,
            acc,
            replids=table,
            topology=topo,
            per_part=s.build_records_per_part,
            timings=timings,
            layers=Layers(
                BuildCache.from_json(state.build) if state is not None and state.build else None,
                str(root.resolve()),
                incremental.built_from([], table, topo_json, s.strict),
                ["" if entries[keys[f]].status["unreadable"] else keys[f] for f in files],
                files,
                [i for i, f in enumerate(files) if keys[f] not in stored],
                sum(entries[keys[f]].status["count"] for f in new),
            ),
        )
        built = made.built
        lap("build")
        texts = classified.texts([(r["source"], r["record"]) for r in built.rejects])
        for r in built.rejects:
            r["text"] = texts.get((r["source"], r["record"]), r["text"])
        rejected = counted.rejected + len(built.rejects)
        summary = summarize(
            acc,
            built,
            errors=counted.errors,
            duplicates=counted.duplicates,
            rejected=rejected,
            default_offset_min=s.default_offset_min,
            zone=zone,
        )
        check_some_file_read(broken, files)
        took = time.perf_counter() - started
        summary["status"] = "partial" if broken else "complete"
        summary["files_broken"] = broken
        summary["files_empty"] = empty
        summary["formats"] = {f: sniff_or_none(f) or "unknown" for f in files}
        summary["seconds"] = round(took, 3)
        summary["records_per_second"] = round(summary["records_read"] / max(took, 1e-9))
        write_outputs(
            s.out,
            built,
            made.write_events,
            summary,
            classified,
            options,
            inputs,
            [
                {
                    "file_key": keys[f],
                    "source": f,
                    "dataset": entries[keys[f]].dataset,
                    "offsets": entries[keys[f]].offsets,
                    "status": entries[keys[f]].status,
                }
                for f in files
            ],
            made.cache.to_json(),
        )
        lap("write")
        repeated = classified.repeated([keys[f] for f in new]) if state is not None and new else 0
    finally:
        classified.release()
    incremental.prune(s.out, {e.dataset for e in entries.values()} | {x.dataset for x in made.cache.layers})
    new_records = sum(entries[keys[f]].status["count"] for f in new)
    reused = sum(entries[keys[f]].status["count"] for f in files if keys[f] in stored)
    if state is not None:
        mode = (
            f"incremental: {len(new):,} new files, {new_records - repeated:,} new records, "
            f"{repeated:,} already read; {len(files) - len(new):,} files ({reused:,} records) not read again; "
            + made.how
        )
    else:
        mode = f"full ingest: {why}"
    return IngestRun(summary, mode, len(files) - len(new), len(new), new_records, reused, timings)


def _as_they_are(
    out: str, files: list[str], keys: dict[str, str], stored: dict[str, incremental.Stored]
) -> IngestRun:
    """A run with nothing new: the last run's outputs, said so (no Spark, nothing written)."""
    summary = json.loads((Path(out) / "ingest_summary.json").read_text(encoding="utf-8"))
    reused = sum(stored[keys[f]].status["count"] for f in files)
    mode = (
        f"incremental: 0 new files, 0 new records, 0 already read; {len(files):,} files ({reused:,} records) "
        "not read again; nothing new: the outputs stay as they are"
    )
    return IngestRun(summary, mode, len(files), 0, 0, reused, unchanged=True)


def session_conf(s: IngestSettings) -> dict[str, str]:
    """Compute's settings, but the JVM compiles with C1 only and has a smaller heap: in ingest it
    mostly moves rows between the workers' Python and Parquet, and C2's warm-up cost more than it
    saved (12 exports: 23 JVM CPU seconds with C1 only, 31 with C2); what it holds at once is
    bounded (a piece per task, a run of files collected). ``--conf`` wins."""
    from pfscope.spark_jobs.runtime.config import parse_conf
    from pfscope.spark_jobs.runtime.session import session_settings

    master = s.master or s.default_master or "local[*]"
    conf = {
        "spark.driver.extraJavaOptions": session_settings(master, input_bytes=0)[
            "spark.driver.extraJavaOptions"
        ],
        "spark.driver.memory": DRIVER_MEMORY,
    }
    return conf | parse_conf(list(s.conf))


def _file_statuses(
    files: list[str], keys: dict[str, str], entries: dict[str, incremental.Stored], strict: bool
) -> tuple[dict[str, int], list[dict[str, Any]], list[str]]:
    broken: list[dict[str, Any]] = []
    empty: list[str] = []
    counts: dict[str, int] = {}
    for f in files:
        st = entries[keys[f]].status
        counts[f] = st["count"]
        if st["broken"]:
            if strict:
                raise InputError(f"{f}: {_BREAK_RE.sub('', st['broken'])} (--strict: nothing written)")
            broken.append({"file": f, "complete_records": st["count"] - 1, "reason": st["broken"]})
        elif st["count"] == 0:
            empty.append(f)
    return counts, broken, empty


def report(run: IngestRun, out: str) -> int:
    """Print what ``pfscope ingest`` prints; the exit status."""
    s = run.summary
    if run.mode:
        print(run.mode)
    if not run.unchanged:
        _said_read(s, out)
    broken = s["files_broken"]
    if broken:
        print(
            f"pfscope ingest: partial: {len(broken)} of {len(s['files'])} files could not be read whole; "
            f"their complete records and every other file were ingested (ingest_rejects.jsonl):",
            file=sys.stderr,
        )
        for b in broken:
            print(f"  {b['file']}: {b['reason']}", file=sys.stderr)
        return ExitStatus.PARTIAL
    return ExitStatus.OK


def _said_read(s: dict[str, Any], out: str) -> None:
    w = s["events_written"]
    print(
        f"read {s['records_read']:,} records from {len(s['files'])} files in {s['seconds']:.1f} s "
        f"({s['records_per_second']:,} records/s): {s['used']:,} used, {s['errors_kept']:,} errors kept, "
        f"{s['duplicates']:,} duplicates, {s['rejected']:,} rejected -> {out}"
    )
    print(
        f"wrote {w.get('send', 0):,} sends, {w.get('receive', 0):,} receives, {w.get('change', 0):,} derived "
        f"changes; {len(s['replids']['inferred'])} REPLIDs inferred, {len(s['replids']['conflicts'])} conflicts"
    )
    for reason, n in s["reject_reasons"].items():
        print(f"  rejected {n:,}: {reason}")
    if s["rejected"] and any("unrendered" in r for r in s["reject_reasons"]):
        print("  some events carry no description: see docs/ingest.md, 'Export the events'")


#: what a crash of ingest leaves: its outputs are written only when it ends well
AFTER_CRASH = "nothing written"


def run(s: IngestSettings, *, engine: str = "spark", debug: bool = False) -> int:
    """Ingest and report; an error is one line on stderr and its exit status (nothing written)."""
    return run_command("ingest", lambda: ingest_and_report(s, engine), debug=debug, after_crash=AFTER_CRASH)


def ingest_and_report(s: IngestSettings, engine: str = "spark") -> int:
    """On Spark, or for a small share in this process with the reference implementation
    (``exchange.run_ingest``): the same outputs either way. Errors are raised."""
    from pfscope.spark_jobs.exchange import run_ingest

    try:
        if choose_engine(engine, s) == "spark":
            result = run_ingest_spark(s)
        else:
            result = IngestRun(
                run_ingest(
                    s.logs,
                    s.out,
                    replids=s.replids,
                    topology=s.topology,
                    zone=s.zone,
                    strict=s.strict,
                    default_offset_min=s.default_offset_min,
                ),
                mode="",
            )
    except OperatorError:
        raise
    except OSError as e:  # a share or output folder the operator can put right
        raise OperatorError(f"{getattr(e, 'filename', None) or s.out}: {e.strerror or e}") from None
    return report(result, s.out)


def main(argv: list[str] | None = None) -> int:
    """The spark-submit entry: ingest's flags alone (spark-submit sets the master)."""
    p = argparse.ArgumentParser(prog="spark_jobs/ingest/entry.py", description="pfscope ingest on Spark")
    add_arguments(p)
    args = p.parse_args(argv)
    return run_command(
        "ingest",
        lambda: ingest_and_report(settings_from_flags(args)),
        debug=bool(args.debug),
        after_crash=AFTER_CRASH,
    )


if __name__ == "__main__":
    sys.exit(main())
