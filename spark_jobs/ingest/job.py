"""One run of ingest on Spark (``run_ingest_spark``): the new exports read, the duplicates and the
accounting, the build steps, the outputs written.

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

import json
import os
import re
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
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
from pfscope.spark_jobs.runtime.kept import file_key

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from pfscope.spark_jobs.ingest.build_steps import Layers, SparkBuilt
    from pfscope.spark_jobs.ingest.stages import Accounted, Classified


#: the JVM's heap unless ``--conf spark.driver.memory=...``: the rows pass through in batches, the
#: duplicate check's projection is narrow, the workers write the event lines
DRIVER_MEMORY = "1g"
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
            return _run(s, started, _Share.of(files, zone), table, topo, run_id)
        except BaseException:  # this run's rows are no state's: removed (the last state's stay)
            incremental.prune_run(s.out, run_id)
            raise


@dataclass
class _Share:
    """The share's files as this run finds them: each one's key, and the state's files."""

    files: list[str]
    zone: ZoneInfo | None
    keys: dict[str, str] = field(default_factory=dict)
    stored: dict[str, incremental.Stored] = field(default_factory=dict)
    new: list[str] = field(default_factory=list)  # the files no earlier run read (``given``)
    entries: dict[str, incremental.Stored] = field(default_factory=dict)  # every file's, once read

    @classmethod
    def of(cls, files: list[str], zone: ZoneInfo | None) -> _Share:
        return cls(files, zone, {f: file_key(f) for f in files})

    def given(self, stored: dict[str, incremental.Stored]) -> None:
        """The state's files: those of the share it does not hold are new."""
        self.stored = stored
        self.new = [f for f in self.files if self.keys[f] not in stored]

    def count(self, files: list[str]) -> int:
        return sum(self.entries[self.keys[f]].status["count"] for f in files)


def _run(
    s: IngestSettings,
    started: float,
    share: _Share,
    table: dict[tuple[str, int], str] | None,
    topo: Any,
    run_id: str,
) -> IngestRun:
    options = {"time_offset": s.default_offset_min, "timezone": s.zone, "code": incremental.code_digest()}
    state, why = (None, "--full") if s.full else incremental.load(s.out, options)
    files, keys = share.files, share.keys
    share.given(state.files if state else {})
    topo_json = topo.to_json() if topo is not None else None
    inputs = incremental.built_from(
        incremental.listed(files, keys), table, incremental.topology_text(s.topology), s.strict
    )
    if state is not None and built_as_they_are(s.out, state, files, keys, inputs):
        return _as_they_are(s.out, files, keys, share.stored)

    from pfscope.spark_jobs.ingest import stages as ks
    from pfscope.spark_jobs.ingest.build_steps import build_on_spark

    spark = _session(s, files)
    timings: dict[str, float] = {"session": time.perf_counter() - started}

    def lap(name: str) -> None:
        timings[name] = time.perf_counter() - started - sum(timings.values())

    root = incremental.state_root(s.out) / "rows"
    new = share.new
    share.entries = _read_new(spark, s, share, root, run_id)
    lap("read")
    share.entries |= {keys[f]: share.stored[keys[f]] for f in files if keys[f] in share.stored}
    _counts, broken, empty = _file_statuses(files, keys, share.entries, s.strict)

    plans = [
        ks.FilePlan(f, keys[f], i, str(root / share.entries[keys[f]].dataset), share.entries[keys[f]].offsets)
        for i, f in enumerate(files)
    ]
    classified = ks.Classified(spark, plans)
    try:
        counted = classified.accounting()
        lap("accounting")
        build = incremental.built_from([], table, topo_json, s.strict)
        layers = _layers(share, root, state.build if state is not None else None, build)
        made = build_on_spark(
            spark,
            classified.kept(),
            counted.kept,
            str(root / (run_id + BUILD_SUFFIX)),
            counted.kept_servers,
            counted.error_servers,
            counted.acc,
            replids=table,
            topology=topo,
            per_part=s.build_records_per_part,
            timings=timings,
            layers=layers,
        )
        lap("build")
        summary = _summary(s, share, made, counted, classified, broken, empty, started)
        _write(s, share, made, summary, classified, options, inputs)
        lap("write")
        repeated = classified.repeated([keys[f] for f in new]) if state is not None and new else 0
    finally:
        classified.release()
    incremental.prune(
        s.out, {e.dataset for e in share.entries.values()} | {x.dataset for x in made.cache.layers}
    )
    fresh = set(new)
    reused = [f for f in files if f not in fresh]
    mode = f"full ingest: {why}"
    if state is not None:
        mode = (
            f"incremental: {len(new):,} new files, {share.count(new) - repeated:,} new records, "
            f"{repeated:,} already read; {len(reused):,} files ({share.count(reused):,} records) not read "
            f"again; {made.how}"
        )
    return IngestRun(summary, mode, len(reused), len(new), share.count(new), share.count(reused), timings)


