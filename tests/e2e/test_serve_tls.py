"""``pfscope serve`` and TLS, as an operator runs it: real processes, a real self-signed
certificate (``tests/tls.py``), real HTTPS.

gunicorn serves HTTPS itself with ``--certfile``/``--keyfile`` (and plain HTTP to that port gets
no page); beyond loopback, plain HTTP is refused (one line, status 2, nothing listening) unless
``--behind-tls-proxy`` says a TLS proxy fronts it; with TLS and credentials on 0.0.0.0, HTTPS with
Basic auth. Every request goes to 127.0.0.1, whatever address the server binds.
"""

from __future__ import annotations

import base64
import http.client
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest

from tests.e2e.conftest import free_port
from tests.e2e.test_serve import _first_line, _port_free, _serving, _stop
from tests.published_runs import ROOT, _env
from tests.tls import self_signed

CREDENTIALS = {"PFSCOPE_USER": "ops", "PFSCOPE_PASSWORD": "s3cret <&>"}
#: whatever the calling shell exports, these tests say what they mean
NO_TLS_ENV = {"PFSCOPE_CERTFILE": "", "PFSCOPE_KEYFILE": "", "PFSCOPE_BEHIND_TLS_PROXY": ""}


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return self_signed(tmp_path_factory.mktemp("tls"))


def _trusting(cert: Path) -> ssl.SSLContext:
    """A client context that trusts the test's certificate (and checks 127.0.0.1 against it)."""
    return ssl.create_default_context(cafile=str(cert))


def _get(
    url: str, context: ssl.SSLContext | None = None, auth: tuple[str, str] | None = None, timeout: float = 60
) -> tuple[int, str]:
    assert url.startswith(("https://127.0.0.1:", "http://127.0.0.1:")), url  # never another address
    req = urllib.request.Request(url)
    if auth:
        req.add_header("Authorization", "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode())
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=context) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


