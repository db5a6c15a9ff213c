"""The dashboard's "Download report" gives the very file ``pfscope report`` writes for the same view."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import Server
from tests.e2e.test_dashboard import WE_FID, open_page
from tests.published_runs import ROOT, _env

pytestmark = pytest.mark.e2e


def command_report(data: Path, out: Path, *args: str) -> bytes:
    done = subprocess.run(
        [sys.executable, "-m", "pfscope.app.cli", "report", "--data", str(data), "--out", str(out), *args],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return out.read_bytes()


def download(page, link: str, to: Path) -> tuple[str, bytes]:  # type: ignore[no-untyped-def]
    with page.expect_download() as info:
        page.locator(link).click()
    info.value.save_as(to)
    return info.value.suggested_filename, to.read_bytes()


def test_overview_download_is_the_organisation_report(we_server: Server, page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    open_page(page, we_server.base + "/")
    name, got = download(page, "#pf-report-link", tmp_path / "dl.html")
    assert name.startswith("pfscope-") and name.endswith(".html") and WE_FID not in name
    assert got == command_report(we_server.data, tmp_path / "cmd.html")


def test_folder_download_follows_the_time_slider(we_server: Server, page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    open_page(page, we_server.base + f"/folder/{WE_FID}")
    name, got = download(page, "#folder-report-link", tmp_path / "now.html")
    assert WE_FID in name and "-at-" not in name
    assert got == command_report(we_server.data, tmp_path / "now-cmd.html", "--fid", WE_FID)

    thumb = page.locator("#folder-slider [role=slider]")
    thumb.focus()
    thumb.press("Home")
    page.wait_for_function("() => new URLSearchParams(location.search).get('at') !== null")
    page.wait_for_function("() => document.querySelector('#folder-report-link').href.includes('at=')")
    at = page.evaluate("() => new URLSearchParams(location.search).get('at')")
    name, got = download(page, "#folder-report-link", tmp_path / "past.html")
    assert "-at-" in name
    assert got == command_report(we_server.data, tmp_path / "past-cmd.html", "--fid", WE_FID, "--at", at)


def test_a_bad_report_url_answers_a_helpful_page(we_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    hostile = "<script>alert(1)</script>"
    response = page.request.get(we_server.base + "/report", params={"fid": hostile})
    assert response.status == 404
    assert response.headers["content-type"].startswith("text/html")
    assert "<script>alert" not in response.text() and "&lt;script&gt;" in response.text()
    # an unknown FID close to a real one: a 404 page whose first suggestion downloads that report
    page.goto(we_server.base + "/report?fid=" + WE_FID[:-1])
    assert page.locator("h1").inner_text() == "Report: folder not found"
    assert WE_FID[:-1] in page.locator("#pf-report-reason").inner_text()
    hrefs = page.locator("main li a").evaluate_all("as => as.map(a => a.getAttribute('href'))")
    assert f"/report?fid={WE_FID}" in hrefs and hrefs[-1] == "/report"
    # a bad time: 400, with the folder's report as of the run and its page
    response = page.request.get(we_server.base + "/report", params={"fid": WE_FID, "at": "yesterday"})
    assert response.status == 400 and "RFC 3339" in response.text()
    assert f'href="/folder/{WE_FID}"' in response.text()
