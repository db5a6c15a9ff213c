"""``pfscope refresh``: the whole chain (ingest the share, compute, publish) on one command.

An operator runs one thing on a schedule: ``ingest --logs SHARE --out DIR/ingested``, then
``compute`` of what it wrote into ``DIR/published`` (the folder ``pfscope serve --data DIR``
serves). Both run under one lock, ``DIR/.lock``, so two runs never overlap; each step is a
``pfscope`` process of its own (its JVM and memory are given back between runs, and a crash of
one run cannot poison the next of a long-running ``--every``). A run prints one line: what
ingest read, what compute folded (incremental or full, and why), the run published, and the
exit status, which is the worse of the two steps' (:func:`worse`). Both steps write their outputs
whole or not at all, so a failed run leaves the last good run served.

``--every 15m`` keeps running in the foreground (a systemd service without a timer): runs are due
on a clock (start, start + 15m, ...: a run that overruns skips the ticks it missed, it never
drifts), and SIGTERM or SIGINT stops it between runs, or stops the running step (its outputs
are never half-written) and exits.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from pfscope.app.settings import PUBLISHED_RUNS
from pfscope.spark_jobs.exchange.event_files import EVENTS_FOLDER
from pfscope.spark_jobs.model.errors import ExitStatus, OperatorError
from pfscope.spark_jobs.published.runs import RunLocked, run_lock

INGESTED = "ingested"
PUBLISHED = PUBLISHED_RUNS
#: the last run's record, beside DIR/published: the dashboard's navbar and /metrics read it
RECORD = "refresh.json"

#: exit statuses from best to worst: done, partial (ingest read some files only in part), another
#: run holds a lock, an operator's error, a crash. Any other status (a step killed by a signal)
#: counts as a crash.
_ORDER = (ExitStatus.OK, ExitStatus.PARTIAL, ExitStatus.LOCKED, ExitStatus.USAGE, ExitStatus.CRASH)

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def worse(a: int, b: int) -> int:
    """The worse of two exit statuses (``_ORDER``; an unknown one is a crash)."""

    def rank(s: int) -> int:
        return _ORDER.index(ExitStatus(s)) if s in set(_ORDER) else len(_ORDER) - 1

    return a if rank(a) >= rank(b) else b


def parse_every(text: str) -> float:
    """``--every``: a number of seconds, minutes, hours or days (``90s``, ``15m``, ``1h``, ``1d``)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd])\s*", text)
    if not m or float(m.group(1)) <= 0:
        raise OperatorError(f"--every {text}: give a length such as 90s, 15m, 1h or 1d")
    return float(m.group(1)) * _UNITS[m.group(2)]


