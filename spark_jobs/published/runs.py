"""Run folders and ``LATEST``: readers only ever see a complete run.

A run writes its tables under ``DIR/runs/<run_id>/<table>/`` and, only when every table is
complete, replaces ``DIR/LATEST`` (a small JSON object) in one rename. A failed or running job
leaves the previous run published and readable; its half-written folder is removed.

One job at a time per ``DIR`` (:func:`run_lock`, an ``flock`` on ``DIR/.lock``), so after a
publish :func:`prune_runs` may remove what no reader needs: published runs beyond the newest
``keep`` (never the published run nor the one before it, which a reader may still hold), and the
folders of runs that were killed before they published (a marker in each run folder says who
wrote it; a live writer's folder, or one newer than the current run, is never touched).

Local paths only for the pointer file; the tables themselves may go anywhere Spark writes.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import math
import os
import re
import secrets
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pfscope.spark_jobs.model.errors import ExitStatus, OperatorError

LATEST = "LATEST"
RUNS = "runs"
LOCK = ".lock"
#: written when a run starts (who writes it) and when it is published; both small JSON files
WRITER = "_pfscope_writer.json"
PUBLISHED = "_pfscope_published.json"
DEFAULT_KEEP = 5
RUN_ID = re.compile(r"\d{8}T\d{6}Z-[0-9a-f]{6}")


class PublishError(OperatorError, RuntimeError):
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
    writer = {"pid": os.getpid(), "host": socket.gethostname(), "started": datetime.now(UTC).isoformat()}
    (run.path / WRITER).write_text(json.dumps(writer) + "\n", encoding="utf-8")
    return run


def publish(run: Run, info: dict[str, Any]) -> dict[str, Any]:
    """Point ``LATEST`` at a complete run, atomically; the pointer names the run it replaces."""
    try:
        before = read_latest(run.out)
    except PublishError:  # a damaged pointer is replaced, not trusted
        before = None
    pointer = {"run_id": run.run_id, "path": run.rel, **info}
    if before and before.get("run_id") != run.run_id:
        pointer["previous_run_id"] = before["run_id"]
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    (run.path / PUBLISHED).write_text(
        json.dumps({"run_id": run.run_id, "published_at": stamp}) + "\n", encoding="utf-8"
    )
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


# --------------------------------------------------------------------------------------------
# one run at a time
# --------------------------------------------------------------------------------------------
class RunLocked(OperatorError):
    """Another run holds ``DIR/.lock``; one line for the operator. Not a usage error: a schedule
    tries again later (``ExitStatus.LOCKED``)."""

    exit_status = ExitStatus.LOCKED


@contextmanager
def run_lock(out: str | os.PathLike[str], wait: float | None = None) -> Iterator[Path]:
    """Hold ``DIR/.lock`` (``flock``, released by the kernel when the holder dies, even by SIGKILL).

    ``wait``: None or 0 fails at once with :class:`RunLocked`, a number of seconds waits that
    long, ``math.inf`` waits as long as it takes. A ``DIR`` this call created is removed again
    when nothing but the lock was put in it (a run refused before it started leaves no trace)."""
    root = Path(out)
    created = not root.exists()
    lock = root / LOCK
    deadline = time.monotonic() + (wait or 0)
    while True:
        try:
            root.mkdir(parents=True, exist_ok=True)
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise PublishError(f"{root}: cannot create the lock file: {e.strerror or e}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            if e.errno not in (errno.EAGAIN, errno.EACCES):
                raise PublishError(f"{lock}: cannot lock: {e.strerror or e}") from None
            if time.monotonic() >= deadline:
                waited = f" after waiting {wait:g} s" if wait else ""
                raise RunLocked(
                    f"another run holds {lock} ({_read_holder(lock)}){waited}; not starting "
                    "(--wait-lock waits for it)"
                ) from None
            time.sleep(min(0.5, max(0.01, deadline - time.monotonic())))
            continue
        try:  # the file may have been removed (see below) between our open and our lock: retry
            if os.stat(lock).st_ino == os.fstat(fd).st_ino:
                break
        except FileNotFoundError:
            pass
        os.close(fd)
    try:
        me = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": datetime.now(UTC).replace(microsecond=0).isoformat(),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(me) + "\n").encode(), 0)
        yield lock
    finally:
        if (
            created
            and sorted(os.listdir(root)) in ([LOCK], [LOCK, RUNS])
            and not any((root / RUNS).glob("*"))
        ):
            with contextlib.suppress(OSError):
                lock.unlink()  # while still held: a waiter that opened it sees the inode change
                shutil.rmtree(root)
        os.close(fd)  # releases the lock


def _read_holder(path: Path) -> str:
    try:
        h = json.loads(path.read_text(encoding="utf-8"))
        return f"pid {h['pid']} on {h['host']} since {h['since']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "holder unknown"


# --------------------------------------------------------------------------------------------
# retention
# --------------------------------------------------------------------------------------------
def check_keep(keep: int) -> int:
    """How many published runs retention keeps: 0 (every run) or more."""
    if keep < 0:
        raise PublishError(f"keep {keep}: need 0 (keep every run) or more")
    return keep


@dataclass(frozen=True)
class RunFolder:
    """What the retention needs to know of one folder under ``DIR/runs``."""

    run_id: str
    published: bool
    writer_host: str | None = None
    writer_alive: bool = False  # its writer is a live process on this host
    published_at: str = ""  # %Y%m%dT%H%M%S.%fZ: orders runs published within the same second

    @property
    def order(self) -> str:
        return self.published_at or self.run_id


@dataclass
class Pruning:
    old: list[str] = field(default_factory=list)  # published runs beyond keep
    leftovers: list[str] = field(default_factory=list)  # killed before they published
    spared: list[str] = field(default_factory=list)  # unpublished, but maybe still being written
    failed: list[str] = field(default_factory=list)  # could not be removed (one line each)


def plan_pruning(runs: Sequence[RunFolder], keep: int, current: str, previous: str | None) -> Pruning:
    """Which folders to remove after ``current`` was published (pure: no I/O).

    ``keep`` counts published runs, newest first; the current run and ``previous`` (the run
    ``LATEST`` pointed at before, which a reader may still hold) always stay; 0 keeps them all.
    An unpublished folder goes only when it was not started after the current run (to the second)
    and no live process on this host is writing it; one written from another host is spared (we cannot ask it)."""
    plan = Pruning()
    published = [
        r.run_id for r in sorted((r for r in runs if r.published), key=lambda r: r.order, reverse=True)
    ]
    if keep:
        kept = set(published[:keep]) | {current}
        if previous:
            kept.add(previous)
        plan.old = [r for r in reversed(published) if r not in kept]  # oldest first
    for r in sorted(runs, key=lambda r: r.run_id):
        if r.published or r.run_id in (current, previous):  # the previous run stays, whatever its markers
            continue
        if (
            _started_second(r.run_id) > _started_second(current)
            or r.writer_alive
            or (r.writer_host and r.writer_host != socket.gethostname())
        ):
            plan.spared.append(r.run_id)
        else:
            plan.leftovers.append(r.run_id)
    return plan


def _started_second(run_id: str) -> str:
    return run_id.partition("-")[0]


def survey_runs(out: str | os.PathLike[str]) -> list[RunFolder]:
    """Every run folder under ``DIR/runs``, published or not (a folder from before the markers
    counts as published when every table Spark wrote is complete)."""
    from pfscope.spark_jobs.model.tables import TABLES

    runs_dir = Path(out) / RUNS
    found = []
    try:
        entries = sorted(runs_dir.iterdir())
    except FileNotFoundError:
        return []
    host = socket.gethostname()
    for d in entries:
        if not d.is_dir() or not RUN_ID.fullmatch(d.name):
            continue
        writer = _json_or_none(d / WRITER)
        marker = _json_or_none(d / PUBLISHED)
        if marker is not None or (d / PUBLISHED).exists():
            found.append(RunFolder(d.name, True, published_at=str((marker or {}).get("published_at") or "")))
        elif writer is None:  # written before the markers: complete means published
            complete = all((d / t / "_SUCCESS").exists() for t in TABLES)
            found.append(RunFolder(d.name, complete))
        else:
            w_host = str(writer.get("host") or "") or None
            alive = w_host == host and _pid_alive(writer.get("pid"))
            found.append(RunFolder(d.name, False, w_host, alive))
    return found


def prune_runs(out: str | os.PathLike[str], keep: int, pointer: Mapping[str, object]) -> Pruning:
    """After ``pointer``'s run was published (under :func:`run_lock`): remove what
    :func:`plan_pruning` says, each folder renamed aside first so no reader ever sees half of one."""
    root = Path(out)
    plan = plan_pruning(
        survey_runs(root),
        keep,
        str(pointer["run_id"]),
        str(pointer["previous_run_id"]) if pointer.get("previous_run_id") else None,
    )
    for stale in (root / RUNS).glob(".removing-*"):  # a removal itself interrupted earlier
        shutil.rmtree(stale, ignore_errors=True)
    failed: set[str] = set()
    for run_id in [*plan.old, *plan.leftovers]:
        src = root / RUNS / run_id
        trash = root / RUNS / f".removing-{run_id}"
        try:
            os.replace(src, trash)
            shutil.rmtree(trash)
        except OSError as e:
            failed.add(run_id)
            plan.failed.append(f"{src}: {e.strerror or e}")
    plan.old = [r for r in plan.old if r not in failed]
    plan.leftovers = [r for r in plan.leftovers if r not in failed]
    return plan


def _json_or_none(path: Path) -> dict[str, object] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _pid_alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def wait_seconds(flag: float | None) -> float | None:
    """``--wait-lock`` alone (-1) waits as long as it takes; a number waits that many seconds."""
    if flag is None:
        return None
    return math.inf if flag < 0 else flag
