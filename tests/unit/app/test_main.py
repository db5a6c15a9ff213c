"""The app factory over HTTP (Flask's test client): auth on every route, cache choice, serve's
refusals. One app per process: Dash keeps page callbacks in module state."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from pfscope.app.cli import main
from pfscope.app.main import cache_config, create_app
from pfscope.app.settings import Settings, load_settings
from tests.published_runs import HOSTILE_LINES


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


@pytest.fixture(scope="module")
def client(we_data: Path, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    settings = load_settings(
        {
            "PFSCOPE_USER": "ops",
            "PFSCOPE_PASSWORD": "pw",
            "PFSCOPE_BEHIND_TLS_PROXY": "1",
            "PFSCOPE_CACHE_DIR": str(tmp_path_factory.mktemp("cache")),
        },
        data_dir=str(we_data),
        host="0.0.0.0",
    )
    return create_app(settings).server.test_client()


@pytest.mark.parametrize(
    "path", ["/", "/folder/1-123", "/_dash-layout", "/assets/pfscope.css", "/_dash-dependencies", "/metrics"]
)
def test_every_route_asks_for_credentials(client, path: str) -> None:  # type: ignore[no-untyped-def]
    r = client.get(path)
    assert r.status_code == 401 and r.headers["WWW-Authenticate"].startswith("Basic")
    assert client.get(path, headers=basic("ops", "wrong")).status_code == 401
    assert client.get(path, headers=basic("ops", "pw")).status_code == 200


def test_layout_names_the_published_run(client, we_data: Path) -> None:  # type: ignore[no-untyped-def]
    run_id = json.loads((we_data / "LATEST").read_text())["run_id"]
    layout = client.get("/_dash-layout", headers=basic("ops", "pw")).get_data(as_text=True)
    assert run_id in layout and "pf-search" in layout
    assert "pf-older-run" not in layout  # this version's run lacks nothing


def test_every_page_says_what_an_older_run_lacks(  # type: ignore[no-untyped-def]
    client, we_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run an earlier pfscope published (no ``store_periods``, no ``transits``): the frame
    around every page says so, and that its figures are unknown, not zero."""
    import shutil

    import pfscope.app.main as app_main
    from pfscope.app.data import RunData, require_run

    latest = json.loads((we_data / "LATEST").read_text())
    shutil.copytree(we_data / latest["path"], tmp_path / "runs" / "OLD")
    (tmp_path / "LATEST").write_text(json.dumps({"run_id": "OLD", "path": "runs/OLD"}))
    for table in ("store_periods", "transits"):
        shutil.rmtree(tmp_path / "runs" / "OLD" / table)
    monkeypatch.setattr(app_main, "current_data", lambda: RunData(require_run(tmp_path)))
    with client.application.app_context():  # the frame reads the settings (a refresh's record)
        text = json.dumps(app_main._shell().to_plotly_json(), default=str)
    assert "pf-older-run" in text and "the periods stores were down" in text and "not as zero" in text


def test_metrics_route_serves_the_exposition_of_the_published_run(client) -> None:  # type: ignore[no-untyped-def]
    r = client.get("/metrics", headers=basic("ops", "pw"))
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    text = r.get_data(as_text=True)
    assert (
        "\npfscope_run_published 1.0\n" in text
        and f'pfscope_input_lines{{outcome="rejected"}} {len(HOSTILE_LINES)}.0' in text
    )


def test_cache_is_shared_files_or_redis(tmp_path: Path) -> None:
    fs = cache_config(Settings(cache_dir=tmp_path))
    assert fs["CACHE_TYPE"] == "FileSystemCache" and fs["CACHE_DIR"] == str(tmp_path)
    redis = cache_config(Settings(redis_url="redis://127.0.0.1:6379/3"))
    assert redis["CACHE_TYPE"] == "RedisCache" and redis["CACHE_REDIS_URL"] == "redis://127.0.0.1:6379/3"


