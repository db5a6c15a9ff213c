"""``compute --engine python``: a run computed in this process by the reference replay, published
as the Spark job publishes one.

Below some tens of megabytes of log the JVM's fixed costs outweigh the whole work: the
12-server share's log (172,295 lines, 22 MB) replays in 6.8 CPU s where the Spark job takes
42.4 (docs/performance.md). The run holds what a reader of a Spark run reads: every table in the
job's types and order (times as INT96, as Spark writes them), each folder's fold state (what the
what-if planner plays on, ``_state/folds``), the forecast record, and a manifest by which the next
run knows when nothing is new. A python run after a python run goes on from it: it parses only the
files that changed (``kept_lines``) and folds each folder on from its last kept state that still
holds (``kept_folds``). It keeps nothing for a Spark refresh (the kept lines and events, pending
events), so a Spark run after it reads the whole log (``state.plan_refresh``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from pfscope.spark_jobs.compute.arrow_rows import arrow_table, write_live
from pfscope.spark_jobs.compute.kept_folds import KeptFolds
from pfscope.spark_jobs.compute.kept_lines import KeptLines
from pfscope.spark_jobs.compute.refresh_summary import Refresh
from pfscope.spark_jobs.compute.stream import FolderState, dump_state
from pfscope.spark_jobs.compute.writing import FOLDER_TABLES, ROW_GROUP_BYTES
from pfscope.spark_jobs.model.events import Event, EventLog
from pfscope.spark_jobs.model.replay import ReplayResult, replay
from pfscope.spark_jobs.model.tables import KEYS, TABLES
from pfscope.spark_jobs.model.timeutil import default_as_of, now_us
from pfscope.spark_jobs.model.topology import Topology
from pfscope.spark_jobs.published.runs import Run
from pfscope.spark_jobs.runtime.collector import cyclic_gc_paused

#: ``state_history`` and ``state_table`` are read a folder at a time: sorted by folder first
_FOLDER_ORDER = ("fid",)


@dataclass(frozen=True)
class ReplayRun:
    """What the run read and made: for its manifest and its one line."""

    as_of: int
    counts: dict[str, Any]
    file_lines: dict[int, int]  # lines read, by the file's index in the input order
    line: str  # how it went about it


def run_replay(
    topo: Topology, files: list[str], as_of: int | None, run: Run, reason: str, earlier: Path | None
) -> ReplayRun:
    """Replay ``files`` and write the run's tables and fold states into ``run`` (not published:
    the caller writes the forecast record and the manifest, then publishes). What the ``earlier``
    run kept is not done again: the files it parsed (``kept_lines``), the folds of the folders
    whose states still hold (``kept_folds``). Python's cyclic collector pauses meanwhile, as in
    the Spark job's tasks: it found nothing to free and cost a sixth of the run (843,240 lines:
    40.1 and 44.8 CPU s with it, 34.3 and 37.2 without, the same 2.18 GB at the peak)."""
    with cyclic_gc_paused():
        # the run's objects are freed (by their counts) before the collector runs again: at its
        # first run it would scan them all (0.4 CPU s on the 12-server share's log)
        return _replayed(topo, files, as_of, run, reason, earlier)


def _replayed(
    topo: Topology, files: list[str], as_of: int | None, run: Run, reason: str, earlier: Path | None
) -> ReplayRun:
    started = time.time()
    lines = KeptLines(topo, run.path, earlier)
    log = EventLog.judge(lines.lines(files))
    at = as_of if as_of is not None else default_as_of(log.last_ts(), now_us())
    kept = KeptFolds.plan(earlier, topo, log.events, lines.texts, at)
    result = replay(topo, log, at, run_id=run.run_id, starts=kept.starts)
    refresh = _refresh(kept, result, log, lines.lines_parsed, reason)
    _write_run(run, result, kept, log, started, refresh)
    line = refresh.line() + (lines.line(len(files)) if refresh.mode == "full" else "")
    return ReplayRun(result.as_of, _counts(log), dict(lines.file_lines), line)


def _write_run(
    run: Run, result: ReplayResult, kept: KeptFolds, log: EventLog, started: float, refresh: Refresh
) -> None:
    """The run's tables (the kept final rows with them), its fold states and what it keeps; its
    summary last (when the run finished)."""
    summary = result.tables["summary"][0]
    summary.update(started_at=int(started * 1_000_000), **_summary_fields(refresh))
    for table, columns in TABLES.items():
        if table != "summary":
            data = kept.carried(table, arrow_table(columns, result.tables[table]))
            write_table(run.path / table, _in_order(table, data))
    states = fold_states(result, log.events)
    write_live(run.path / "_state" / "folds", pa.Table.from_pylist(states, _FOLD_STATE))
    kept.keep(run.path, (s["fid"] for s in states))
    summary["finished_at"] = int(time.time() * 1_000_000)
    write_table(run.path / "summary", arrow_table(TABLES["summary"], result.tables["summary"]))


def _refresh(kept: KeptFolds, result: ReplayResult, log: EventLog, parsed: int, reason: str) -> Refresh:
    """Full, or how many folders went on from a kept state (those with events after it refolded,
    the others only brought to the as-of) and how many were folded from their first event."""
    if not kept.starts:
        return Refresh("full", reason, log.lines_read)
    folders = {fid for _, fid in result.folds}
    starts = kept.starts
    moved = {e.fid for e in log.events if e.fid in starts and starts[e.fid].at < e.ts <= result.as_of}
    carried = len(starts.keys() - moved)
    return Refresh(
        "incremental",
        "",
        parsed,
        len(folders) - carried,
        carried,
        folders_from_start=len(folders - starts.keys()),
    )


def _summary_fields(r: Refresh) -> dict[str, Any]:
    if r.mode == "full":
        return {"refresh": "full", "refresh_reason": r.reason}
    return {
        "refresh": r.mode,
        "refresh_reason": r.reason,
        "lines_new": r.lines_new,
        "folders_refolded": r.folders_refolded,
        "folders_carried": r.folders_carried,
        "lines_rejudged": r.lines_rejudged,
        "folders_from_start": r.folders_from_start,
    }


_FOLD_STATE = pa.schema([("fid", pa.string()), ("blob", pa.string())])


def _counts(log: EventLog) -> dict[str, Any]:
    """The counts a manifest keeps, as the Spark job's reading gives them."""
    status = sorted(
        (e.ts, e.seq, e.store, e.status == "down") for e in log.events if e.kind == "store_status"
    )
    return {
        "lines_read": log.lines_read,
        "accepted": log.accepted,
        "duplicates": log.duplicates,
        "last_ts": log.last_ts(),
        "status": status,
    }


