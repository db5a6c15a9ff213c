"""The replay's what-is-so figures on the demo organisation: the numbers an administrator was
shown as each store's belief, against what every store really owns (issue: belief is not fact)."""

from __future__ import annotations

from pfscope.spark_jobs.model.cnset import CNSet
from pfscope.spark_jobs.model.timeutil import HOUR
from tests.unit.simulator.conftest import SimRun


def test_believed_unique_is_not_really_unique(demo_run: SimRun) -> None:
    rows = demo_run.result.tables["replicas"]
    believed = sum(r["unique_count"] for r in rows)
    really = sum(r["really_unique_count"] for r in rows)
    assert (believed, really) == (1185, 374)
    for r in rows:  # every believed set is one its store owned: really unique is part of believed unique
        assert CNSet.parse(r["really_unique_cnset"]).issubset(CNSet.parse(r["unique_cnset"]))


def test_content_at_risk_is_one_cn_not_eleven(demo_run: SimRun) -> None:
    at_risk = [
        (r["store"], r["fid"], r["at_risk_cnset"])
        for r in demo_run.result.tables["replicas"]
        if r["at_risk_count"]
    ]
    assert at_risk == [("PFJNB01", "1-2BFF", "PFJNB01:119")]
    down = {s["store"] for s in demo_run.result.tables["stores"] if s["status"] == "down"}
    believed = sum(r["unique_count"] for r in demo_run.result.tables["replicas"] if r["store"] in down)
    assert believed == 6  # what PFJNB02 believes only it holds: all of it is held elsewhere too


def test_lacks_has_a_known_and_a_not_told_part(demo_run: SimRun) -> None:
    (row,) = [
        r for r in demo_run.result.tables["replicas"] if (r["store"], r["fid"]) == ("PFDUB02", "1-2AB2")
    ]
    assert row["lacks_cnset"] == "PFDUB01:61,67-72" and row["lacks_count"] == 7
    assert row["missing_cnset"] == "PFDUB01:61,67,71"
    assert row["not_told_cnset"] == "PFDUB01:68-70,72" and row["not_told_count"] == 4
    for r in demo_run.result.tables["replicas"]:
        lacking, known = CNSet.parse(r["lacks_cnset"]), CNSet.parse(r["missing_cnset"])
        assert known.issubset(lacking) or not r["on_list"]
        assert CNSet.parse(r["not_told_cnset"]) == lacking.difference(known)
        if not r["on_list"]:
            assert r["lacks_count"] == 0


def test_store_periods_remember_the_outages(demo_run: SimRun) -> None:
    periods = {(p["store"], p["up_at"] is None): p for p in demo_run.result.tables["store_periods"]}
    assert set(periods) == {("PFSIN02", False), ("PFJNB02", True)}
    sin = periods[("PFSIN02", False)]
    assert sin["up_at"] - sin["down_at"] == 50 * HOUR
    (jnb,) = [s for s in demo_run.result.tables["stores"] if s["store"] == "PFJNB02"]
    assert jnb["down_since"] == periods[("PFJNB02", True)]["down_at"]
