"""The derivation in parts (``derive_apart``), one process each, against the derivation in one
piece: the same outputs byte for byte on a simulated share with the derivation's own rejects, and
a part that fails fails the run, writing nothing and leaving no process behind."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import psutil
import pytest

import pfscope.spark_jobs.exchange as exchange
from pfscope.spark_jobs.exchange import build, derive_apart, run_ingest
from pfscope.spark_jobs.exchange.event_files import EVENTS_FOLDER
from tests.benchmarks.bench_ingest import export, render
from tests.unit.exchange.exports import write_wevtutil_xml
from tests.unit.exchange.test_build import odd_messages

TIMING = ("seconds", "records_per_second")


def _share(tmp: Path) -> Path:
    """A simulated organisation of 4 servers and 40 folders, and records the derivation rejects."""
    _, by_server = render(tmp / "sim", 4, 40, 1)
    logs = tmp / "logs"
    logs.mkdir()
    for server, recs in sorted(by_server.items()):
        export(recs, logs / f"{server}.xml")
    odd = odd_messages()
    wide = next(r for r in odd if "1-FFFFF" in r.message)
    more = [  # sends the derivation rejects, in several folders (so in several parts)
        replace(
            wide,
            ts=wide.ts + 60_000_000 * n,
            message=wide.message.replace("<W1@", f"<W{n}@").replace(
                "(1-50) IPM_SUBTREE\\Z", f"(1-{50 + n}) Z{n}"
            ),
        )
        for n in range(2, 8)
    ]
    write_wevtutil_xml(odd + more, logs / "odd.xml")
    return logs


def _outputs(out: Path) -> dict[str, Any]:
    got: dict[str, Any] = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    got |= {f"events/{p.name}": p.read_bytes() for p in (out / EVENTS_FOLDER).iterdir()}
    summary = json.loads(got.pop("ingest_summary.json"))
    for k in TIMING:
        summary.pop(k)
    got["summary"] = json.dumps(summary)  # the order of every key and statistic too
    return got


@pytest.mark.parametrize("parts", [2, 3])
def test_in_parts_equals_in_one_piece(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parts: int) -> None:
    logs = _share(tmp_path)
    one = run_ingest([str(logs)], tmp_path / "one")
    calls: list[int] = []

    def spied(*args: Any) -> Any:
        calls.append(args[-1])
        return derive_apart.derive_written(*args)

    monkeypatch.setattr(build, "derive_written", spied)
    monkeypatch.setattr(exchange, "parts_for", lambda messages: parts)
    apart = run_ingest([str(logs)], tmp_path / "apart")
    assert calls == [parts]
    assert one["derived"] and len(one["derived"]) > 1  # statistics to merge in their order
    wide = [n for r, n in one["reject_reasons"].items() if r.startswith("CN range of")]
    assert sum(wide) == 7  # rejects of the derivation, merged in their messages' order
    assert _outputs(tmp_path / "apart") == _outputs(tmp_path / "one")
    assert apart["events_written"] == one["events_written"]


def test_the_share_is_derived_in_parts_from_parts_from_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3, 4, 5})
    assert derive_apart.parts_for(derive_apart.PARTS_FROM - 1) == 1
    assert derive_apart.parts_for(derive_apart.PARTS_FROM) == derive_apart.MAX_PARTS
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3})
    assert derive_apart.parts_for(10 * derive_apart.PARTS_FROM) == 1
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    assert derive_apart.parts_for(derive_apart.PARTS_FROM) == 2
    monkeypatch.delattr(os, "fork")  # as on Windows
    assert derive_apart.parts_for(derive_apart.PARTS_FROM) == 1


def test_a_part_that_fails_fails_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    logs = _share(tmp_path)
    here = os.getpid()
    part = derive_apart._part

    def failing(*args: Any) -> Any:
        if os.getpid() != here:
            raise MemoryError("no room for the lines")
        return part(*args)

    forked: list[int] = []
    fork = derive_apart._fork

    def spied(work: Any) -> tuple[int, int]:
        pid, fd = fork(work)
        forked.append(pid)
        return pid, fd

    monkeypatch.setattr(derive_apart, "_part", failing)
    monkeypatch.setattr(derive_apart, "_fork", spied)
    monkeypatch.setattr(exchange, "parts_for", lambda messages: 3)
    with pytest.raises(
        RuntimeError, match=r"a part of the derivation \(process \d+\) failed: MemoryError: no room"
    ):
        run_ingest([str(logs)], tmp_path / "out")
    assert not (tmp_path / "out" / "events.jsonl").exists()
    assert len(forked) == 2
    for (
        pid
    ) in forked:  # each part waited for (the second killed once the first failed): none left to wait for
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def _open_files() -> dict[int, str]:
    fds = {int(fd) for fd in os.listdir("/proc/self/fd")}
    got = {}
    for fd in fds:
        with contextlib.suppress(OSError):  # the listing's own, closed by now
            got[fd] = os.readlink(f"/proc/self/fd/{fd}")
    return got


def test_a_part_holds_only_its_pipe(tmp_path: Path) -> None:
    """Not the run's lock, nor the output pipes ``pfscope refresh`` reads to their end."""
    lock = os.open(tmp_path / "lock", os.O_RDWR | os.O_CREAT)
    try:
        assert str(tmp_path / "lock") in _open_files().values()
        held = derive_apart._collect(*derive_apart._fork(_open_files))
    finally:
        os.close(lock)
    assert str(tmp_path / "lock") not in held.values()
    assert held[1] == held[2] == os.devnull
    assert [t for fd, t in held.items() if fd > 2 and t.startswith("pipe:")], held
    assert not [t for fd, t in held.items() if fd > 2 and not t.startswith("pipe:")], held


def test_a_part_dies_with_the_process_that_forked_it() -> None:
    script = (
        "import os, signal, sys, time\n"
        "from pfscope.spark_jobs.exchange import derive_apart\n"
        "pid, _ = derive_apart._fork(lambda: time.sleep(600))\n"
        "print(pid, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.returncode == -signal.SIGKILL
    part = int(run.stdout)
    with contextlib.suppress(psutil.NoSuchProcess):
        psutil.Process(part).wait(timeout=60)  # gone long before its 600 s of work
    assert not psutil.pid_exists(part) or psutil.Process(part).status() == psutil.STATUS_ZOMBIE
