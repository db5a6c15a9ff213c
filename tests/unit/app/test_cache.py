"""The shared cache: two app processes (two flask-caching caches) see each other's entries, in
files and in a real Redis, and a new run id never reads an old run's entries."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from flask_caching import Cache

from pfscope.app.data import RunData, require_run
from pfscope.app.main import _BoundCache, cache_config
from pfscope.app.settings import Settings


def worker_cache(settings: Settings) -> _BoundCache:
    """What one gunicorn worker builds: its own Flask app and flask-caching cache."""
    server = Flask("worker")
    cache = Cache(config=cache_config(settings))
    cache.init_app(server)
    return _BoundCache(cache, server)


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.fail("redis-server is missing: run scripts/setup with PFSCOPE_REDIS=1 (scripts/test does)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [
            exe,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(tmp_path),
        ],
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    yield f"redis://127.0.0.1:{port}/0"
    proc.terminate()
    proc.wait(timeout=10)


def shared_between_workers(settings: Settings, we_data: Path) -> None:
    run = require_run(we_data)
    one, two = worker_cache(settings), worker_cache(settings)
    calls: list[str] = []

    def compute() -> list[str]:
        calls.append("computed")
        return ["PFS1", "PFS2"]

    assert RunData(run, one).memo("probe", ("x",), compute) == ["PFS1", "PFS2"]
    assert RunData(run, two).memo("probe", ("x",), compute) == ["PFS1", "PFS2"]
    assert calls == ["computed"]  # the second worker read the first one's entry
    frame = RunData(run, one).state_history("1-123")
    assert RunData(run, two).state_history("1-123").equals(frame)
    # another run id: its own entry, computed again
    other = type(run)(run.data_dir, run.run_id + "-next", run.path, run.pointer)
    RunData(other, two).memo("probe", ("x",), compute)
    assert calls == ["computed", "computed"]


def test_file_cache_is_shared_between_workers(we_data: Path, tmp_path: Path) -> None:
    shared_between_workers(Settings(cache_dir=tmp_path / "cache"), we_data)
    assert any((tmp_path / "cache").iterdir())


def test_redis_cache_is_shared_between_workers(we_data: Path, redis_url: str) -> None:
    shared_between_workers(Settings(redis_url=redis_url), we_data)