def _wait_ready(base: str, context: ssl.SSLContext | None, timeout: float = 120) -> None:
    """The line comes when the socket is bound; wait until a worker has booted and answers."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if _get(base + "/_dash-layout", context, timeout=10)[0] in (200, 401):
                return
        except OSError:
            pass
        time.sleep(0.3)
    raise AssertionError(f"{base} did not answer within {timeout} s")


def _plain_http_gets_no_page(url: str) -> None:
    """Plain HTTP to the HTTPS port: an error (gunicorn drops the TLS handshake), never the page."""
    try:
        code, body = _get(url, timeout=30)
    except (OSError, http.client.HTTPException):
        return
    assert code != 200 and "_dash-" not in body, (code, body[:300])


def test_https_on_loopback_and_plain_http_gets_nothing(
    we_data: Path, tmp_path: Path, tls_files: tuple[Path, Path]
) -> None:
    cert, key = tls_files
    port = free_port()
    args = [
        "--data",
        str(we_data),
        "--port",
        str(port),
        "--workers",
        "1",
        "--certfile",
        str(cert),
        "--keyfile",
        str(key),
    ]
    with _serving(args, tmp_path, NO_TLS_ENV) as proc:
        assert _first_line(proc) == f"pfscope: serving {we_data} on https://127.0.0.1:{port}/ (1 worker)"
        base = f"https://127.0.0.1:{port}"
        context = _trusting(cert)
        _wait_ready(base, context)
        code, body = _get(base + "/", context)
        assert code == 200 and "_dash-" in body, body[:300]
        assert _get(base + "/folder/1-123", context)[0] == 200
        _plain_http_gets_no_page(f"http://127.0.0.1:{port}/")
        with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
            _get(base + "/", ssl.create_default_context())  # a client that does not trust it: refused
        assert _get(base + "/", context)[0] == 200  # still serving after the plain request
        assert _stop(proc)[0] == 0
    assert _port_free(port)


def test_tls_from_the_environment(we_data: Path, tmp_path: Path, tls_files: tuple[Path, Path]) -> None:
    cert, key = tls_files
    port = free_port()
    env = {**NO_TLS_ENV, "PFSCOPE_CERTFILE": str(cert), "PFSCOPE_KEYFILE": str(key)}
    with _serving(["--data", str(we_data), "--port", str(port), "--workers", "1"], tmp_path, env) as proc:
        assert _first_line(proc).endswith(f" on https://127.0.0.1:{port}/ (1 worker)")
        _wait_ready(f"https://127.0.0.1:{port}", _trusting(cert))
        assert _stop(proc, signal.SIGINT)[0] == 0


def test_beyond_loopback_without_tls_is_refused(we_data: Path, tmp_path: Path) -> None:
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
            "--workers",
            "1",
        ],
        cwd=ROOT,
        env={**_env(), **NO_TLS_ENV, **CREDENTIALS, "PFSCOPE_CACHE_DIR": str(tmp_path / "c")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode == 2
    assert refused.stdout == ""
    assert refused.stderr.strip().splitlines() == [
        "pfscope serve: refusing to serve on 0.0.0.0 over plain HTTP (the password would travel in clear): give "
        "--certfile and --keyfile (PFSCOPE_CERTFILE, PFSCOPE_KEYFILE), or --behind-tls-proxy "
        "(PFSCOPE_BEHIND_TLS_PROXY=1) if a TLS proxy fronts it"
    ]
    assert _port_free(port)  # nothing listening


def test_behind_a_tls_proxy_starts_over_plain_http(we_data: Path, tmp_path: Path) -> None:
    port = free_port()
    args = [
        "--data",
        str(we_data),
        "--host",
        "0.0.0.0",
        "--port",
        str(port),
        "--workers",
        "1",
        "--behind-tls-proxy",
    ]
    with _serving(args, tmp_path, {**NO_TLS_ENV, **CREDENTIALS}) as proc:
        assert (
            _first_line(proc)
            == f"pfscope: serving {we_data} on http://0.0.0.0:{port}/ (1 worker, HTTP Basic auth)"
        )
        base = f"http://127.0.0.1:{port}"
        _wait_ready(base, None)
        assert _get(base + "/")[0] == 401
        assert _get(base + "/", auth=("ops", "s3cret <&>"))[0] == 200
        assert _stop(proc)[0] == 0
    assert _port_free(port)


def test_https_with_basic_auth_beyond_loopback(
    we_data: Path, tmp_path: Path, tls_files: tuple[Path, Path]
) -> None:
    cert, key = tls_files
    port = free_port()
    args = [
        "--data",
        str(we_data),
        "--host",
        "0.0.0.0",
        "--port",
        str(port),
        "--workers",
        "1",
        "--certfile",
        str(cert),
        "--keyfile",
        str(key),
    ]
    with _serving(args, tmp_path, {**NO_TLS_ENV, **CREDENTIALS}) as proc:
        assert _first_line(proc) == (
            f"pfscope: serving {we_data} on https://0.0.0.0:{port}/ (1 worker, HTTP Basic auth)"
        )
        base = f"https://127.0.0.1:{port}"  # the server binds 0.0.0.0; the test reaches it on loopback only
        context = _trusting(cert)
        _wait_ready(base, context)
        assert _get(base + "/", context)[0] == 401
        assert _get(base + "/", context, ("ops", "wrong"))[0] == 401
        code, body = _get(base + "/", context, ("ops", "s3cret <&>"))
        assert code == 200 and "_dash-" in body, body[:300]
        _plain_http_gets_no_page(f"http://127.0.0.1:{port}/")
        assert _stop(proc)[0] == 0


def test_tls_refusals_are_one_line_and_status_two(
    we_data: Path, tmp_path: Path, tls_files: tuple[Path, Path]
) -> None:
    cert, key = tls_files
    base = ["--data", str(we_data), "--port", str(free_port())]
    cases = [
        ([*base, "--certfile", str(cert)], {}, "give both --certfile and --keyfile"),
        ([*base, "--keyfile", str(key)], {}, "give both --certfile and --keyfile"),
        (
            [*base, "--certfile", str(tmp_path / "nope.pem"), "--keyfile", str(key)],
            {},
            f"{tmp_path / 'nope.pem'}: no such file",
        ),
        ([*base, "--certfile", str(cert), "--keyfile", str(cert)], {}, "do not load as a PEM certificate"),
        (base, {"PFSCOPE_BEHIND_TLS_PROXY": "maybe"}, "PFSCOPE_BEHIND_TLS_PROXY='maybe' is not 1/true/yes"),
        ([*base, "--host", "0.0.0.0"], {**CREDENTIALS, "PFSCOPE_BEHIND_TLS_PROXY": "no"}, "over plain HTTP"),
    ]
    for args, env, expected in cases:
        done = subprocess.run(
            [sys.executable, "-m", "pfscope.app.cli", "serve", *args],
            cwd=ROOT,
            env={**_env(), **NO_TLS_ENV, **env},
            capture_output=True,
            text=True,
            timeout=120,
        )
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2, (args, done.stderr)
        assert len(lines) == 1 and lines[0].startswith("pfscope serve: ") and expected in lines[0], lines


def test_dev_server_serves_https_too(we_data: Path, tmp_path: Path, tls_files: tuple[Path, Path]) -> None:
    cert, key = tls_files
    port = free_port()
    args = [
        "--data",
        str(we_data),
        "--port",
        str(port),
        "--dev",
        "--certfile",
        str(cert),
        "--keyfile",
        str(key),
    ]
    with _serving(args, tmp_path, NO_TLS_ENV) as proc:
        assert _first_line(proc) == (
            f"pfscope: serving {we_data} on https://127.0.0.1:{port}/ (Flask development server)"
        )
        base = f"https://127.0.0.1:{port}"
        context = _trusting(cert)
        _wait_ready(base, context)
        assert _get(base + "/folder/1-123", context)[0] == 200
        assert psutil.Process(proc.pid).children() == []  # one process, no workers
        proc.terminate()
        proc.wait(timeout=20)
