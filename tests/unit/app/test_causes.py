"""The overview's causes: each with the consequences it explains, most urgent first."""

from __future__ import annotations

import pandas as pd

from pfscope.app.figures import at_risk_cns, causes, headline_counts

T = pd.Timestamp
AS_OF = T("2026-11-08T23:59:49Z")
STORES = pd.DataFrame([
    {"store": "PFJNB02", "status": "down", "down_since": T("2026-11-07T00:00:00Z")},
    {"store": "PFDUB01", "status": "up", "down_since": None},
    {"store": "PFRED01", "status": "up", "down_since": None},
])
REPLICAS = pd.DataFrame([
    {"store": "PFJNB02", "fid": "1-2A", "health": "in_sync", "unique_count": 6},
    {"store": "PFJNB02", "fid": "1-2B", "health": "backfilling", "unique_count": 0},
    {"store": "PFDUB01", "fid": "1-2C", "health": "overdue", "unique_count": 0},
    {"store": "PFRED01", "fid": "1-2D", "health": "delete_pending", "unique_count": 3},
    {"store": "PFRED01", "fid": "1-2E", "health": "backfilling", "unique_count": 0},
])
ENTRIES = pd.DataFrame([
    {"observer": "PFJNB02", "fid": "1-2B", "opened_at": T("2026-11-06T00:00:00Z")},
    {"observer": "PFDUB01", "fid": "1-2C", "opened_at": T("2026-11-08T01:00:00Z")},
    {"observer": "PFRED01", "fid": "1-2E", "opened_at": T("2026-11-08T20:00:00Z")},
])
NEXT = pd.DataFrame([
    {"observer": "PFDUB01", "fid": "1-2C", "due_at": T("2026-11-09T01:00:00Z"), "rank": 1, "source": "PFDUB02"},
    {"observer": "PFRED01", "fid": "1-2E", "due_at": T("2026-11-09T02:00:00Z"), "rank": 1, "source": "PFJNB02"},
])


def test_each_cause_groups_its_consequences_most_urgent_first() -> None:
    got = causes(STORES, REPLICAS, ENTRIES, NEXT, AS_OF)
    assert [(c.tier, c.title) for c in got] == [
        ("critical", "PFJNB02 down since 2026-11-07 00:00:00Z (1 d 23 h)"),
        ("critical", "1 replica leaving with content only it holds"),
        ("warning", "PFDUB01: backfill failing in 1 replica (overdue)"),
        ("info", "2 open backfill entries under way"),
    ]
    down = got[0].consequences
    assert down[0] == "6 CNs only it holds, in 1 folder: out of reach until it is back"
    assert down[1].startswith("1 open entry of its own wait")
    assert down[2] == "1 replica elsewhere will ask it next"
    assert got[2].consequences == ["1-2C: its first request did not fill it; next request 2026-11-09 01:00:00Z to PFDUB02"]


def test_content_at_risk_counts_what_only_a_down_store_holds() -> None:
    assert at_risk_cns(REPLICAS).tolist() == [0, 0, 0, 3, 0]
    assert at_risk_cns(REPLICAS, {"PFJNB02"}).tolist() == [6, 0, 0, 3, 0]
    heads = {h.key: h for h in headline_counts(STORES, REPLICAS, ENTRIES, 0)}
    assert heads["at-risk"].count == 9 and heads["at-risk"].tier == "critical"
    assert heads["open-entries"].tier == "info" and heads["overdue"].tier == "warning"
