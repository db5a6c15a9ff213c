"""``pfscope refresh`` as an operator runs it, a real process each (no JVM: every step here
ends before Spark starts): the exit status is the worse of the two steps', a failed step is
said in the run's one line, one lock keeps runs from overlapping, ``--every`` runs on a clock and
stops on SIGTERM or SIGINT. The chain's tables, hour by hour, are ``tests/spark/test_chain.py``'s."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import pytest

from pfscope.app.chain import (
    ChainSettings,
    Runner,
    Step,
    next_due,
    parse_every,
    read_record,
    refresh_text,
    run_every,
    worse,
)
from pfscope.app.components import navbar
from pfscope.app.metrics import CHAIN_METRIC_NAMES, exposition
from pfscope.app.settings import runs_folder
from pfscope.spark_jobs.model.errors import OperatorError
from pfscope.spark_jobs.published.runs import run_lock
from tests.unit.exchange import three_servers as fx
from tests.unit.exchange.exports import write_wevtutil_xml

PFSCOPE = [sys.executable, "-m", "pfscope.app.cli"]
#: a bound on each wait below, never a timing being tested
PATIENCE = 120


def refresh(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PFSCOPE, "refresh", *args], capture_output=True, text=True, timeout=PATIENCE, check=False
    )


def test_the_worse_status_and_the_clock() -> None:
    assert worse(0, 3) == 3 and worse(3, 0) == 3  # ingest partial, compute done: partial
    assert worse(3, 2) == 2 and worse(75, 2) == 2 and worse(3, 75) == 75
    assert worse(2, 1) == 1 and worse(0, -15) == -15  # a step killed by a signal: a crash's rank
    assert [parse_every(t) for t in ("90s", "15m", "1h", "1.5h", "1d")] == [90, 900, 3600, 5400, 86400]
    for bad in ("15", "0m", "-1h", "1w"):
        with pytest.raises(OperatorError):
            parse_every(bad)
    # ticks at 100, 160, 220, ...: a run that ends within its minute waits for the next tick; one
    # that overran two ticks skips them (no runs back to back, no drift)
    assert next_due(100, 60, 100) == 160
    assert next_due(100, 60, 159.9) == 160
    assert next_due(100, 60, 160) == 220
    assert next_due(100, 60, 275) == 280


def test_serve_data_names_the_chains_folder(tmp_path: Path) -> None:
    """``serve --data DIR`` (and ``report``, ``plan``) with DIR a ``refresh --out``: its runs."""
    (tmp_path / "published").mkdir()
    assert runs_folder(tmp_path) == tmp_path / "published"
    (tmp_path / "LATEST").write_text("{}")  # a folder of runs itself (compute --out)
    assert runs_folder(tmp_path) == tmp_path
    assert runs_folder(tmp_path / "nothing") == tmp_path / "nothing"


def test_a_failing_ingest_is_the_runs_status_and_nothing_is_computed(tmp_path: Path) -> None:
    done = refresh("--logs", str(tmp_path / "no-share"), "--out", str(tmp_path / "chain"))
    assert done.returncode == 2, done
    (line,) = done.stdout.splitlines()
    assert line.startswith("refresh ") and line.endswith(", status 2"), line
    assert "ingest: failed (status 2): pfscope ingest: " in line and "no-share" in line, line
    assert "compute: not run (nothing new to compute from; the last run stays published)" in line
    assert "pfscope ingest: " in done.stderr  # the step's own words, on stderr as it said them
    assert not (tmp_path / "chain" / "published").exists()


def test_a_failing_compute_is_the_runs_status(tmp_path: Path) -> None:
    """Ingest done (0), compute refused (2, before Spark starts): the run's status is 2."""
    share = tmp_path / "share"
    share.mkdir()
    write_wevtutil_xml(fx.EX07_EVENTS, share / "ex07.xml")
    (tmp_path / "replids.csv").write_text(fx.REPLIDS_CSV, encoding="utf-8")
    out = tmp_path / "chain"
    done = refresh(
        "--logs", str(share), "--out", str(out), "--replids", str(tmp_path / "replids.csv"), "--keep", "-1"
    )
    assert done.returncode == 2, done
    (line,) = done.stdout.splitlines()
    assert ": ingest: full ingest: no records kept by an earlier run in this process (" in line, line
    assert "compute: failed (status 2): pfscope compute: keep -1" in line, line
    assert (out / "ingested" / "events.jsonl").is_file()


