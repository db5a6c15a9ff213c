"""The demo organisation shows every part of the model an operator should see."""

from __future__ import annotations

from collections import Counter

from spark_jobs.model.rules.health import HEALTH_STATES
from spark_jobs.model.topology import VERSIONS

from .conftest import SimRun


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
    assert {q["kind"] for q in t["backfill_requests"]} == {"expected", "observed"}
    assert len({r["msg"] for r in t["responders"]}) >= 3
    assert any(c["unavailable"] for c in t["backfill_candidates"])
    assert any(e["new_replica"] for e in t["backfill_entries"])


def test_demo_has_a_delete_pending_replica_with_content_at_risk(demo_run: SimRun) -> None:
    pending = [r for r in demo_run.result.tables["replicas"] if r["health"] == "delete_pending"]
    assert pending and all(r["unique_count"] > 0 for r in pending)
    stores = {r["store"]: r for r in demo_run.result.tables["stores"]}
    assert stores["PFJNB02"]["status"] == "down"
