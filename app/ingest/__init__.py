"""``pfscope ingest``: Exchange's own replication events into pfscope's event log.

``formats`` reads exported records (XML, CSV, EVTX), ``parse`` reads one description,
``identity`` maps each server's REPLIDs to stores, ``build`` pairs sends with receives and
derives what the logs do not print; ``run_ingest`` is the only function here that writes.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .build import IngestResult, ingest_records
from .formats import InputError, RawRecord, expand_log_paths, read_records, sniff
from .identity import ReplidFileError, load_replids

__all__ = ["IngestResult", "InputError", "ReplidFileError", "ingest_records", "run_ingest"]


def _all_records(files: Sequence[str]) -> Iterator[RawRecord]:
    for f in files:
        yield from read_records(f)


def run_ingest(
    logs: Sequence[str],
    out: str | os.PathLike[str],
    *,
    replids: str | None = None,
    topology: str | None = None,
    default_offset_min: int = 0,
    zone: str | None = None,
) -> dict[str, Any]:
    """Read every export under ``logs``, write the five outputs into ``out``; the summary.

    Raises ``InputError``, ``ReplidFileError`` or ``TopologyError`` for what the operator must fix.
    ``zone`` (an IANA name) reads times that carry no offset with its daylight-saving rules."""
    from spark_jobs.model.topology import load_topology

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
    result = ingest_records(_all_records(files), replids=table, topology=topo,
                            default_offset_min=default_offset_min, zone=tz)
    took = time.perf_counter() - started
    result.summary["formats"] = {f: sniff(f) for f in files}
    result.summary["seconds"] = round(took, 3)
    result.summary["records_per_second"] = round(result.summary["records_read"] / max(took, 1e-9))
    write_outputs(result, out)
    return result.summary


def write_outputs(result: IngestResult, out: str | os.PathLike[str]) -> None:
    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    _jsonl(d / "events.jsonl", result.events)
    _jsonl(d / "ingest_rejects.jsonl", result.rejects)
    _jsonl(d / "ingest_errors.jsonl", result.errors)
    _write(d / "topology.json", json.dumps(result.topology, indent=2, ensure_ascii=False) + "\n")
    _write(d / "ingest_summary.json", json.dumps(result.summary, indent=2, ensure_ascii=False) + "\n")


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    _write(path, "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in rows))


def _write(path: Path, text: str) -> None:
    """Written beside, then renamed: a reader never sees half a file."""
    tmp = path.with_name(path.name + ".partial")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