def test_the_lock_refuses_an_overlapping_run(tmp_path: Path) -> None:
    out = tmp_path / "chain"
    with run_lock(out):
        done = refresh("--logs", str(tmp_path), "--out", str(out))
    assert done.returncode == 75, done
    (line,) = done.stdout.splitlines()
    assert f"not started: another run holds {out / '.lock'} (pid {os.getpid()} on " in line, line
    assert not (out / "ingested").exists()


def _line(proc: subprocess.Popen[str]) -> str:
    """The next line the process prints (waiting for it, within ``PATIENCE``)."""
    assert proc.stdout is not None
    deadline = time.monotonic() + PATIENCE
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], deadline - time.monotonic())
        if ready:
            return proc.stdout.readline().rstrip("\n")
    raise AssertionError("no line within the patience")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_every_runs_on_a_clock_and_stops_on_a_signal(tmp_path: Path, sig: signal.Signals) -> None:
    """The first run at once (its ingest fails at once: a share not there yet), then a wait for
    the next tick, an hour away; the signal ends the wait, and the command exits 0."""
    proc = subprocess.Popen(
        [
            *PFSCOPE,
            "refresh",
            "--logs",
            str(tmp_path / "no-share"),
            "--out",
            str(tmp_path / "c"),
            "--every",
            "1h",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert _line(proc).startswith(f"refresh: every 1h into {tmp_path / 'c'} (pid {proc.pid}; ")
        first = _line(proc)
        assert first.startswith("refresh ") and first.endswith(", status 2"), first
        proc.send_signal(sig)
        assert proc.wait(timeout=PATIENCE) == 0
        assert proc.stdout is not None
        assert proc.stdout.read().splitlines() == ["refresh: stopped between runs"]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


#: a signal at a random moment of the runner's wait, again and again, in a process of its own (a
#: deadlock fails the test at ``PATIENCE`` instead of hanging the suite)
_SIGNAL_AT_ANY_MOMENT = """
import random, signal, sys
from pfscope.app.chain import Runner
runner = None
signal.signal(signal.SIGALRM, lambda _s, _f: runner.stop())
for i in range(int(sys.argv[1])):
    with Runner() as runner:
        signal.setitimer(signal.ITIMER_REAL, random.uniform(1e-6, 3e-4))
        while not runner.wait(0.001):
            pass
print("stopped", i + 1)
"""


def test_a_signal_at_any_moment_of_the_wait_stops_it() -> None:
    """The signal handler's stop takes no lock the waiting thread holds. With a
    ``threading.Event`` (set by the handler, waited on by the loop) this deadlocked within a few
    dozen signals, when one landed inside ``Event.wait`` while it held the Event's lock: a
    ``--every`` chain that ignored SIGTERM."""
    done = subprocess.run(
        [sys.executable, "-c", _SIGNAL_AT_ANY_MOMENT, "3000"],
        capture_output=True,
        text=True,
        timeout=PATIENCE,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, "stopped 3000\n"), done


#: the signal lands as the wait's select blocks, on another thread (as one can on the only thread,
#: between the select's start and its system call): the interpreter's C handler runs, and the
#: select would not end before its time-out but for ``stopped_by_signals``
_SIGNAL_AS_THE_SELECT_BLOCKS = """
import os, signal, threading
from pfscope.app.chain import Runner, stopped_by_signals

main = threading.get_native_id()

def in_select():
    task = f"/proc/self/task/{main}"
    with open(f"{task}/wchan") as w, open(f"{task}/syscall") as c:
        where, call = w.read(), c.read().split()[0]
    return "poll_schedule_timeout" in where or "select" in where or call in ("23", "270", "72")

def signal_it():
    while not in_select():
        os.sched_yield()
    signal.pthread_kill(threading.get_ident(), signal.SIGTERM)

with Runner() as runner, stopped_by_signals(runner):
    threading.Thread(target=signal_it, daemon=True).start()
    print("stopped" if runner.wait(3600) else "timed out")
"""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc/<pid>/task")
def test_a_signal_as_the_select_blocks_ends_the_wait() -> None:
    """``refresh --every`` once took SIGINT during its hour's wait and kept waiting: the signal
    landed as the select started, and the handler written in Python runs only after the select
    returns. The interpreter's C handler now writes to the runner's pipe (``set_wakeup_fd``)."""
    done = subprocess.run(
        [sys.executable, "-c", _SIGNAL_AS_THE_SELECT_BLOCKS],
        capture_output=True,
        text=True,
        timeout=PATIENCE,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, "stopped\n"), done


class _Steps(Runner):
    """Each step done at once (status 0), the clock moved on by ``took`` seconds per step and by
    each wait; stopped after ``waits`` waits, or with ``stop_in``: the signal comes during that
    step (its status then 143, as SIGTERM's)."""

    def __init__(self, clock: list[float], took: float, waits: int, stop_in: int | None = None) -> None:
        super().__init__()
        self.clock, self.took, self.waits, self.stop_in, self.calls = clock, took, waits, stop_in, 0
        self.timeouts: list[float] = []

    def __call__(self, args: Sequence[str]) -> Step:
        self.calls += 1
        self.clock[0] += self.took
        if self.calls == self.stop_in:
            self.stop()
            return Step(143, "", "terminated")
        return Step(0, "", "")

    def wait(self, seconds: float) -> bool:
        self.timeouts.append(seconds)
        if len(self.timeouts) >= self.waits:
            self.stop()
        else:
            self.clock[0] += seconds
        return self.stopped


def test_every_waits_for_the_next_tick_and_a_signal_during_a_run_ends_it(tmp_path: Path) -> None:
    s = ChainSettings((str(tmp_path),), tmp_path / "c")
    said: list[str] = []
    clock = [1000.0]
    # runs of 100 s (two steps of 50) every 900 s: the waits are 800 s, to ticks 1900 and 2800
    with _Steps(clock, 50, waits=2) as steps:
        assert run_every(s, 900, steps, said.append, lambda: clock[0]) == 0
    assert steps.timeouts == [800, 800] and steps.calls == 4
    assert said[-1] == "refresh: stopped between runs"
    # a run that overran a tick (1,000 s of 900): the next one at the tick after, not at once
    clock = [1000.0]
    with _Steps(clock, 500, waits=1) as steps:
        run_every(s, 900, steps, said.append, lambda: clock[0])
    assert steps.timeouts == [800]
    # the signal during compute: that run's status, said so, and no wait
    clock = [1000.0]
    said.clear()
    with _Steps(clock, 50, waits=9, stop_in=2) as steps:
        assert run_every(s, 900, steps, said.append, lambda: clock[0]) == 143
    assert steps.timeouts == []
    assert said[-1] == "refresh: stopped during a run (status 143); the last good run stays published"
    assert "compute: failed (status 143): terminated" in said[0], said


def test_each_run_is_recorded_beside_the_runs_it_publishes(tmp_path: Path) -> None:
    """``DIR/refresh.json``: the run's line, status and steps' seconds, and with ``--every`` when
    the next run is due; what the navbar and /metrics read of a folder ``serve --data DIR`` serves."""
    s = ChainSettings((str(tmp_path),), tmp_path / "c")
    said: list[str] = []
    clock = [1000.0]
    with _Steps(clock, 50, waits=1) as steps:
        run_every(s, 900, steps, said.append, lambda: clock[0])
    record = read_record(tmp_path / "c" / "published")
    assert record is not None and record["line"] == said[0] and record["status"] == 0
    assert record["steps"] == {"ingest": 0.0, "compute": 0.0} and record["every_s"] == 900
    started, due = (datetime.fromisoformat(record[k].replace("Z", "+00:00")) for k in ("at", "next_at"))
    assert abs((due - started).total_seconds() - 800) <= 5  # the tick: 900 s after the first run began
    assert refresh_text(record).startswith(f"refreshed {record['at'][11:]} in ")
    assert refresh_text(record).endswith(f"; next {record['next_at'][11:]}")
    # only a folder of runs that a refresh publishes into has a record; a broken one is none
    assert read_record(tmp_path / "c") is None
    (tmp_path / "c" / "refresh.json").write_text("{", encoding="utf-8")
    assert read_record(tmp_path / "c" / "published") is None


def test_the_record_says_each_step_and_a_status_that_is_not_zero() -> None:
    record = {
        "at": "2026-11-27T10:15:02Z",
        "seconds": 42.4,
        "steps": {"ingest": 20.2, "compute": 21.0},
        "status": 3,
        "next_at": "2026-11-27T10:30:00Z",
    }
    assert refresh_text(record) == (
        "refreshed 10:15:02Z in 42 s (ingest 20 s, compute 21 s), status 3; next 10:30:00Z"
    )
    shown = str(navbar("2026-11-27 10:00Z", "R1", "15 min", refresh_text(record)))
    assert "pf-refreshed" in shown and "ingest 20 s" in shown
    assert "pf-refreshed" not in str(navbar("2026-11-27 10:00Z", "R1", "15 min"))
    metrics = exposition(None, refresh=record).decode()
    values = {
        ln.rsplit(" ", 1)[0]: float(ln.rsplit(" ", 1)[1])
        for ln in metrics.splitlines()
        if ln and not ln.startswith("#")
    }
    next_at = datetime.fromisoformat("2026-11-27T10:30:00+00:00").timestamp()
    assert values == {
        "pfscope_run_published": 0.0,
        'pfscope_refresh_duration_seconds{step="compute"}': 21.0,
        'pfscope_refresh_duration_seconds{step="ingest"}': 20.2,
        'pfscope_refresh_duration_seconds{step="total"}': 42.4,
        "pfscope_refresh_status": 3.0,
        "pfscope_refresh_timestamp_seconds": next_at - 14 * 60 - 58,
        "pfscope_refresh_next_timestamp_seconds": next_at,
    }
    named = {ln.split("{")[0].split(" ")[0] for ln in metrics.splitlines() if ln and not ln.startswith("#")}
    assert named - {"pfscope_run_published"} == set(CHAIN_METRIC_NAMES)


def test_a_chain_of_a_small_share_runs_no_jvm(tmp_path: Path) -> None:
    """By default the chain's steps choose their engine: ingest of a share under 1 GB reads it
    with its reference, compute of a log under 160 MB replays it (``--engine auto``), each in its
    own process, no Spark; then an hour with nothing new, and ``--engine spark`` of nothing new
    publishes nothing either."""
    share = tmp_path / "share"
    share.mkdir()
    write_wevtutil_xml(fx.EX07_EVENTS, share / "ex07.xml")
    (tmp_path / "replids.csv").write_text(fx.REPLIDS_CSV, encoding="utf-8")
    out = tmp_path / "chain"
    flags = ("--logs", str(share), "--out", str(out), "--replids", str(tmp_path / "replids.csv"))
    done = refresh(*flags)
    assert done.returncode == 0, done
    (line,) = done.stdout.splitlines()
    assert ": ingest: full ingest: no records kept by an earlier run in this process (" in line, line
    why = "full: the python engine replays the whole log (the log is under 160 MB)"
    assert f"compute: {why}, published run " in line, line
    pointer = json.loads((out / "published" / "LATEST").read_text())
    assert pointer["refresh"] == why
    for engine in ("python", "spark"):
        again = refresh(*flags, "--engine", engine)
        assert again.returncode == 0 and "compute: incremental: nothing new since run " in again.stdout, again
    assert json.loads((out / "published" / "LATEST").read_text())["run_id"] == pointer["run_id"]
    assert (
        "ingest: incremental: 0 new files, 0 new records; 1 files (8 records) not read again; nothing new"
        in again.stdout
    )
    write_wevtutil_xml(fx.LDN_EVENTS, share / "ldn.xml")  # the next hour's export: only it is read
    later = refresh(*flags)
    assert later.returncode == 0, later
    n = len(fx.LDN_EVENTS)
    assert (
        f"ingest: incremental: 1 new files, {n} new records; 1 files (8 records) not read again ("
        in later.stdout
    )
    assert json.loads((out / "published" / "LATEST").read_text())["run_id"] != pointer["run_id"]
