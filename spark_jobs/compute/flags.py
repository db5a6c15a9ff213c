"""The job's flags and the one typed object they make (:class:`JobSettings`), apart from the job:
the command line builds its parser from them without importing the job (pyarrow, the model's
tables), which ``pfscope ingest`` and ``pfscope refresh`` never run."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from pfscope.spark_jobs.published.runs import DEFAULT_KEEP
from pfscope.spark_jobs.runtime.command import add_debug_argument

ENGINES = ("spark", "python", "auto")
#: ``--engine auto`` runs Spark from this much log on: the replay holds the log in memory (about
#: 2.6 KB a line), and below this its peak stays under the Spark job's own at 1M lines (3.5 GB)
AUTO_SPARK_BYTES = 160 << 20


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
    #: ``spark``, ``python`` (the replay in this process) or ``auto`` (:func:`choose_engine`);
    #: ``pfscope compute`` defaults to ``auto``, the spark-submit entry to ``spark``
    engine: str = "spark"
    #: a Spark flag was given (``--master``, ``--conf``, ``--partitions``; not the environment's
    #: master): ``auto`` runs Spark
    spark_flags: bool = False


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
    p.add_argument(
        "--engine",
        choices=ENGINES,
        help="spark: the Spark job (a refresh goes on from the last run); python: the replay in this "
        "process, every table and fold state as Spark writes them, reading the whole log each run; "
        f"auto: python for a local log under {AUTO_SPARK_BYTES >> 20} MB and no Spark flag, else spark "
        "(default: auto with pfscope compute, spark with spark-submit)",
    )
    add_debug_argument(p)


def settings_from_flags(args: argparse.Namespace, **defaults: Any) -> JobSettings:
    """:class:`JobSettings` from parsed :func:`add_arguments` flags; a flag left unset takes
    ``defaults[name]`` (the caller's: its environment, its default engine), else the field's default."""

    def pick(name: str) -> Any:
        value = getattr(args, name)
        return value if value is not None else defaults.get(name)

    fields = {
        "master": pick("master"),
        "partitions": args.partitions,
        "wait_lock": args.wait_lock,
        "driver_memory": defaults.get("driver_memory"),
        "full": bool(args.full),
        "engine": pick("engine") or "spark",
        "spark_flags": bool(args.master or args.conf or args.partitions),
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
