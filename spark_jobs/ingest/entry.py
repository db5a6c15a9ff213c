"""``pfscope ingest``'s command line, and its ``spark-submit`` entry:
``spark-submit --master URL spark_jobs/ingest/entry.py --logs ... --out ...``. A run on Spark is
``job``'s; a small share's, in this process, the reference's (``exchange.run_ingest``).
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from pfscope.spark_jobs.exchange import InputError
from pfscope.spark_jobs.exchange.formats import expand_log_paths
from pfscope.spark_jobs.ingest.job import IngestRun, IngestSettings, file_size, run_ingest_spark
from pfscope.spark_jobs.model.errors import ExitStatus, OperatorError
from pfscope.spark_jobs.runtime.command import add_debug_argument, run_command

#: ``--engine auto`` runs Spark from a share of this size on: in this process a share is held in
#: memory (about 4.6 bytes a byte of XML export: 0.67 GB at 145 MB)
AUTO_SPARK_BYTES = 1 << 30


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
        "--full", action="store_true", help="read every export again, even those an earlier run read"
    )
    p.add_argument(
        "--engine",
        choices=("auto", "spark", "python"),
        default="auto",
        help="python: this process, the reference implementation, keeping each export's records for "
        "the next run; spark: the Spark job (incremental); auto (default): python for a share under "
        f"{AUTO_SPARK_BYTES >> 20:,} MB and no Spark flag, else spark",
    )
    add_debug_argument(p)


def choose_engine(engine: str, s: IngestSettings) -> str:
    """``spark`` or ``python`` (see ``--engine``): in this process, with each export's records kept
    from run to run, a share's hour costs a fraction of Spark's (docs/performance.md, "Ingest in
    one process"); past ``AUTO_SPARK_BYTES`` Spark spreads the reading and holds nothing in one
    process."""
    if engine != "auto":
        return engine
    if s.master or s.conf:
        return "spark"
    size = sum(file_size(f) for f in expand_log_paths(s.logs))
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
    """On Spark, or in this process with the reference implementation keeping each export's
    records (``python_engine``): the same outputs either way. Errors are raised."""
    try:
        if choose_engine(engine, s) == "spark":
            result = run_ingest_spark(s)
        else:
            from pfscope.spark_jobs.ingest.python_engine import ingest_python

            result = ingest_python(s)  # each export's records kept for the next run
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
