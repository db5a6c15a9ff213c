"""Exchange's own replication events into pfscope's event log, in plain Python: the readers that
ingest's Spark workers run (``spark_jobs/ingest``), and the reference ingest in one process.

``formats`` reads exported records (XML, CSV, EVTX), ``parse`` reads one description,
``identity`` maps each server's REPLIDs to stores, ``build`` pairs sends with receives and
derives what the logs do not print; ``run_ingest`` is the only function here that writes.

Salvage: a file that cannot be read, or breaks part-way (cut off, garbage), is one reject (one
record read and rejected, so the accounting still holds) after its complete records, and one
entry of the summary's ``files_broken``; the run is then ``partial``. ``strict`` stops at the
first such file instead, with nothing written. When no file at all can be read, that is the
operator's to fix: nothing is written either.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import tzinfo
from pathlib import Path
from typing import Any, Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pfscope.spark_jobs.exchange.build import IngestResult, ingest_classified, ingest_records
from pfscope.spark_jobs.exchange.classify import Classified, classify_one
from pfscope.spark_jobs.exchange.derive_apart import parts_for
from pfscope.spark_jobs.exchange.event_files import (
    EVENTS_FOLDER,
    Place,
    discard,
    line_text,
    placement,
    swap_in,
    write_placed,
)
from pfscope.spark_jobs.exchange.formats import (
    EXTENSIONS,
    InputError,
    RawRecord,
    expand_log_paths,
    read_records,
    sniff,
)
from pfscope.spark_jobs.exchange.identity import ReplidFileError, load_replids

__all__ = [
    "FileReader",
    "IngestResult",
    "InputError",
    "Keeper",
    "ReplidFileError",
    "check_some_file_read",
    "ingest_records",
    "run_ingest",
]


def file_records(f: str, strict: bool = False) -> Iterator[RawRecord]:
    """One file's records; a file that breaks adds its one reject (``problem``) after its
    complete records. With ``strict``, a break raises ``InputError`` instead."""
    n = 0
    try:
        for r in read_records(f):
            n = r.record
            yield r
    except Exception as e:
        if isinstance(e, InputError):
            cause = str(e).removeprefix(f"{f}: ")
        else:  # a reader's own failure: still only this file's, and said so
            cause = f"unexpected {type(e).__name__}: {(str(e).splitlines() or [''])[0][:200]}"
        if strict:  # any file not read whole is the operator's to fix (exit 2), whatever broke
            raise InputError(f"{f}: {cause} (--strict: nothing written)") from None
        reason = f"unreadable file: {cause}" if n == 0 else f"unreadable after record {n}: {cause}"
        fmt = EXTENSIONS.get(os.path.splitext(f)[1].lower(), "unknown")
        yield RawRecord(f, n + 1, fmt, None, None, None, None, None, problem=reason)


def broken_entry(r: RawRecord) -> dict[str, Any]:
    """The summary's ``files_broken`` entry of a file whose last record is its break."""
    return {"file": r.source, "complete_records": r.record - 1, "reason": r.problem}


def is_break(r: RawRecord) -> bool:
    """Whether ``r`` is the one reject of a file that could not be read whole."""
    return r.problem is not None and r.problem.startswith(("unreadable file: ", "unreadable after record "))


#: one file's records, each with what it is on its own
FileReader = Callable[[str], Iterable[Classified]]


class Keeper(Protocol):
    """What ``run_ingest`` asks of a store of files read before (``ingest --engine python``'s):
    a file's records as ``read`` would give them, kept from an earlier run or read now."""

    def classified(self, f: str, read: FileReader) -> Iterable[Classified]: ...


def classified_records(
    f: str, strict: bool, default_offset_min: int, zone: tzinfo | None
) -> Iterator[Classified]:
    """One file's records (``file_records``), each with its ``classify_one`` outcome."""
    for r in file_records(f, strict):
        yield r, classify_one(r, default_offset_min, zone)


def _all_records(
    files: Sequence[str], broken: list[dict[str, Any]], empty: list[str], read: FileReader
) -> Iterator[Classified]:
    """Every file's records; a file that breaks adds its one reject after its complete records.
    A file with no record at all (an export of a quiet server) is listed in ``empty``."""
    for f in files:
        n = 0
        for r, o in read(f):
            if is_break(r):
                broken.append(broken_entry(r))
            n += 1
            yield r, o
        if n == 0:
            empty.append(f)


