"""``pfscope serve`` as an operator runs it: real processes, real sockets, real signals.

gunicorn by default (the workers are counted; neither silent sockets nor a burst of first
requests stops one), the one line saying where it listens, pages over HTTP, SIGTERM and Ctrl-C
ending it with status 0, the refusals (off loopback without credentials, a taken port, a bad
worker count) as one line and status 2, ``--dev`` for Flask's server, and the Procfile's command
taking the same path. TLS: ``test_serve_tls.py``.
"""

from __future__ import annotations

import base64
import os
import queue
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

from tests.e2e.conftest import free_port
from tests.published_runs import ROOT, _env

VENV_BIN = Path(sys.executable).parent


def _spawn(args: list[str], tmp: Path, extra_env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    env = {**_env(), "PFSCOPE_CACHE_DIR": str(tmp / "cache"), **(extra_env or {})}
    return subprocess.Popen(
        [sys.executable, "-m", "pfscope.app.cli", "serve", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _first_line(proc: subprocess.Popen[str], timeout: float = 120) -> str:
    """The line saying where it listens: printed once the socket is bound."""
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(
        target=lambda: lines.put(proc.stdout.readline() if proc.stdout else ""), daemon=True
    ).start()
    try:
        line = lines.get(timeout=timeout)
    except queue.Empty:
        raise AssertionError(f"no listening line within {timeout} s") from None
    if not line:
        proc.wait(timeout=30)
        raise AssertionError(f"serve exited {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}")
    return line.rstrip("\n")


def _get(url: str, auth: tuple[str, str] | None = None, timeout: float = 60) -> tuple[int, str]:
    req = urllib.request.Request(url)
    if auth:
        req.add_header("Authorization", "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode())
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


def _wait_ready(base: str, auth: tuple[str, str] | None = None, timeout: float = 120) -> None:
    """The line comes when the socket is bound; wait until a worker has booted and answers."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            code, _ = _get(base + "/_dash-layout", auth, timeout=10)
            if code in (200, 401):
                return
        except OSError:
            pass
        time.sleep(0.3)
    raise AssertionError(f"{base} did not answer within {timeout} s")


def _stop(proc: subprocess.Popen[str], sig: int = signal.SIGTERM, timeout: float = 30) -> tuple[int, float]:
    started = time.monotonic()
    proc.send_signal(sig)
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(f"serve still running {timeout} s after signal {sig}") from None
    return code, time.monotonic() - started


@contextmanager
def _serving(
    args: list[str], tmp: Path, extra_env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[str]]:
    proc = _spawn(args, tmp, extra_env)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _wait_listening(port: int, proc: subprocess.Popen[str], timeout: float = 120) -> None:
    """Wait until a connection to the port is accepted, sending nothing on it (no request yet)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
            return
        except OSError:
            time.sleep(0.05)  # refused at once: not bound yet
    raise AssertionError(f"port {port} not listening within {timeout} s (exit status {proc.poll()})")


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def test_gunicorn_by_default_pages_workers_and_sigterm(we_data: Path, tmp_path: Path) -> None:
    port = free_port()
    with _serving(["--data", str(we_data), "--port", str(port), "--workers", "3"], tmp_path) as proc:
        line = _first_line(proc)
        assert line == f"pfscope: serving {we_data} on http://127.0.0.1:{port}/ (3 workers)"
        base = f"http://127.0.0.1:{port}"
        _wait_ready(base)
        for path in ("/", "/folder/1-123", "/store/PFS1", "/backfill", "/_dash-layout"):
            code, body = _get(base + path)
            assert code == 200, (path, body[:300])
        code, _ = _get(base + "/report")
        assert code == 200
        # gunicorn's arbiter is the process we started; its children are the workers
        children = psutil.Process(proc.pid).children()
        assert len(children) == 3
        assert all("pfscope-serve" in " ".join(c.cmdline()) or c.ppid() == proc.pid for c in children)
        code, took = _stop(proc, signal.SIGTERM)
        assert code == 0
        assert took < 20, f"SIGTERM took {took:.1f} s"
        assert not any(c.is_running() and c.status() != psutil.STATUS_ZOMBIE for c in children)
        err = proc.stderr.read() if proc.stderr else ""
        assert "development server" not in err and "Traceback" not in err
    assert _port_free(port)


def test_silent_connections_hold_no_worker(we_data: Path, tmp_path: Path) -> None:
    """Chromium opens sockets it sends nothing on (preconnect): with four open, the one worker
    still answers. Accepted, each would hold it until gunicorn's 120 s time-out killed it."""
    port = free_port()
    with _serving(["--data", str(we_data), "--port", str(port), "--workers", "1"], tmp_path) as proc:
        _first_line(proc)
        base = f"http://127.0.0.1:{port}"
        _wait_ready(base)
        silent = [socket.create_connection(("127.0.0.1", port)) for _ in range(4)]
        try:
            code, body = _get(base + "/latest.json", timeout=60)
            assert code == 200 and '"run_id"' in body
        finally:
            for s in silent:
                s.close()
        assert _stop(proc)[0] == 0


def test_the_first_requests_may_come_at_once(we_data: Path, tmp_path: Path) -> None:
    """A browser's first page asks for its scripts at once, in threads on ``--dev`` (Flask's
    server) or a WSGI server of one's own: each is served. Dash sets itself up on a first request,
    which the others must not overtake."""
    from concurrent.futures import ThreadPoolExecutor

    port = free_port()
    with _serving(["--data", str(we_data), "--port", str(port), "--dev"], tmp_path) as proc:
        _first_line(proc)  # printed before Flask's server binds
        _wait_listening(port, proc)  # the burst below is the first request
        script = f"http://127.0.0.1:{port}/_dash-component-suites/dash/dcc/dash_core_components.js"
        with ThreadPoolExecutor(8) as pool:
            assert [code for code, _ in pool.map(lambda _: _get(script), range(8))] == [200] * 8


def test_ctrl_c_stops_with_status_zero(we_data: Path, tmp_path: Path) -> None:
    port = free_port()
    with _serving(["--data", str(we_data), "--port", str(port), "--workers", "1"], tmp_path) as proc:
        assert "(1 worker)" in _first_line(proc)
        _wait_ready(f"http://127.0.0.1:{port}")
        code, took = _stop(proc, signal.SIGINT)
        assert code == 0 and took < 20


def test_default_workers_follow_the_cores(we_data: Path, tmp_path: Path) -> None:
    from pfscope.app.settings import default_workers

    expected = default_workers()
    assert expected == min(2 * len(os.sched_getaffinity(0)) + 1, 12)
    port = free_port()
    env = {k: v for k, v in _env().items() if k != "PFSCOPE_WORKERS"}
    env["PFSCOPE_CACHE_DIR"] = str(tmp_path / "cache")
    proc = subprocess.Popen(
        [sys.executable, "-m", "pfscope.app.cli", "serve", "--data", str(we_data), "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert _first_line(proc).endswith(f"({expected} workers)")
        _wait_ready(f"http://127.0.0.1:{port}")
        assert len(psutil.Process(proc.pid).children()) == expected
        assert _stop(proc)[0] == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_off_loopback_needs_credentials_then_asks_for_them(we_data: Path, tmp_path: Path) -> None:
    port = free_port()
    refused = subprocess.run(
        [
            sys.executable,
            "-m",
            "pfscope.app.cli",
            "serve",
            "--data",
            str(we_data),
            "--host",
            "0.0.0.0",
            "--port",
            str(port),
        ],
        cwd=ROOT,
        env={**_env(), "PFSCOPE_USER": "", "PFSCOPE_PASSWORD": ""},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode == 2
    assert refused.stdout == ""
    assert refused.stderr.strip().splitlines() == [
        "pfscope serve: refusing to serve on 0.0.0.0 without credentials: set PFSCOPE_USER and PFSCOPE_PASSWORD"
    ]
    assert _port_free(port)

    # plain HTTP beyond loopback: only with a TLS proxy in front (tests/e2e/test_serve_tls.py: HTTPS itself)
    creds = {"PFSCOPE_USER": "ops", "PFSCOPE_PASSWORD": "s3cret <&>", "PFSCOPE_BEHIND_TLS_PROXY": "1"}
    with _serving(
        ["--data", str(we_data), "--host", "0.0.0.0", "--port", str(port), "--workers", "1"], tmp_path, creds
    ) as proc:
        assert _first_line(proc) == (
            f"pfscope: serving {we_data} on http://0.0.0.0:{port}/ (1 worker, HTTP Basic auth)"
        )
        base = f"http://127.0.0.1:{port}"
        _wait_ready(base)
        assert _get(base + "/")[0] == 401
        assert _get(base + "/", ("ops", "wrong"))[0] == 401
        assert _get(base + "/", ("ops", "s3cret <&>"))[0] == 200
        assert _stop(proc)[0] == 0


def test_refusals_are_one_line_and_status_two(we_data: Path, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        cases = [
            (["--data", str(we_data), "--port", str(port)], {}, f"cannot serve on 127.0.0.1:{port}"),
            (["--data", str(we_data), "--workers", "0"], {}, "workers: 0"),
            (["--data", str(we_data)], {"PFSCOPE_WORKERS": "many"}, "PFSCOPE_WORKERS='many'"),
            (["--data", str(tmp_path / "nope")], {}, "no such folder of published runs"),
        ]
        for args, env, expected in cases:
            done = subprocess.run(
                [sys.executable, "-m", "pfscope.app.cli", "serve", *args],
                cwd=ROOT,
                env={**_env(), **env},
                capture_output=True,
                text=True,
                timeout=120,
            )
            lines = done.stderr.strip().splitlines()
            assert done.returncode == 2, (args, done.stderr)
            assert len(lines) == 1 and lines[0].startswith("pfscope serve: ") and expected in lines[0], lines


def test_dev_runs_flasks_server_only_when_asked(we_data: Path, tmp_path: Path) -> None:
    port = free_port()
    with _serving(["--data", str(we_data), "--port", str(port), "--dev"], tmp_path) as proc:
        assert (
            _first_line(proc)
            == f"pfscope: serving {we_data} on http://127.0.0.1:{port}/ (Flask development server)"
        )
        base = f"http://127.0.0.1:{port}"
        _wait_ready(base)
        assert _get(base + "/folder/1-123")[0] == 200
        assert psutil.Process(proc.pid).children() == []  # one process, no workers
        proc.terminate()
        proc.wait(timeout=20)


def test_the_procfile_runs_pfscope_serve(we_data: Path, tmp_path: Path) -> None:
    kind, _, command = (ROOT / "Procfile").read_text().strip().partition(": ")
    assert kind == "web" and shlex.split(command)[:2] == ["pfscope", "serve"]
    port = free_port()
    env = {
        **_env(),
        "PORT": str(port),
        "PFSCOPE_SERVE_DATA": str(we_data),
        "PFSCOPE_WORKERS": "2",
        "PFSCOPE_CACHE_DIR": str(tmp_path / "cache"),
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}",
    }
    proc = subprocess.Popen(
        ["sh", "-c", f"exec {command}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert _first_line(proc) == f"pfscope: serving {we_data} on http://127.0.0.1:{port}/ (2 workers)"
        _wait_ready(f"http://127.0.0.1:{port}")
        assert _get(f"http://127.0.0.1:{port}/store/PFS2")[0] == 200
        assert _stop(proc)[0] == 0
    finally:
        if proc.poll() is None:
            proc.kill()
