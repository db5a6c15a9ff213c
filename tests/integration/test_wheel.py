"""The wheel as a user gets it: built from this checkout, installed into a fresh virtualenv outside
it, and ``pfscope serve`` run from there answering every stylesheet and script its page names.

No download: the wheel is built with this venv's setuptools (``scripts/setup`` installs the
version ``[build-system]`` asks for; an older venv lets pip provide it, as it did for the editable
install), installed with ``--no-deps``, and the new venv reaches the dependencies through a
``.pth`` line naming this venv's site-packages, which comes after its own: ``pfscope`` is the
wheel's. The published run is the worked example (``tests/published_runs.py``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
import tomllib
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.published_runs import ROOT, published

pytestmark = pytest.mark.slow

#: what the wheel must carry besides the modules
PACKAGE_DATA = [
    "pfscope/app/monitoring/pfscope-rules.yml",
    "pfscope/app/vendor/plotly-cartesian.min.js",
    "pfscope/app/vendor/plotly-cartesian.LICENSE",
    "pfscope/spark_jobs/runtime/log4j2.properties",
]
#: what a source copy leaves out (generated, local or large)
NOT_SOURCES = shutil.ignore_patterns(
    ".git",
    ".venv",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    "*.pyc",
    ".pytest_cache",
    ".ruff_cache",
    ".hypothesis",
    "test-output",
    "data",
    "runs",
    "spark-warehouse",
    "metastore_db",
)


def _assets() -> list[str]:
    return sorted(p.name for p in (ROOT / "assets").iterdir() if p.is_file())


def _modules() -> list[str]:
    return sorted(
        "pfscope/" + p.relative_to(ROOT).as_posix()
        for top in ("app", "spark_jobs")
        for p in (ROOT / top).rglob("*.py")
        if "__pycache__" not in p.parts
    )


def _backend_installed() -> bool:
    """Whether this venv has the build backend ``[build-system] requires`` names."""
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    for text in requires:
        req = Requirement(text)
        try:
            if not req.specifier.contains(version(req.name), prereleases=True):
                return False
        except PackageNotFoundError:
            return False
    return True


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment without anything that points Python or pfscope at this checkout."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")
        and not k.startswith("PFSCOPE_")
    }
    return {**env, **extra}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``pip wheel`` of a copy of the checkout (a build leaves build/ and *.egg-info behind; a stale
    build/ in the checkout must not reach the wheel)."""
    work = tmp_path_factory.mktemp("wheel-build")
    src = work / "src"
    shutil.copytree(ROOT, src, ignore=NOT_SOURCES, symlinks=True)
    out = work / "dist"
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(src)]
    if _backend_installed():
        cmd.append("--no-build-isolation")
    done = subprocess.run(cmd, cwd=work, env=_clean_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (whl,) = out.glob("pfscope-*.whl")
    return whl


@dataclass
class Installed:
    venv: Path
    python: Path
    pfscope: Path
    site: Path


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """A fresh venv (no system site-packages) outside the checkout holding the wheel, nothing else."""
    venv = tmp_path_factory.mktemp("wheel-venv") / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120, env=_clean_env()
    )
    python = venv / "bin" / "python"
    assert not str(venv.resolve()).startswith(str(ROOT.resolve()) + os.sep)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            str(wheel),
        ],
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
            env=_clean_env(),
        ).stdout.strip()
    )
    # after the wheel: this venv's site-packages only as a fallback for the dependencies
    ours = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (site / "zz-pfscope-test-deps.pth").write_text("".join(f"{p}\n" for p in ours))
    return Installed(venv, python, venv / "bin" / "pfscope", site)


@dataclass
class Served:
    base: str
    log: Path


@pytest.fixture(scope="module")
def served(installed: Installed, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The installed ``pfscope serve`` on the worked example, started from a folder outside the checkout."""
    data = published("worked-example")
    cwd = tmp_path_factory.mktemp("wheel-cwd")
    port = _free_port()
    log = cwd / "serve.log"
    env = _clean_env(PFSCOPE_CACHE_DIR=str(cwd / "cache"), PFSCOPE_WORKERS="1")
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(installed.pfscope), "serve", "--data", str(data), "--port", str(port)],
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                pytest.fail(f"pfscope serve exited {proc.returncode}: {log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(base + "/", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"pfscope serve did not answer within 90 s: {log.read_text()[-3000:]}")
            time.sleep(0.2)  # between polls of the address, not a wait for the server
        yield Served(base, log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


class _Links(HTMLParser):
    """Every ``href``/``src`` (and ``<meta content>``, where pfscope names the deferred grid
    bundle) under ``/assets/`` or ``/_dash-component-suites/``."""

    PREFIXES = ("/assets/", "/_dash-component-suites/")

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if (
                value
                and (name in ("href", "src") or (tag == "meta" and name == "content"))
                and value.startswith(self.PREFIXES)
            ):
                self.urls.append(value)


def test_the_wheel_carries_the_assets_the_package_data_and_every_module(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert [f"pfscope/app/assets/{n}" for n in _assets() if f"pfscope/app/assets/{n}" not in names] == []
    assert [p for p in PACKAGE_DATA if p not in names] == []
    assert [m for m in _modules() if m not in names] == []  # pyproject.toml lists the packages
    # one import name: nothing beside pfscope/ but the distribution's metadata
    assert {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")} == {"pfscope"}
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)


def test_the_new_venv_imports_the_wheels_packages(installed: Installed) -> None:
    code = (
        "import dash, pfscope.app as app, pfscope.spark_jobs as spark_jobs; "
        "from pfscope.app.main import assets_folder; "
        "print(app.__file__); print(spark_jobs.__file__); print(assets_folder())"
    )
    done = subprocess.run(
        [str(installed.python), "-c", code],
        cwd=installed.venv,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    app_file, jobs_file, assets = (Path(line) for line in done.stdout.split())
    for path in (app_file, jobs_file, assets):
        assert path.is_relative_to(installed.site), path
    assert assets == installed.site / "pfscope" / "app" / "assets"
    assert sorted(p.name for p in assets.iterdir()) == _assets()


def test_the_installed_dashboard_serves_every_asset_its_page_names(served: Served) -> None:
    status, body = _get(served.base + "/")
    assert status == 200
    links = _Links()
    links.feed(body.decode("utf-8"))
    urls = list(dict.fromkeys(links.urls))
    assert urls, body[:2000]
    assert any(u.split("?")[0] == "/assets/pfscope.css" for u in urls), urls
    assert any(u.startswith("/_dash-component-suites/") for u in urls), urls
    failed = {u: s for u in urls if (s := _get(served.base + u)[0]) != 200}
    assert failed == {}, f"{failed}\n{served.log.read_text()[-2000:]}"


def test_every_file_of_the_assets_folder_is_served_as_it_is_in_the_checkout(served: Served) -> None:
    for name in _assets():
        status, body = _get(f"{served.base}/assets/{name}")
        assert status == 200, name
        assert body == (ROOT / "assets" / name).read_bytes(), name