def write_table(dest: Path, table: pa.Table) -> None:
    """One table of the run, in times as Spark writes them; a table read a folder at a time in
    row groups of about ``ROW_GROUP_BYTES`` (a reader's folder filter skips the rest)."""
    options: dict[str, Any] = {}
    if dest.name in FOLDER_TABLES and table.num_rows:
        options["row_group_size"] = max(1, table.num_rows * ROW_GROUP_BYTES // max(1, table.nbytes))
    write_live(dest, table, int96=True, **options)


def _in_order(table: str, data: pa.Table) -> pa.Table:
    """Rows in the table's key order (by folder first where it is read a folder at a time)."""
    keys = (*_FOLDER_ORDER, *KEYS[table]) if table in FOLDER_TABLES else KEYS[table]
    sortable = [k for k in dict.fromkeys(keys) if not pa.types.is_list(data.schema.field(k).type)]
    if not sortable or not data.num_rows:
        return data
    return data.sort_by([(k, "ascending", "at_start") for k in sortable])


def fold_states(result: ReplayResult, events: list[Event]) -> list[dict[str, str]]:
    """Each folder's fold state at the as-of, as the Spark job keeps it (``stream.FolderState``):
    its replica-list changes, each observer's fold, its status requests and their processing,
    and its mail on its way."""
    lists: dict[str, list[Event]] = {}
    for e in events:
        if e.kind == "replicas" and e.ts <= result.as_of and e.fid is not None:
            lists.setdefault(e.fid, []).append(e)
    folds: dict[str, dict[str, Any]] = {}
    for (observer, fid), fold in result.folds.items():
        folds.setdefault(fid, {})[observer] = fold
    responders: dict[str, list[dict[str, Any]]] = {}
    for row in result.tables["responders"]:
        responders.setdefault(row["fid"], []).append(row)
    return [
        {
            "fid": fid,
            "blob": dump_state(
                FolderState(
                    sorted(lists.get(fid, []), key=lambda e: (e.ts, e.seq)),
                    folds[fid],
                    responders.get(fid, []),
                    result.processed.get(fid, []),
                    result.mail.get(fid, []),
                )
            ),
        }
        for fid in sorted(folds)
    ]
