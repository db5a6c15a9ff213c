"""What ingest writes into ``--out``: its five outputs and the log by block and folder, written
beside their place and renamed in only when all are complete, then the state (``incremental``);
and whether the outputs there are those a run would write again (nothing new)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pfscope.spark_jobs.exchange.event_files import EVENTS_FOLDER, discard, swap_in
from pfscope.spark_jobs.ingest import incremental

#: what ingest writes into ``--out`` (and ``EVENTS_FOLDER``, the log by block and folder)
OUTPUTS = (
    "events.jsonl",
    "ingest_rejects.jsonl",
    "ingest_errors.jsonl",
    "topology.json",
    "ingest_summary.json",
)


def built_as_they_are(
    out: str, state: incremental.State, files: list[str], keys: dict[str, str], inputs: str
) -> bool:
    """The share is the one the outputs were built from: every file read before and none new or
    gone, the same ``--replids``, ``--topology`` and ``--strict``, and every output there."""
    d = Path(out)
    return (
        state.built_from == inputs
        and set(state.files) == {keys[f] for f in files}
        and all((d / n).is_file() for n in OUTPUTS)
        and (d / EVENTS_FOLDER).is_dir()
    )


def write_outputs(
    out: str,
    built: Any,
    write_events: Callable[[Path, Path], None],
    summary: dict[str, Any],
    classified: Any,
    options: dict[str, Any],
    inputs: str,
    files: list[dict[str, Any]],
    build: dict[str, Any] | None = None,
) -> None:
    """The five outputs (and the log by block and folder, ``event_files``: ``write_events`` writes
    both) beside their place, then the state; renamed in only when all are complete."""
    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    partial = {n: d / (n + ".partial") for n in OUTPUTS}
    by_folder = d / (EVENTS_FOLDER + ".partial")
    discard(by_folder)
    state_tmp = None
    try:
        write_events(partial["events.jsonl"], by_folder)
        with open(partial["ingest_rejects.jsonl"], "w", encoding="utf-8") as fh:
            fh.writelines(_line(r) for r in classified.rejects())
            fh.writelines(_line(r) for r in built.rejects)
        with open(partial["ingest_errors.jsonl"], "w", encoding="utf-8") as fh:
            for text, record, server in classified.errors():
                row = json.loads(text)
                row["store"] = built.own.get(server, server)
                row["record"] = record
                fh.write(_line(row))
        partial["topology.json"].write_text(
            json.dumps(built.topology, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        partial["ingest_summary.json"].write_text(
            json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        state_tmp = incremental.save_partial(out, options, files, inputs, build)
    except BaseException:
        for tmp in [*partial.values(), *([state_tmp] if state_tmp else [])]:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
        discard(by_folder)
        raise
    for name, tmp in partial.items():
        tmp.replace(d / name)
    swap_in(by_folder, d / EVENTS_FOLDER)
    incremental.commit(state_tmp)


def _line(row: dict[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n"
