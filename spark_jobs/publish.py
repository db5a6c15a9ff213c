"""Run folders and ``LATEST``: readers only ever see a complete run.

A run writes its tables under ``DIR/runs/<run_id>/<table>/`` and, only when every table is
complete, replaces ``DIR/LATEST`` (a small JSON object) in one rename. A failed or running job
leaves the previous run published and readable; its half-written folder is removed.

Local paths only for the pointer file; the tables themselves may go anywhere Spark writes.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

LATEST = "LATEST"
RUNS = "runs"


class PublishError(RuntimeError):
    """The output folder cannot be used; one line for the operator."""


def new_run_id(now: datetime | None = None) -> str:
    """Sortable by time, unique even for two runs in the same second."""
    now = now or datetime.now(UTC)
    return now.strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


@dataclass(frozen=True)
class Run:
    out: Path
    run_id: str

    @property
    def rel(self) -> str:
        return f"{RUNS}/{self.run_id}"

    @property
    def path(self) -> Path:
        return self.out / RUNS / self.run_id

    def table_path(self, table: str) -> str:
        return str(self.path / table)


def start_run(out: str | os.PathLike[str]) -> Run:
    root = Path(out)
    try:
        (root / RUNS).mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise PublishError(f"{root}: cannot create the output folder: {e.strerror or e}") from None
    if not os.access(root, os.W_OK):
        raise PublishError(f"{root}: the output folder is not writable")
    run = Run(root, new_run_id())
    run.path.mkdir()
    return run


def publish(run: Run, info: dict[str, Any]) -> dict[str, Any]:
    """Point ``LATEST`` at a complete run, atomically."""
    pointer = {"run_id": run.run_id, "path": run.rel, **info}
    fd, tmp = tempfile.mkstemp(prefix=".LATEST.", dir=run.out)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(pointer, fh, indent=2, default=str)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, run.out / LATEST)
    return pointer


def abandon(run: Run) -> None:
    """Remove a run that failed before it was published (the previous one stays)."""
    shutil.rmtree(run.path, ignore_errors=True)


def read_latest(out: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The published run's pointer, or None when nothing was published yet."""
    p = Path(out) / LATEST
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise PublishError(f"{p}: unreadable: {e}") from None
    if not isinstance(data, dict) or "run_id" not in data or "path" not in data:
        raise PublishError(f"{p}: not a pfscope LATEST pointer")
    return data
