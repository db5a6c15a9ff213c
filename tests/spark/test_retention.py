"""A real ``pfscope compute`` killed with SIGKILL, and two real ones overlapping.

The killed runs leave ``LATEST`` byte for byte as it was and readable by the dashboard's data
layer; the next run publishes and removes their folders. A second run while one holds the lock
exits 75 with one line, or waits with ``--wait-lock`` and publishes after it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from pfscope.app.data import RunData, require_run
from pfscope.spark_jobs.model.errors import ExitStatus
from pfscope.spark_jobs.published.runs import LATEST, RUNS, WRITER
from tests.published_runs import ROOT, _env, published

pytestmark = pytest.mark.slow  # five real computes, three of them killed


def _compute(out: Path, source: Path, *extra: str) -> subprocess.Popen[str]:
    """``pfscope compute`` in its own process group (the JVM with it), as cron or systemd starts it;
    in full (``--full``): over the log the published run read, a run would otherwise have nothing
    new to do and publish no run to kill or wait for."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pfscope.app.cli",
            "compute",
            "--topology",
            str(source / "topology.json"),
            "--events",
            str(source / "events.jsonl"),
            "--out",
            str(out),
            "--full",
            "--engine",
            "spark",
            *extra,
        ],
        cwd=ROOT,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _new_runs(out: Path, before: set[str]) -> list[Path]:
    return [p for p in (out / RUNS).iterdir() if p.name not in before and not p.name.startswith(".")]


def _wait_for(what: str, check, proc: subprocess.Popen[str], timeout: float = 600):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        if proc.poll() is not None:
            raise AssertionError(
                f"compute exited {proc.returncode} before {what}: {proc.stderr.read()[-2000:]}"
            )
        time.sleep(0.05)
    raise AssertionError(f"no {what} within {timeout} s")


def _jvm_running(pid: int) -> bool:
    try:
        return any(c.name() == "java" for c in psutil.Process(pid).children(recursive=True))
    except psutil.Error:
        return False


def _kill(proc: subprocess.Popen[str]) -> None:
    os.killpg(proc.pid, signal.SIGKILL)  # the driver and its JVM, like kill -9 of the unit's processes
    proc.wait(timeout=60)


def _readable(out: Path) -> dict[str, object]:
    data = RunData(require_run(out))
    assert len(data.stores()) == 3 and len(data.folders()) >= 2
    return data.summary()


@pytest.fixture
def baseline(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the published worked example (its source log beside it) to kill runs over."""
    src = published("worked-example")
    out = tmp_path / "out"
    shutil.copytree(src, out)
    return out, src.parent


def test_killed_runs_leave_latest_the_next_run_clears_them_and_a_second_run_exits_75_or_waits(
    baseline: tuple[Path, Path],
) -> None:
    out, source = baseline
    latest = (out / LATEST).read_bytes()
    summary = _readable(out)
    first = {p.name for p in (out / RUNS).iterdir()}
    leftovers = []

    # 1. killed just after it started: its run folder exists, nothing written yet (Spark starting)
    proc = _compute(out, source)
    [run] = _wait_for("run folder", lambda: [r for r in _new_runs(out, first) if (r / WRITER).exists()], proc)
    _kill(proc)
    leftovers.append(run)
    # 2. killed while Spark runs (its JVM started), before any table is written
    proc = _compute(out, source)
    _wait_for("Spark's JVM", lambda: _jvm_running(proc.pid), proc)
    [run] = _new_runs(out, first | {p.name for p in leftovers})
    _kill(proc)
    leftovers.append(run)
    # 3. killed mid-write: the first tables are being written (Spark's _temporary or a table folder)
    proc = _compute(out, source)
    [run] = _wait_for(
        "table being written",
        lambda: [
            r
            for r in _new_runs(out, first | {p.name for p in leftovers})
            if any(c.is_dir() for c in r.iterdir())
        ],
        proc,
    )
    _kill(proc)
    leftovers.append(run)

    for run in leftovers:
        assert run.is_dir() and json.loads((run / WRITER).read_text())["pid"] > 0
    assert (out / LATEST).read_bytes() == latest
    assert _readable(out) == summary

    # the next run takes the lock the killed ones held; while it holds it, a second run exits 75
    # with one line, or waits with --wait-lock and publishes after it
    a = _compute(out, source, "--keep", "2")
    waiter = None
    try:
        _wait_for("run folder", lambda: _new_runs(out, first | {p.name for p in leftovers}), a)
        refused = subprocess.run(
            [
                sys.executable,
                "-m",
                "pfscope.app.cli",
                "compute",
                "--topology",
                str(source / "topology.json"),
                "--events",
                str(source / "events.jsonl"),
                "--out",
                str(out),
            ],
            cwd=ROOT,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert refused.returncode == ExitStatus.LOCKED == 75
        assert refused.stdout == ""
        [line] = refused.stderr.strip().splitlines()
        assert line.startswith(f"pfscope compute: another run holds {out / '.lock'} (pid {a.pid} on ")
        assert "--wait-lock" in line
        waiter = _compute(out, source, "--wait-lock")

        # the next run publishes and removes the killed runs' folders
        a_out, a_err = a.communicate(timeout=900)
        assert a.returncode == 0, a_err
        assert "removed 0 older run(s) (keeping 2) and 3 left by interrupted runs" in a_out
        assert not any(r.exists() for r in leftovers)
        [a_run] = re.findall(r"^published run (\S+) ", a_out, re.M)

        _, w_err = waiter.communicate(timeout=900)
        assert waiter.returncode == 0, w_err
    finally:
        for p in (a, waiter):
            if p is not None and p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    pointer = json.loads((out / LATEST).read_text())
    assert pointer["run_id"] != a_run and pointer["previous_run_id"] == a_run
    assert pointer["run_id"] > a_run  # the waiter started its run only once a had published
    assert sorted(p.name for p in (out / RUNS).iterdir()) == sorted([*first, a_run, pointer["run_id"]])
    assert _readable(out)["run_id"] == pointer["run_id"]