def next_due(start: float, every: float, now: float) -> float:
    """The first tick of the clock ``start + k * every`` after ``now``: a run that overran skips the
    ticks it missed instead of starting late ones back to back (and never drifts)."""
    if now < start:
        return start
    return start + (int((now - start) // every) + 1) * every


@dataclass(frozen=True)
class ChainSettings:
    """One refresh: the share, the folder, and what each step is given beyond its paths."""

    logs: tuple[str, ...]
    out: Path
    ingest: tuple[str, ...] = ()  # ingest's own flags (--replids, --topology, --timezone, ...)
    compute: tuple[str, ...] = ()  # compute's own flags (--keep, ...)
    shared: tuple[str, ...] = ()  # flags both steps take (--master, --conf, --full)
    wait_lock: float | None = None

    @property
    def ingested(self) -> Path:
        return self.out / INGESTED

    @property
    def published(self) -> Path:
        return self.out / PUBLISHED


@dataclass(frozen=True)
class Step:
    """A step's exit status and what it printed."""

    status: int
    out: str
    err: str
    seconds: float = 0.0

    def first(self, *prefixes: str) -> str:
        """Its first line of stdout that starts with one of ``prefixes`` ('' when none)."""
        return next((ln for ln in self.out.splitlines() if ln.startswith(prefixes)), "")

    def why(self) -> str:
        """Its last line on stderr: what an operator error or a crash said."""
        lines = [ln.strip() for ln in self.err.splitlines() if ln.strip()]
        return lines[-1] if lines else f"exit status {self.status}"


#: the command that runs a step (``python -m pfscope.app.cli`` of this interpreter)
PFSCOPE = (sys.executable, "-m", "pfscope.app.cli")


class Runner:
    """Runs the steps as child processes; :meth:`stop` ends the one running (SIGTERM) and any
    :meth:`wait`.

    :meth:`stop` is called from a signal handler, which runs on the main thread between any two
    of its bytecodes. So it takes no lock the main thread may hold: a ``threading.Event`` would
    deadlock when the signal lands inside its own ``wait`` (which holds the Event's lock for a
    moment), and the chain would ignore SIGTERM. It sets a flag and writes a byte to a pipe that
    :meth:`wait` selects on (the self-pipe trick). A handler written in Python runs only once the
    select returns, so a signal that lands as the select starts would wait for its time-out (an
    hour, with ``--every 1h``): under :func:`stopped_by_signals` the interpreter's own C handler
    writes to the pipe as the signal lands (``signal.set_wakeup_fd``)."""

    def __init__(self) -> None:
        self._child: subprocess.Popen[str] | None = None
        self._lock = threading.RLock()  # reentrant: the handler may run while the main thread holds it
        self._stopped = False
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)

    @property
    def stopped(self) -> bool:
        return self._stopped

    @property
    def wake_fd(self) -> int:
        """The pipe's end a signal's byte goes into (``stopped_by_signals``)."""
        return self._wake_w

    def __call__(self, args: Sequence[str]) -> Step:
        started = time.monotonic()
        with self._lock:
            if self._stopped:
                return Step(ExitStatus.CRASH, "", "stopped by a signal before it started")
            self._child = subprocess.Popen(
                [*PFSCOPE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            if self._stopped:  # the signal came while it started
                self._child.terminate()
        out, err = self._child.communicate()
        with self._lock:
            status, self._child = self._child.returncode, None
        if err:
            sys.stderr.write(err)  # warnings and errors, as the step said them
            sys.stderr.flush()
        return Step(status, out, err, time.monotonic() - started)

    def stop(self) -> None:
        self._stopped = True
        with contextlib.suppress(OSError):  # the pipe is full (stopped many times over) or closed
            os.write(self._wake_w, b"!")
        with self._lock:
            if self._child is not None and self._child.poll() is None:
                self._child.terminate()

    def wait(self, seconds: float) -> bool:
        """Waits ``seconds``, or less when stopped (before or during the wait); True when stopped.
        A byte in the pipe ends the select; the loop then sees the flag, the Python handler having
        run by its next turn."""
        end = time.monotonic() + max(0.0, seconds)
        while not self._stopped:  # a stop after this check has written the byte select sees
            left = end - time.monotonic()
            if left <= 0:
                break
            ready, _, _ = select.select([self._wake_r], [], [], left)
            if ready:
                with contextlib.suppress(BlockingIOError):
                    os.read(self._wake_r, 512)
        return self._stopped

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *_exc: object) -> None:
        for fd in (self._wake_r, self._wake_w):
            os.close(fd)


def write_record(out: Path, record: dict[str, Any]) -> None:
    """``DIR/refresh.json``, whole or not at all (a file beside it, renamed in)."""
    tmp = out / f".{RECORD}.{os.getpid()}"
    tmp.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    tmp.replace(out / RECORD)


def run_once(s: ChainSettings, step: Callable[[Sequence[str]], Step]) -> tuple[int, str]:
    """One run under ``DIR/.lock``: ingest, then compute when ingest wrote something to compute
    from (status 0, or 3: partial); the exit status and the run's line, both kept in
    ``DIR/refresh.json`` with each step's seconds."""
    started = time.monotonic()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    steps: dict[str, float] = {}
    try:
        with run_lock(s.out, wait=s.wait_lock):
            ingest = step(["ingest", "--logs", *s.logs, "--out", str(s.ingested), *s.ingest, *s.shared])
            steps["ingest"] = ingest.seconds
            parts = [f"ingest: {_ingest_said(ingest)}"]
            status = ingest.status
            if ingest.status in (ExitStatus.OK, ExitStatus.PARTIAL):
                compute = step(
                    [
                        "compute",
                        "--topology",
                        str(s.ingested / "topology.json"),
                        "--events",
                        str(s.ingested / EVENTS_FOLDER),  # by folder: a refresh reads what changed
                        "--out",
                        str(s.published),
                        *s.compute,
                        *s.shared,
                    ]
                )
                steps["compute"] = compute.seconds
                parts.append(f"compute: {_compute_said(compute)}")
                status = worse(status, compute.status)
            else:
                parts.append("compute: not run (nothing new to compute from; the last run stays published)")
            took = time.monotonic() - started
            line = f"refresh {stamp}: {'; '.join(parts)}; {took:.1f} s, status {status}"
            record = {"at": stamp, "seconds": round(took, 3), "steps": steps, "status": status, "line": line}
            write_record(s.out, record)  # under the lock: two runs never write it at once
    except RunLocked as e:
        return e.exit_status, f"refresh {stamp}: not started: {e}"
    return status, line


def _ingest_said(st: Step) -> str:
    if st.status not in (ExitStatus.OK, ExitStatus.PARTIAL):
        return f"failed (status {st.status}): {st.why()}"
    # on Spark its first line says what it read again; the reference reads the whole share
    mode = st.first("incremental:", "full ingest:")
    read = st.first("read ").split(" -> ")[0]
    partial = " (partial: some files could not be read whole)" if st.status == ExitStatus.PARTIAL else ""
    return (mode or read or "done") + partial + _took(st)


def _compute_said(st: Step) -> str:
    if st.status != ExitStatus.OK:
        return f"failed (status {st.status}): {st.why()}"
    how = st.first("incremental:", "full:")
    published = st.first("published run ").split(": ")[0]
    return (", ".join(p for p in (how, published) if p) or "done") + _took(st)


def _took(st: Step) -> str:
    return f" ({st.seconds:.1f} s)" if st.seconds else ""


def run_every(
    s: ChainSettings, every: float, runner: Runner, say: Callable[[str], None], clock: Callable[[], float]
) -> int:
    """Runs on the clock ``start + k * every`` until :meth:`Runner.stop`; 0 when stopped between
    runs, else the interrupted run's status."""
    start = clock()
    while not runner.stopped:
        status, line = run_once(s, runner)
        interrupted = runner.stopped  # the signal came during the run: its step was stopped
        say(line)
        if interrupted:
            say(f"refresh: stopped during a run (status {status}); the last good run stays published")
            return status
        due = next_due(start, every, clock())
        _add_next(s.out, time.time() + max(0.0, due - clock()), every)
        if runner.wait(due - clock()):
            break
    say("refresh: stopped between runs")
    return ExitStatus.OK


def _add_next(out: Path, at: float, every: float) -> None:
    """The record gains when the next run is due (``--every``)."""
    try:
        record = json.loads((out / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    record["every_s"] = every
    record["next_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))
    write_record(out, record)


def read_record(runs: Path) -> dict[str, Any] | None:
    """The last refresh's record of a folder of runs that ``pfscope refresh`` publishes into
    (``DIR/published``'s ``DIR/refresh.json``), or None."""
    if runs.name != PUBLISHED:
        return None
    try:
        record = json.loads((runs.parent / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def refresh_text(record: dict[str, Any]) -> str:
    """``refreshed 10:15:02Z in 42 s (ingest 20 s, compute 21 s); next 10:30:00Z``: the navbar's
    words for the last refresh (its status when not 0)."""
    steps = record.get("steps") or {}
    parts = ", ".join(f"{k} {float(v):.0f} s" for k, v in steps.items())
    at = str(record.get("at", ""))[11:]
    text = f"refreshed {at} in {float(record.get('seconds', 0)):.0f} s" + (f" ({parts})" if parts else "")
    if record.get("status"):
        text += f", status {record['status']}"
    if record.get("next_at"):
        text += f"; next {str(record['next_at'])[11:]}"
    return text


def refresh_command(s: ChainSettings, every: float | None) -> int:
    """``pfscope refresh``: one run, or (``every``) runs on a clock until SIGTERM or SIGINT."""
    with Runner() as runner:
        if every is None:
            status, line = run_once(s, runner)
            _say(line)
            return status

        with stopped_by_signals(runner):
            _say(
                f"refresh: every {_length(every)} into {s.out} (pid {os.getpid()}; SIGTERM or Ctrl-C stops it)"
            )
            return run_every(s, every, runner, _say, time.monotonic)


@contextlib.contextmanager
def stopped_by_signals(runner: Runner) -> Iterator[None]:
    """SIGTERM and SIGINT stop ``runner`` (from the main thread): its step, or its wait at once,
    the interpreter writing to its pipe as each signal lands; the handlers before, after."""

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        runner.stop()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    woke = signal.set_wakeup_fd(runner.wake_fd, warn_on_full_buffer=False)
    try:
        yield
    finally:
        signal.set_wakeup_fd(woke)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _say(line: str) -> None:
    print(line, flush=True)


def _length(seconds: float) -> str:
    for unit, n in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= n and seconds % n == 0:
            return f"{seconds / n:g}{unit}"
    return f"{seconds:g}s"
