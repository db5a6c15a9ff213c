"""A live ``pfscope serve`` per published run, and Debian's Chromium driven by Playwright.

The runs come from the real Spark job (``tests/published.py``, once per session). Every test
gets a fresh page whose console errors and page errors fail the test: a new tab of one Chromium
profile kept for the session (``warm_context``), so Dash's and plotly.js's bundles come from its
disk cache with V8's compiled code instead of being fetched and compiled again for every test
(an incognito context, ``browser.new_context()``, keeps neither: test_dashboard.py's Chromium
took 72 s of CPU with a context per test, 56 s with this); what a test leaves in the profile (cookies, storage, permissions) is
cleared after it. Tests that need other context options (dark, a phone, an empty cache) make
their own contexts from ``browser``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.published_runs import ROOT, _env, published

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = ROOT / "test-output" / "screenshots"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    base: str
    data: Path
    proc: subprocess.Popen[bytes]
    log: Path


def start_server(data: Path, cache: Path, log: Path, extra_env: dict[str, str] | None = None) -> Server:
    port = free_port()
    # two gunicorn workers: the production path with its shared cache, without five per server
    env = {**_env(), "PFSCOPE_CACHE_DIR": str(cache), "PFSCOPE_WORKERS": "2", **(extra_env or {})}
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pfscope.app.cli", "serve", "--data", str(data), "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"pfscope serve exited {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(base + "/_dash-layout", timeout=5) as r:
                if r.status == 200:
                    return Server(base, data, proc, log)
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError(f"pfscope serve did not answer within 60 s: {log.read_text()[-2000:]}")


def stop_server(server: Server) -> None:
    server.proc.terminate()
    try:
        server.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.proc.kill()


@pytest.fixture(scope="session")
def we_data() -> Path:
    return published("worked-example")


@pytest.fixture(scope="session")
def demo_data() -> Path:
    return published("demo")


def served(data: Path, tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[Server]:
    """A live ``pfscope serve`` on ``data`` for the session, with its own cache and log."""
    tmp = tmp_path_factory.mktemp(f"serve-{name}")
    server = start_server(data, tmp / "cache", tmp / "serve.log")
    yield server
    stop_server(server)


@pytest.fixture(scope="session")
def we_server(we_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from served(we_data, tmp_path_factory, "we")


@pytest.fixture(scope="session")
def demo_server(demo_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from served(demo_data, tmp_path_factory, "demo")


@pytest.fixture(scope="session")
def ingested_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The worked example read back from Exchange's event logs by ``pfscope ingest``."""
    yield from served(published("ingested"), tmp_path_factory, "ingested")


@pytest.fixture(scope="session")
def pw():  # type: ignore[no-untyped-def]
    """Playwright, started once per session."""
    from playwright.sync_api import sync_playwright

    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: run scripts/setup with PFSCOPE_BROWSER=1 (scripts/test does)")
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="session")
def browser(pw):  # type: ignore[no-untyped-def]
    """Chromium for the tests that make their own (incognito) contexts."""
    b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    yield b
    b.close()


@pytest.fixture(scope="session")
def warm_context(pw, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """Chromium on a profile of its own for the session, whose pages the ``page`` fixture gives:
    its HTTP cache and V8's code cache last from one test to the next."""
    context = pw.chromium.launch_persistent_context(
        str(tmp_path_factory.mktemp("chromium-profile")),
        executable_path=CHROMIUM,
        args=CHROMIUM_ARGS,
        viewport={"width": 1400, "height": 1000},
        accept_downloads=True,
    )
    yield context
    context.close()


#: what a test may leave in the shared profile for a site; its HTTP cache (immutable bundles) stays
SITE_DATA = "cookies,local_storage,indexeddb,websql,service_workers,cache_storage,file_systems,shared_storage,storage_buckets"


def origin(url: str) -> str | None:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme in ("http", "https") else None


@dataclass
class Console:
    errors: list[str] = field(default_factory=list)


def console_error(message, pg) -> bool:  # type: ignore[no-untyped-def]
    """A console error, except Chromium's note that the page itself answered 404: an unknown
    address is meant to (the page still says what is close); a missing asset or failed call is not."""
    if message.type != "error":
        return False
    own_404 = message.text.startswith(
        "Failed to load resource: the server responded with a status of 404"
    ) and ((message.location or {}).get("url", "").split("#")[0] == pg.url.split("#")[0])
    return not own_404


@pytest.fixture
def page(warm_context):  # type: ignore[no-untyped-def]
    """A fresh page (a new tab of ``warm_context``, 1400 x 1000, downloads accepted); any console
    error or uncaught page error fails the test. Afterwards the sites it visited are cleared of
    cookies and storage, and permissions are reset: the next test starts as clean."""
    pg = warm_context.new_page()
    sites: set[str] = set()
    pg.on("framenavigated", lambda frame: sites.add(origin(frame.url) or ""))
    console = Console()
    pg.on(
        "console",
        lambda m: console.errors.append(f"console {m.type}: {m.text}") if console_error(m, pg) else None,
    )
    pg.on("pageerror", lambda e: console.errors.append(f"page error: {e}"))
    pg.set_default_timeout(20_000)
    yield pg
    if pg.is_closed():
        pg = warm_context.new_page()
    cdp = warm_context.new_cdp_session(pg)
    for site in sorted(sites - {""}):
        cdp.send("Storage.clearDataForOrigin", {"origin": site, "storageTypes": SITE_DATA})
    cdp.detach()
    pg.close()
    warm_context.clear_cookies()
    warm_context.clear_permissions()
    assert console.errors == [], "\n".join(console.errors)


def screenshot(pg, name: str) -> Path:  # type: ignore[no-untyped-def]
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    pg.screenshot(path=str(path), full_page=True)
    return path
