"""The ``/plan`` page: a plan from its URL with its verdict (light, dark, 390 px), a bad action's
one line, a plan made on an older run, the form rewriting the URL, and the report download."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import expect

from pfscope.app.figures.plan import plan_href
from pfscope.spark_jobs.compute.planning import make_plan
from tests.e2e.conftest import Server, screenshot
from tests.e2e.test_attention import luminance
from tests.e2e.test_dashboard import open_page

pytestmark = pytest.mark.e2e

#: a store of the demo down for maintenance: the demo's PFDUB01 holds content only it holds
MAINTENANCE = ["down PFDUB01 at +2h until +8h"]
FOREVER = ["down PFDUB01"]


def run_id(server: Server) -> str:
    return make_plan(server.data, []).run.run_id


def test_a_plan_from_its_url_gives_the_verdict_first(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    made = make_plan(demo_server.data, FOREVER)
    assert made.result.verdict == "not safe"  # not vacuous: the demo's plan puts content at risk
    open_page(page, demo_server.base + plan_href(FOREVER, made.run.run_id))
    verdict = page.locator("#plan-verdict").inner_text()
    assert verdict.startswith("not safe: ") and made.result.reasons[0] in verdict
    reasons = page.locator("#plan-reasons li").all_inner_texts()
    assert reasons == made.result.reasons
    # the verdict comes before the tables, and each table has the plan's rows
    assert page.evaluate(
        "() => document.getElementById('plan-verdict').compareDocumentPosition("
        "document.getElementById('plan-risks')) & Node.DOCUMENT_POSITION_FOLLOWING"
    )
    assert page.locator("#plan-risks tbody tr").count() == len(made.result.at_risk)
    assert page.locator("#plan-moved tbody tr").count() == len(made.result.changed)
    assert page.locator("#plan-traffic tbody tr").count() == len(made.result.traffic)
    assert page.locator("#plan-timeline .main-svg").count() >= 1
    assert page.locator("#plan-actions li").all_inner_texts()[0].startswith(FOREVER[0])
    screenshot(page, "demo-plan")


def test_the_form_adds_an_action_and_each_can_be_removed(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    open_page(page, demo_server.base + "/plan")
    assert page.locator("#plan-verdict").count() == 0
    page.locator("#plan-store").click()
    page.get_by_role("option", name="PFDUB01", exact=True).click()
    page.locator("#plan-at").fill("+2h")
    page.locator("#plan-until").fill("+8h")
    page.locator("#plan-add").click()
    page.wait_for_selector("#plan-verdict")
    query = parse_qs(urlsplit(page.url).query)
    assert query["action"] == MAINTENANCE and query["run"] == [run_id(demo_server)]
    # a missing field says which, and leaves the URL alone
    page.locator("#plan-verb").click()
    page.get_by_role("option", name="add", exact=True).click()
    page.locator("#plan-add").click()
    page.wait_for_function("() => document.getElementById('plan-form-error').textContent.length > 0")
    assert page.locator("#plan-form-error").inner_text() == "pick a store"
    page.locator("#plan-actions .plan-remove").first.click()
    page.wait_for_function("() => !new URLSearchParams(location.search).has('action')")
    page.wait_for_selector("#plan-actions:not(ol)")
    assert page.locator("#plan-verdict").count() == 0


def test_a_bad_action_says_what_to_fix_in_one_line(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    bad = ["down PFDUB01 at +8h until +2h", "down NOPE<b>x</b>"]
    open_page(page, demo_server.base + plan_href(bad[:1]))
    line = page.locator("#plan-error").inner_text()
    assert "\n" not in line and "must end after it starts" in line and "Traceback" not in page.content()
    open_page(page, demo_server.base + plan_href(bad[1:]))
    assert "no store named 'NOPE<b>x</b>'" in page.locator("#plan-error").inner_text()
    assert page.locator("#plan-error b").count() == 0


def test_a_plan_made_on_an_older_run_says_recompute(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    open_page(page, demo_server.base + plan_href(MAINTENANCE, "20200101T000000Z-old"))
    assert (
        page.locator("#plan-stale")
        .inner_text()
        .startswith("This plan was made on run 20200101T000000Z-old; recompute"[:40])
    )
    assert page.locator("#plan-verdict").count() == 0
    page.locator("#plan-recompute").click()
    page.wait_for_selector("#plan-verdict")
    query = parse_qs(urlsplit(page.url).query)
    assert "run" not in query and query["action"] == MAINTENANCE


def test_download_report_is_the_same_plan(demo_server: Server, page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    made = make_plan(demo_server.data, FOREVER)
    open_page(page, demo_server.base + plan_href(FOREVER, made.run.run_id))
    with page.expect_download() as info:
        page.locator("#plan-report-link").click()
    assert info.value.suggested_filename == f"pfscope-plan-{made.run.run_id}.html".replace(":", "_")
    info.value.save_as(tmp_path / "plan.html")
    text = (tmp_path / "plan.html").read_text(encoding="utf-8")
    assert "<!DOCTYPE html>" in text and ">not safe: " in text
    # opened offline, it shows the verdict and draws the timeline
    page.goto((tmp_path / "plan.html").as_uri())
    assert page.locator("#verdict-line").inner_text() == "not safe: " + made.result.reasons[0]
    page.wait_for_selector("#timeline .main-svg")
    # a bad action: a one-line refusal, escaped
    response = page.request.get(demo_server.base + "/plan-report", params={"action": "down <i>x</i>"})
    assert (
        response.status == 400 and "&lt;i&gt;x&lt;/i&gt;" in response.text() and "<i>x" not in response.text()
    )


def test_the_plan_on_a_phone_and_in_the_dark(demo_server: Server, browser) -> None:  # type: ignore[no-untyped-def]
    href = demo_server.base + plan_href(FOREVER, run_id(demo_server))
    errors: list[str] = []
    phone = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    try:
        pg = phone.new_page()
        pg.on("pageerror", lambda e: errors.append(str(e)))
        open_page(pg, href)
        assert pg.locator("#plan-verdict").inner_text().startswith("not safe: ")
        assert pg.evaluate("() => document.documentElement.scrollWidth") <= 390
        for sel in ("main h1", "#plan-verdict", "#plan-reasons", ".plan-form", "#plan-timeline"):
            box = pg.locator(sel).bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, sel
        screenshot(pg, "demo-plan-390")
    finally:
        phone.close()
    dark = browser.new_context(color_scheme="dark", viewport={"width": 1400, "height": 1000})
    try:
        pg = dark.new_page()
        pg.on("pageerror", lambda e: errors.append(str(e)))
        open_page(pg, href)
        assert pg.locator("#plan-verdict").inner_text().startswith("not safe: ")
        colours = pg.locator("#plan-verdict, #plan-reasons li, .plan-field input").evaluate_all(
            "els => els.map(e => getComputedStyle(e).color)"
        )
        assert colours and all(luminance(c) > 0.4 for c in colours), colours
        screenshot(pg, "demo-plan-dark")
    finally:
        dark.close()
    assert errors == []


def test_the_store_page_links_a_maintenance_plan(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    open_page(page, demo_server.base + "/store/PFDUB01")
    page.locator("#pf-store-plan").click()
    page.wait_for_selector("#plan-verdict")
    query = parse_qs(urlsplit(page.url).query)
    assert query["action"] == ["down PFDUB01 until +4h"] and query["run"] == [run_id(demo_server)]
    made = make_plan(demo_server.data, query["action"])
    assert page.locator("#plan-verdict").inner_text().startswith(made.result.verdict)


def test_a_decommission_says_when_the_store_goes_down(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    plan = ["decommission PFDUB01"]
    made = make_plan(demo_server.data, plan)
    assert made.played.decommissioned  # not vacuous
    open_page(page, demo_server.base + plan_href(plan, made.run.run_id))
    lines = page.locator(".plan-decommissioned").all_inner_texts()
    assert len(lines) == 1 and lines[0].startswith("PFDUB01 is removed from its lists at ")
    steps = page.locator("#plan-steps tbody tr").count()
    assert steps == len(made.played.played) > 1  # its removals (and its down) as played


def test_a_plan_that_is_not_safe_offers_safe_ones_to_open(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    """The demo's PFRED03 holds content no other replica holds yet: decommissioning it now is not
    safe; the page offers plans that are (start later, add replicas first), after its verdict (a
    callback of their own: each variant plays the folders at issue again), and one opens as a plan
    whose verdict is safe."""
    plan = ["decommission PFRED03"]
    made = make_plan(demo_server.data, plan)
    assert made.result.verdict == "not safe" and made.suggestions
    open_page(page, demo_server.base + plan_href(plan, made.run.run_id))
    offered = page.locator("#plan-suggestions > li")
    expect(offered).to_have_count(len(made.suggestions))
    assert offered.first.inner_text().startswith(made.suggestions[0].why)
    offered.first.get_by_role("link", name="open this plan").click()
    expect(page.locator("#plan-verdict")).to_have_text("safe")  # the opened plan's, once it is drawn
    assert parse_qs(urlsplit(page.url).query)["action"] != plan


def test_a_restore_says_what_it_loses_and_what_it_backfills(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    from pfscope.spark_jobs.model.forecast.restore import restore_stories, story_lines
    from pfscope.spark_jobs.model.timeutil import DAY, format_ts

    as_of = make_plan(demo_server.data, []).run.as_of
    plan = [f"restore PFSIN01 from {format_ts(as_of - 4 * DAY)} at +2h"]
    made = make_plan(demo_server.data, plan)
    (story,) = restore_stories(made.played, made.result)
    open_page(page, demo_server.base + plan_href(plan, made.run.run_id))
    shown = page.locator("pre.plan-restore").inner_text()
    assert shown.splitlines() == story_lines(story)[1:]
    assert "backfills" in shown and "status request" in shown
