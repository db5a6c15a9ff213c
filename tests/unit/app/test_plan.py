"""The /plan page's pure pieces (``figures.plan``) and the plan report's escaping (``report.plan``)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

import pandas as pd
import pytest

from pfscope.app.figures import plan as fp
from pfscope.app.report.plan import plan_filename, plan_report, plan_report_response
from pfscope.spark_jobs.compute.planning import Plan
from pfscope.spark_jobs.model.cnset import CNSet
from pfscope.spark_jobs.model.forecast.actions import Decommission, ReplicaChange, Restore, StoreStatus
from pfscope.spark_jobs.model.forecast.planner import Decommissioned
from pfscope.spark_jobs.model.forecast.play import DOWN, REMOVED, Risk, Traffic
from pfscope.spark_jobs.model.forecast.suggest import Suggestion
from pfscope.spark_jobs.model.forecast.verdict import Moved, PairTraffic, PlanResult
from pfscope.spark_jobs.model.timeutil import HOUR, parse_ts

AS_OF = parse_ts("2026-11-05T00:00:00Z")


def result(fid: str = "1-2A45") -> PlanResult:
    return PlanResult(
        changed=[
            Moved("PFS2", fid, AS_OF + HOUR, AS_OF + 5 * HOUR),
            Moved("PFS3", fid, AS_OF + HOUR, None),
            Moved("PFS1", fid, None, None, removed=True),
            Moved("PFS4", fid, None, AS_OF + 6 * HOUR, lacked_before=False),
            Moved("PFS5", fid, None, AS_OF + 7 * HOUR, lacked_before=False),
        ],
        at_risk=[
            Risk(AS_OF + 2 * HOUR, "PFS2", fid, DOWN, CNSet.parse("PFS2:40-52"), AS_OF + 8 * HOUR),
            Risk(AS_OF + 3 * HOUR, "PFS1", fid, REMOVED, CNSet.parse("PFS1:7"), None),
        ],
        traffic=[PairTraffic("PFS1", "PFS2", Traffic(3, 1, 1, 13), Traffic(9, 2, 2, 26))],
        settles_at=None,
        reasons=["first reason", "second reason"],
    )


def test_the_url_carries_the_run_and_every_action_in_order() -> None:
    href = fp.plan_href(["down PFS1 at +2h until +8h", "add PFS3 to 1-2A45"], "R1")
    query = parse_qs(urlsplit(href).query)
    assert urlsplit(href).path == "/plan"
    assert query == {"run": ["R1"], "action": ["down PFS1 at +2h until +8h", "add PFS3 to 1-2A45"]}
    assert fp.plan_href([]) == "/plan"
    assert fp.plan_report_href(["up PFS1"], "R1") == "/plan-report?run=R1&action=up+PFS1"
    assert fp.actions_of("down PFS1") == ["down PFS1"]
    assert fp.actions_of(["down PFS1", " ", "up PFS1 at +1h "]) == ["down PFS1", "up PFS1 at +1h"]
    assert fp.actions_of(None) == []


@pytest.mark.parametrize(
    ("fields", "text"),
    [
        ({"verb": "down", "store": "PFS1", "at": "+2h", "until": "+8h"}, "down PFS1 at +2h until +8h"),
        ({"verb": "down", "store": "PFS1"}, "down PFS1"),
        ({"verb": "up", "store": "PFS1", "at": "+8h", "until": "+9h"}, "up PFS1 at +8h"),
        ({"verb": "remove", "store": "PFS1", "fid": "1-2A45"}, "remove PFS1 from 1-2A45"),
        ({"verb": "add", "store": "PFS3", "fid": "1-2A45", "at": "+1d"}, "add PFS3 to 1-2A45 at +1d"),
        ({"verb": "decommission", "store": "PFS1", "immediately": True}, "decommission PFS1 immediately"),
        (
            {"verb": "restore", "store": "PFS1", "backup": "2026-11-04T00:00:00Z"},
            "restore PFS1 from 2026-11-04T00:00:00Z",
        ),
    ],
)
def test_an_action_from_the_form(fields: dict[str, Any], text: str) -> None:
    assert fp.compose_action(**fields) == text


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"verb": None, "store": "PFS1"}, "pick what to do"),
        ({"verb": "down", "store": None}, "pick a store"),
        ({"verb": "add", "store": "PFS1"}, "pick a folder"),
        ({"verb": "restore", "store": "PFS1"}, "say when the backup was taken"),
        ({"verb": "down", "store": "PFS1", "at": "2026-11-05 08:00"}, "at: a time is one word"),
    ],
)
def test_a_missing_field_is_named(fields: dict[str, Any], says: str) -> None:
    with pytest.raises(ValueError, match=says):
        fp.compose_action(**fields)


def test_the_result_tables_say_before_and_after() -> None:
    r = result()
    risks = fp.risk_frame(r)
    assert risks["survives"].tolist() == ["yes: safe again at 2026-11-05T08:00:00Z", "no: lost"]
    assert risks["cause"].tolist() == ["goes down", "removed from the list"]
    assert risks["cns"].tolist() == ["PFS2:40-52", "PFS1:7"]
    moved = fp.moved_frame(r, [ReplicaChange(AS_OF, "PFS4", "1-2A45", True)])
    assert moved[["store", "before", "after"]].values.tolist() == [
        ["PFS2", "2026-11-05T01:00:00Z", "2026-11-05T05:00:00Z"],
        ["PFS3", "2026-11-05T01:00:00Z", fp.NEVER],
        ["PFS1", fp.NEVER, "removed from the list"],
        ["PFS4", "not on the list", "2026-11-05T06:00:00Z"],
        ["PFS5", "lacks nothing", "2026-11-05T07:00:00Z"],
    ]
    traffic = fp.traffic_frame(r).iloc[0].to_dict()
    assert (traffic["requests_before"], traffic["requests_after"]) == (1, 2)
    assert (traffic["cns_before"], traffic["cns_after"]) == (13, 26)
    assert (traffic["messages_before"], traffic["messages_after"]) == (3, 9)
    assert fp.verdict_line(r) == "not safe: first reason"
    assert fp.verdict_line(PlanResult()) == "safe"
    assert fp.settles_text(r).startswith("Not everything settles")
    assert "2026-11-05T05:00:00Z" in fp.settles_text(PlanResult(settles_at=AS_OF + 5 * HOUR))


def test_each_step_in_words() -> None:
    steps = [
        StoreStatus(AS_OF, "PFS1", False),
        StoreStatus(AS_OF + HOUR, "PFS1", True),
        ReplicaChange(AS_OF, "PFS3", "1-2A45", True),
        ReplicaChange(AS_OF, "PFS1", "1-2A45", False),
        Restore(AS_OF, "PFS2", AS_OF - HOUR),
        Decommission(AS_OF, "PFS4", True),
    ]
    assert fp.played_frame(steps)["what"].tolist() == [
        "PFS1 goes down",
        "PFS1 comes back",
        "PFS3 added to the list of 1-2A45",
        "PFS1 removed from the list of 1-2A45",
        "PFS2 restored from its backup of 2026-11-04T23:00:00Z",
        "PFS4 decommissioned (down at once)",
    ]


def test_the_timeline_draws_steps_risks_and_in_sync_times() -> None:
    steps = [StoreStatus(AS_OF + 2 * HOUR, "PFS2", False), StoreStatus(AS_OF + 8 * HOUR, "PFS2", True)]
    fig = fp.timeline_figure(steps, result(), AS_OF)
    by_name: dict[str, int] = {}
    for t in fig.data:
        by_name[t.name] = by_name.get(t.name, 0) + sum(x is not None for x in t.x)
    # two risk bars (two points each, in one trace), two steps, two in-sync times before, three after
    assert by_name == {
        "content at risk": 4,
        "the plan's steps": 2,
        "in sync, without the plan": 2,
        "in sync, under the plan": 3,
    }
    (risks,) = [t for t in fig.data if t.name == "content at risk"]
    assert risks.x[2] is None  # the bars apart
    assert pd.Timestamp(risks.x[4]) == pd.Timestamp(AS_OF + 8 * HOUR, unit="us", tz="UTC")  # lost: to the end
    assert list(fig.layout.yaxis.categoryarray) == ["PFS5", "PFS4", "PFS3", "PFS2", "PFS1"]


def test_the_folder_picker_offers_what_the_verb_can_name() -> None:
    folders = pd.DataFrame(
        {
            "fid": ["1-3", "1-1", "1-2"],
            "path": ["IPM_SUBTREE\\C", "IPM_SUBTREE\\A", "IPM_SUBTREE\\B"],
            "replicas": [["PFS1"], ["PFS1", "PFS2"], ["PFS2"]],
        }
    )
    values = lambda opts: [o["value"] for o in opts]  # noqa: E731
    assert values(fp.folder_options(folders, "PFS1", False, "", None, 10)) == ["1-1", "1-3"]
    assert values(fp.folder_options(folders, "PFS1", True, "", None, 10)) == ["1-2"]
    assert values(fp.folder_options(folders, "PFS1", False, "\\c", None, 10)) == ["1-3"]
    assert values(fp.folder_options(folders, "PFS1", False, "", "1-3", 1)) == ["1-3", "1-1"]


def test_the_report_escapes_what_comes_from_the_data() -> None:
    hostile = "<script>x</script>"
    plan = SimpleNamespace(
        result=result(hostile),
        run=SimpleNamespace(run_id="R<1>", as_of=AS_OF),
        played=SimpleNamespace(
            played=[ReplicaChange(AS_OF, "PFS1", hostile, False)],
            decommissioned=[Decommissioned("PFS<9>", AS_OF, None)],
        ),
        suggestions=[Suggestion(f"wait for {hostile}", [ReplicaChange(AS_OF, "PFS2", hostile, True)])],
    )
    page = plan_report(cast(Plan, plan), [f"remove PFS1 from {hostile}"])
    assert "<script>x" not in page and "&lt;script&gt;x&lt;/script&gt;" in page
    assert "wait for &lt;script&gt;" in page and "add PFS2 to &lt;script&gt;x&lt;/script&gt; at" in page
    assert "R&lt;1&gt;" in page and "not safe: first reason" in page
    assert (
        "PFS&lt;9&gt; is removed from its lists at 2026-11-05T00:00:00Z and goes down not within 14 days"
        in page
    )
    assert plan_filename("20261105T000000Z-ab:c") == "pfscope-plan-20261105T000000Z-ab_c.html"


def test_a_stores_list_changes_at_one_time_are_one_step_on_the_timeline() -> None:
    """A decommission removes its store from thousands of lists at once: one diamond says so."""
    removals = [ReplicaChange(AS_OF, "PFS4", f"1-{i}", False) for i in range(3000)]
    steps = [*removals, ReplicaChange(AS_OF, "PFS4", "1-X", True), StoreStatus(AS_OF + HOUR, "PFS4", False)]
    assert fp.step_groups(steps) == [
        (AS_OF, "PFS4", "PFS4 added to the list of 1-X"),
        (AS_OF, "PFS4", "PFS4 removed from the lists of 3,000 folders"),
        (AS_OF + HOUR, "PFS4", "PFS4 goes down"),
    ]
    (marks,) = [t for t in fp.timeline_figure(steps, result(), AS_OF).data if t.name == "the plan's steps"]
    assert len(marks.x) == 3


def test_the_timeline_escapes_what_plotly_would_read_as_tags() -> None:
    hostile = "<b>1-2</b>"
    fig = fp.timeline_figure([ReplicaChange(AS_OF, "PFS1", hostile, False)], result(hostile), AS_OF)
    hovers = [h for t in fig.data for h in ([t.hovertext] if isinstance(t.hovertext, str) else t.hovertext)]
    hovers = [h for h in hovers if h is not None]  # the gaps between risk bars
    assert hovers and all("<b>" not in h and "&lt;b&gt;1-2&lt;/b&gt;" in h for h in hovers)


def test_the_report_route_refuses_a_stale_or_empty_plan_in_one_line(tmp_path: Any) -> None:
    status, page, name = plan_report_response(tmp_path, "R2", ["down PFS1"], "R<1>")
    assert (status, name) == (409, None)
    assert "This plan was made on run R&lt;1&gt;; recompute it on run R2." in page
    status, page, name = plan_report_response(tmp_path, "R2", [], None)
    assert (status, name) == (400, None) and "The plan has no action" in page
    # no published run in the folder: the planner's one line, not a traceback
    status, page, name = plan_report_response(tmp_path, "R2", ["down PFS1"], None)
    assert status == 400 and "no published run to plan on" in page


def test_the_page_lists_the_first_reasons_and_counts_the_rest() -> None:
    reasons = [f"reason {i}" for i in range(5)]
    assert fp.first_reasons(reasons, 5) == (reasons, None)
    assert fp.first_reasons(reasons, 3) == (reasons[:3], "… and 2 more: the report lists every one.")


def test_thousands_of_moved_replicas_are_drawn_as_each_store_s_span() -> None:
    """A decommission moves thousands of replicas: the timeline draws, per store and side, its
    first and last in-sync time joined (the table and the report list each replica)."""
    moved = [
        Moved(store, f"1-{i}", AS_OF + i * HOUR, AS_OF + (i + 2) * HOUR)
        for store in ("PFS1", "PFS2")
        for i in range(fp.MOVED_MARKERS)
    ]
    fig = fp.timeline_figure([], PlanResult(changed=moved), AS_OF)
    (after,) = [t for t in fig.data if t.name == "in sync, under the plan"]
    assert list(after.y) == ["PFS1", "PFS1", None, "PFS2", "PFS2", None]
    assert pd.Timestamp(after.x[1]) == pd.Timestamp(
        AS_OF + (fp.MOVED_MARKERS + 1) * HOUR, unit="us", tz="UTC"
    )
    assert after.hovertext[0].startswith(
        f"{fp.MOVED_MARKERS:,} replicas of PFS1 in sync, under the plan between "
    )
    few = fp.timeline_figure([], PlanResult(changed=moved[:3]), AS_OF)
    (markers,) = [t for t in few.data if t.name == "in sync, under the plan"]
    assert len(markers.x) == 3 and markers.mode == "markers"


def test_the_page_makes_and_draws_a_plan_with_the_collector_paused(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The /plan page makes and draws a plan with the cyclic garbage collector paused (its scans
    cost a restore's page about 0.5 s: docs/performance.md) and turns it back on after, also when
    the plan is refused."""
    import gc
    import sys

    from pfscope.app.main import create_app
    from pfscope.app.settings import Settings
    from pfscope.spark_jobs.model.forecast.plan import PlanError

    app = create_app(Settings(data_dir=tmp_path, cache_dir=tmp_path / "cache"))
    page = sys.modules["pfscope.app.pages.plan"]
    seen: list[bool] = []

    def made(*_args: Any) -> str:
        seen.append(gc.isenabled())
        return "the plan"

    def shown(_data: Any, plan: str, _actions: list[str]) -> list[str]:
        seen.append(gc.isenabled())
        return [plan]

    monkeypatch.setattr(page, "_made", made)
    monkeypatch.setattr(page, "_shown", shown)
    data = SimpleNamespace(run_id="r1")
    assert gc.isenabled()
    with app.server.app_context():
        assert page._result(data, ["down PFS1"]) == ["the plan"]
        assert seen == [False, False] and gc.isenabled()

        def refused(*_args: Any) -> str:
            seen.append(gc.isenabled())
            raise PlanError("no store named 'PFS9'")

        monkeypatch.setattr(page, "_made", refused)
        (banner,) = page._result(data, ["down PFS9"])
    assert banner.id == "plan-error" and seen[-1] is False and gc.isenabled()