def _layers(share: _Share, root: Path, build: dict[str, Any] | None, given: str) -> Layers:
    """What the build steps need to keep the rows of earlier runs (``build_cache``)."""
    from pfscope.spark_jobs.ingest.build_cache import BuildCache
    from pfscope.spark_jobs.ingest.build_steps import Layers

    keys, new = share.keys, set(share.new)
    return Layers(
        BuildCache.from_json(build) if build else None,
        str(root.resolve()),
        given,
        ["" if share.entries[keys[f]].status["unreadable"] else keys[f] for f in share.files],
        share.files,
        [i for i, f in enumerate(share.files) if f in new],
        share.count(share.new),
    )


def _session(s: IngestSettings, files: list[str]) -> SparkSession:
    """The Spark session: a session the caller built (a notebook, the tests) is used as it is."""
    from pyspark.sql import SparkSession

    from pfscope.spark_jobs.runtime.config import input_bytes
    from pfscope.spark_jobs.runtime.session import spark_session

    return SparkSession.getActiveSession() or spark_session(
        master=s.master or s.default_master,
        app_name="pfscope-ingest",
        conf=session_conf(s),
        progress=sys.stderr.isatty(),
        input_bytes=input_bytes(files),
    )


def _read_new(
    spark: SparkSession, s: IngestSettings, share: _Share, root: Path, run_id: str
) -> dict[str, incremental.Stored]:
    """The new files read (a plain XML export in pieces; one the pieces could not read, again whole)."""
    from pfscope.spark_jobs.ingest import stages as ks

    new, keys = share.new, share.keys
    if not new:
        return {}
    tasks = [t for f in new for t in _tasks(f, keys[f], s.split_bytes)]
    got = ks.read_exports(spark, tasks, str(root / run_id), s.default_offset_min, share.zone)
    resplit = sorted({g["file_key"] for g in got if g["kind"] == "resplit"})
    if resplit:
        path_of = {keys[f]: f for f in new}
        got += ks.read_exports(
            spark,
            [ReadTask(path_of[k], k) for k in resplit],
            str(root / (run_id + "-whole")),
            s.default_offset_min,
            share.zone,
        )
    return incremental.stored_entries(got, set(resplit), run_id)


def _summary(
    s: IngestSettings,
    share: _Share,
    made: SparkBuilt,
    counted: Accounted,
    classified: Classified,
    broken: list[dict[str, Any]],
    empty: list[str],
    started: float,
) -> dict[str, Any]:
    """``ingest_summary.json``, as the reference writes it; the rejects' texts filled in."""
    built = made.built
    texts = classified.texts([(r["source"], r["record"]) for r in built.rejects])
    for r in built.rejects:
        r["text"] = texts.get((r["source"], r["record"]), r["text"])
    summary = summarize(
        counted.acc,
        built,
        errors=counted.errors,
        duplicates=counted.duplicates,
        rejected=counted.rejected + len(built.rejects),
        default_offset_min=s.default_offset_min,
        zone=share.zone,
    )
    check_some_file_read(broken, share.files)
    took = time.perf_counter() - started
    summary["status"] = "partial" if broken else "complete"
    summary["files_broken"] = broken
    summary["files_empty"] = empty
    summary["formats"] = {f: sniff_or_none(f) or "unknown" for f in share.files}
    summary["seconds"] = round(took, 3)
    summary["records_per_second"] = round(summary["records_read"] / max(took, 1e-9))
    return summary


def _write(
    s: IngestSettings,
    share: _Share,
    made: SparkBuilt,
    summary: dict[str, Any],
    classified: Classified,
    options: dict[str, Any],
    inputs: str,
) -> None:
    """The outputs and the state that says what they were built from."""
    stored = [
        {
            "file_key": share.keys[f],
            "source": f,
            "dataset": share.entries[share.keys[f]].dataset,
            "offsets": share.entries[share.keys[f]].offsets,
            "status": share.entries[share.keys[f]].status,
        }
        for f in share.files
    ]
    write_outputs(
        s.out,
        made.built,
        made.write_events,
        summary,
        classified,
        options,
        inputs,
        stored,
        made.cache.to_json(),
    )


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


def _zone(name: str | None) -> ZoneInfo | None:
    if not name:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InputError(f"--timezone {name!r}: no such time zone (e.g. Europe/Paris)") from None


def _tasks(path: str, key: str, split_bytes: int) -> list[ReadTask]:
    """A plain XML export in pieces; any other file whole."""
    size = file_size(path)
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        head = b""
    if size and sniff_or_none(path) == "xml" and splittable(head):
        return [ReadTask(path, key, i, a, b) for i, (a, b) in enumerate(plan(size, split_bytes))]
    return [ReadTask(path, key)]


def file_size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:  # gone since it was listed: its reading says so, as one reject
        return 0


def sniff_or_none(path: str) -> str | None:
    try:
        return sniff(path)
    except OSError:
        return None