def test_serve_refuses_a_public_address_without_credentials(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PFSCOPE_USER", raising=False)
    monkeypatch.delenv("PFSCOPE_PASSWORD", raising=False)
    assert main(["serve", "--data", str(tmp_path), "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "pfscope serve: refusing to serve on 0.0.0.0 without credentials"
    )


def test_serve_refuses_a_missing_data_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--data", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"pfscope serve: {tmp_path / 'nope'}: no such folder of published runs"]


def test_gunicorn_entry_refuses_a_public_host_without_credentials(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[3]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PFSCOPE_")}
    env.update({"PYTHONPATH": str(root), "PFSCOPE_HOST": "0.0.0.0", "PFSCOPE_SERVE_DATA": str(tmp_path)})
    done = subprocess.run(
        [sys.executable, "-c", "from pfscope.app.main import server; server()"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "pfscope: refusing to serve on 0.0.0.0 without credentials: set PFSCOPE_USER and PFSCOPE_PASSWORD"
    ]


def test_gunicorn_entry_refuses_a_public_host_over_plain_http(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[3]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PFSCOPE_")}
    env.update(
        {
            "PYTHONPATH": str(root),
            "PFSCOPE_HOST": "0.0.0.0",
            "PFSCOPE_SERVE_DATA": str(tmp_path),
            "PFSCOPE_USER": "ops",
            "PFSCOPE_PASSWORD": "pw",
        }
    )
    done = subprocess.run(
        [sys.executable, "-c", "from pfscope.app.main import server; server()"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pfscope: refusing to serve on 0.0.0.0 over plain HTTP")


@pytest.mark.parametrize(
    "path, status",
    [
        ("/", 200),
        ("/glossary", 200),
        ("/backfill?overdue=1", 200),
        ("/replicas?health=overdue", 200),
        ("/folder/1-123", 200),
        ("/store/PFS1", 200),
        ("/no/such/page", 404),
        ("/folder/1-12", 404),
        ("/store/NOPE", 404),
        ("/404", 404),
    ],
)
def test_an_address_that_is_no_page_answers_404(client, path: str, status: int) -> None:  # type: ignore[no-untyped-def]
    r = client.get(path, headers=basic("ops", "pw"))
    assert r.status_code == status
    assert "<!DOCTYPE html>" in r.get_data(as_text=True)  # still the app: the page says what is close


def test_ag_grids_bundle_is_served_but_not_put_in_every_page(client) -> None:  # type: ignore[no-untyped-def]
    """app.lazy_grid: no script tag for dash_ag_grid's bundle; its address in the meta tag that
    assets/pfscope-grid.js reads, served (compressed, cacheable) like any Dash bundle."""
    import re

    html = client.get("/", headers=basic("ops", "pw")).get_data(as_text=True)
    scripts = re.findall(r'<script[^>]+src="([^"]+)"', html)
    assert any("dash_core_components" in s for s in scripts)  # the other libraries are still there
    assert not any("dash_ag_grid" in s for s in scripts)
    (src,) = re.findall(r'<meta name="pfscope-grid-src" content="([^"]+)"', html)
    assert "/_dash-component-suites/dash_ag_grid/dash_ag_grid.v" in src and src.endswith(".min.js")
    assert any(s.startswith("/assets/pfscope-grid.js") for s in scripts)
    r = client.get(src, headers={**basic("ops", "pw"), "Accept-Encoding": "gzip"})
    assert r.status_code == 200 and "javascript" in r.headers["Content-Type"]
    assert len(r.get_data()) > 100_000


def test_charts_get_plotlyjss_cartesian_bundle_after_the_credentials(client) -> None:  # type: ignore[no-untyped-def]
    """app.plotly_bundle: the address dash-renderer gives dcc.Graph answers the vendored cartesian
    bundle (the plotly package's own plotly.js version), behind the same auth, revalidated by ETag."""
    from plotly.offline import get_plotlyjs_version

    from pfscope.app.plotly_bundle import PLOTLY_PATH, VENDORED, bundle_version

    assert bundle_version() == get_plotlyjs_version()
    assert client.get("/" + PLOTLY_PATH).status_code == 401
    r = client.get("/" + PLOTLY_PATH, headers=basic("ops", "pw"))
    assert r.status_code == 200 and r.headers["X-Plotly-Bundle"] == "cartesian"
    assert r.get_data() == VENDORED.read_bytes()
    assert len(r.get_data()) < 2_000_000  # the full bundle is 4.8 MB
    again = client.get("/" + PLOTLY_PATH, headers={**basic("ops", "pw"), "If-None-Match": r.headers["ETag"]})
    assert again.status_code == 304
    assert bundle_version(VENDORED.with_name("missing.js")) is None
