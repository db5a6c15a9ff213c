"""The demo organisation shows every part of the model an operator should see."""

from __future__ import annotations

from collections import Counter

from pfscope.spark_jobs.model.rules.health import HEALTH_STATES
from pfscope.spark_jobs.model.topology import VERSIONS
from tests.unit.simulator.conftest import SimRun


def test_demo_is_a_believable_organisation(demo_run: SimRun) -> None:
    topo = demo_run.sim.topo
    assert len(topo.sites) >= 3 and len(topo.costs) >= 2
    assert 8 <= len(topo.stores) <= 12
    versions = {s.version for s in topo.stores.values()}
    assert "2000" in versions and len(versions) >= 4 and versions <= set(VERSIONS)
    assert len(topo.folders) >= 150
    assert all("\\" in f.path for f in topo.folders.values())
    days = (demo_run.sim.end - demo_run.sim.start) / 86_400e6
    assert days == 7


def test_demo_shows_every_health_state(demo_run: SimRun) -> None:
    health = Counter(r["health"] for r in demo_run.result.tables["replicas"])
    assert set(health) == set(HEALTH_STATES)


def test_demo_shows_backfill_multi_source_and_status_requests(demo_run: SimRun) -> None:
    t = demo_run.result.tables
    assert Counter(e["state"] for e in t["backfill_entries"])["satisfied"] > 50
    per_attempt = Counter((q["entry_id"], q["attempt"]) for q in t["backfill_requests"])
    assert any(n > 1 for n in per_attempt.values()), "no multi-source request"
    assert {q["algorithm"] for q in t["backfill_requests"]} == {"2003+", "2000"}
    # the simulator sends every request the model makes, and a store that is down makes none
    # (its requests wait for it): every request in the tables was seen sent
    assert {q["kind"] for q in t["backfill_requests"]} == {"observed"}
    assert len({r["msg"] for r in t["responders"]}) >= 3
    assert any(c["unavailable"] for c in t["backfill_candidates"])
    assert any(e["new_replica"] for e in t["backfill_entries"])


def test_a_store_that_is_down_sends_nothing_and_its_requests_wait(demo_run: SimRun) -> None:
    """PFJNB02 goes down two days before the end: none of its requests is made while it is down,
    its open entries stay due at the time they fell due, and it has no overdue replica."""
    t = demo_run.result.tables
    down_at = max(
        e.ts for e in demo_run.log.in_time_order() if e.kind == "store_status" and e.store == "PFJNB02"
    )
    assert not [q for q in t["backfill_requests"] if q["observer"] == "PFJNB02" and q["at"] >= down_at]
    waiting = [e for e in t["backfill_entries"] if e["observer"] == "PFJNB02" and e["state"] == "open"]
    assert waiting and all(e["next_due_at"] is not None for e in waiting)
    assert any(e["next_due_at"] >= down_at for e in waiting)  # fell due while down: still due then
    nxt = [r for r in t["next_requests"] if r["observer"] == "PFJNB02"]
    assert nxt and all(r["waiting"] for r in nxt)
    assert all(r["health"] != "overdue" for r in t["replicas"] if r["store"] == "PFJNB02")
    assert any(r["health"] == "overdue" for r in t["replicas"])  # Dublin's lost mail: a real one


def test_demo_has_a_delete_pending_replica_with_content_at_risk(demo_run: SimRun) -> None:
    pending = [r for r in demo_run.result.tables["replicas"] if r["health"] == "delete_pending"]
    assert pending and all(r["unique_count"] > 0 for r in pending)
    stores = {r["store"]: r for r in demo_run.result.tables["stores"]}
    assert stores["PFJNB02"]["status"] == "down"