def run_ingest(
    logs: Sequence[str],
    out: str | os.PathLike[str],
    *,
    replids: str | None = None,
    topology: str | None = None,
    default_offset_min: int = 0,
    zone: str | None = None,
    strict: bool = False,
    kept: Keeper | None = None,
) -> dict[str, Any]:
    """Read every export under ``logs``, write the five outputs into ``out``; the summary, whose
    ``status`` is ``partial`` when a file could not be read whole (``files_broken``). ``kept``
    gives the files it holds without reading them.

    Raises ``InputError``, ``ReplidFileError`` or ``TopologyError`` for what the operator must fix.
    ``zone`` (an IANA name) reads times that carry no offset with its daylight-saving rules."""
    from pfscope.spark_jobs.model.topology import load_topology

    tz = None
    if zone:
        try:
            tz = ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError):
            raise InputError(f"--timezone {zone!r}: no such time zone (e.g. Europe/Paris)") from None

    started = time.perf_counter()
    files = expand_log_paths(logs)
    table = load_replids(replids) if replids else None
    topo = load_topology(topology) if topology else None
    broken: list[dict[str, Any]] = []
    empty: list[str] = []

    def read(f: str) -> Iterable[Classified]:
        return classified_records(f, strict, default_offset_min, tz)

    reader: FileReader = read if kept is None else (lambda f: kept.classified(f, read))
    result = ingest_classified(
        _all_records(files, broken, empty, reader),
        replids=table,
        topology=topo,
        default_offset_min=default_offset_min,
        zone=tz,
        parts=parts_for,
    )
    check_some_file_read(broken, files)
    took = time.perf_counter() - started
    result.summary["status"] = "partial" if broken else "complete"
    result.summary["files_broken"] = broken
    result.summary["files_empty"] = empty
    result.summary["formats"] = {f: _format_of(f) for f in files}
    result.summary["seconds"] = round(took, 3)
    result.summary["records_per_second"] = round(result.summary["records_read"] / max(took, 1e-9))
    write_outputs(result, out)
    return result.summary


def check_some_file_read(broken: list[dict[str, Any]], files: Sequence[str]) -> None:
    """When no file at all could be read, that is the operator's to fix: nothing is written."""
    if broken and len(broken) == len(files) and not any(b["complete_records"] for b in broken):
        first = broken[0]
        more = f" (and {len(broken) - 1} more unreadable files)" if len(broken) > 1 else ""
        raise InputError(
            f"{first['file']}: {first['reason'].removeprefix('unreadable file: ')}{more}; "
            "no file could be read, nothing written"
        )


def _format_of(path: str) -> str:
    try:
        return sniff(path)
    except OSError:
        return "unknown"


def write_outputs(result: IngestResult, out: str | os.PathLike[str]) -> None:
    """Every file is written beside its place first, and only when all five (and the log by
    folder, ``event_files``) are complete are they renamed in: a full disk leaves what ``out``
    held, never a new log beside an old topology."""
    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    if result.written is None:  # the lines' texts and files, as ``derive_apart`` gives them
        lines = [line_text(r) for r in result.events]  # written as they are: no second copy of the log
        places: list[Place] = [placement(r) for r in result.events]
    else:
        lines, places = result.written.texts, result.written.places
    texts = {
        "ingest_rejects.jsonl": _jsonl(result.rejects),
        "ingest_errors.jsonl": _jsonl(result.errors),
        "topology.json": json.dumps(result.topology, indent=2, ensure_ascii=False) + "\n",
        "ingest_summary.json": json.dumps(result.summary, indent=2, ensure_ascii=False) + "\n",
    }
    partial = {name: d / (name + ".partial") for name in ["events.jsonl", *texts]}
    by_folder = d / (EVENTS_FOLDER + ".partial")
    discard(by_folder)
    try:
        with open(partial["events.jsonl"], "w", encoding="utf-8") as fh:
            fh.writelines(lines)
        for name, text in texts.items():
            partial[name].write_text(text, encoding="utf-8")
        write_placed(places, lines, by_folder)
    except BaseException:
        for tmp in partial.values():
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
        discard(by_folder)
        raise
    for name, tmp in partial.items():
        tmp.replace(d / name)
    swap_in(by_folder, d / EVENTS_FOLDER)


def _jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(map(line_text, rows))
