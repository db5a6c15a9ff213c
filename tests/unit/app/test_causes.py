"""The overview's causes: each with the consequences it explains, most urgent first."""

from __future__ import annotations

import pandas as pd

from pfscope.app.figures import at_risk_cns, causes, headline_counts

T = pd.Timestamp
AS_OF = T("2026-11-08T23:59:49Z")
STORES = pd.DataFrame(
    [
        {"store": "PFJNB02", "status": "down", "down_since": T("2026-11-07T00:00:00Z")},
        {"store": "PFDUB01", "status": "up", "down_since": None},
        {"store": "PFRED01", "status": "up", "down_since": None},
    ]
)
# unique_count is each store's belief; really_unique_count and at_risk_count are what is so
REPLICAS = pd.DataFrame(
    [
        {
            "store": "PFJNB02",
            "fid": "1-2A",
            "health": "in_sync",
            "unique_count": 6,
            "really_unique_count": 0,
            "at_risk_count": 0,
            "at_risk_cnset": "",
        },
        {
            "store": "PFJNB02",
            "fid": "1-2B",
            "health": "backfilling",
            "unique_count": 0,
            "really_unique_count": 0,
            "at_risk_count": 0,
            "at_risk_cnset": "",
        },
        {
            "store": "PFDUB01",
            "fid": "1-2C",
            "health": "overdue",
            "unique_count": 0,
            "really_unique_count": 0,
            "at_risk_count": 0,
            "at_risk_cnset": "",
        },
        {
            "store": "PFRED01",
            "fid": "1-2D",
            "health": "delete_pending",
            "unique_count": 3,
            "really_unique_count": 1,
            "at_risk_count": 1,
            "at_risk_cnset": "PFRED01:9",
        },
        {
            "store": "PFRED01",
            "fid": "1-2E",
            "health": "backfilling",
            "unique_count": 0,
            "really_unique_count": 0,
            "at_risk_count": 0,
            "at_risk_cnset": "",
        },
        {
            "store": "PFSIN01",
            "fid": "1-2F",
            "health": "delete_pending",
            "unique_count": 2,
            "really_unique_count": 0,
            "at_risk_count": 0,
            "at_risk_cnset": "",
        },
    ]
)
ENTRIES = pd.DataFrame(
    [
        {"observer": "PFJNB02", "fid": "1-2B", "opened_at": T("2026-11-06T00:00:00Z")},
        {"observer": "PFDUB01", "fid": "1-2C", "opened_at": T("2026-11-08T01:00:00Z")},
        {"observer": "PFRED01", "fid": "1-2E", "opened_at": T("2026-11-08T20:00:00Z")},
    ]
)
NEXT = pd.DataFrame(
    [
        {
            "observer": "PFDUB01",
            "fid": "1-2C",
            "due_at": T("2026-11-09T01:00:00Z"),
            "rank": 1,
            "source": "PFDUB02",
        },
        {
            "observer": "PFRED01",
            "fid": "1-2E",
            "due_at": T("2026-11-09T02:00:00Z"),
            "rank": 1,
            "source": "PFJNB02",
        },
    ]
)


def test_each_cause_groups_its_consequences_most_urgent_first() -> None:
    got = causes(STORES, REPLICAS, ENTRIES, NEXT, AS_OF)
    assert [(c.tier, c.title) for c in got] == [
        ("critical", "PFJNB02 down since 2026-11-07 00:00:00Z (1 d 23 h)"),
        ("critical", "1 replica leaving with content only it holds"),
        ("warning", "PFDUB01: backfill failing in 1 replica (overdue)"),
        ("info", "1 replica waiting to be deleted: nothing at risk"),
        ("info", "2 open backfill entries under way"),
    ]
    down = got[0].consequences
    # PFJNB02's belief, said to be its belief, with what is so: nothing only it holds
    assert down[0] == (
        "no content only it holds: PFJNB02 believes 6 CNs are only there, in 1 folder; "
        "all 6 are on other replicas"
    )
    assert down[1].startswith("1 open entry of its own wait")
    assert down[2] == "1 replica elsewhere will ask it next"
    assert got[1].consequences == [
        "PFRED01 in 1-2D: PFRED01 holds PFRED01:9 alone: at risk until another replica "
        "holds it; PFRED01 believes 3 CNs are only there; 2 of them are on other "
        "replicas; it is deleted once it believes none is"
    ]
    assert got[2].consequences == [
        "1-2C: its first request did not fill it; next request 2026-11-09 01:00:00Z to PFDUB02"
    ]
    assert got[3].consequences == [
        "PFSIN01 in 1-2F: nothing only it holds; PFSIN01 believes 2 CNs are only there; "
        "both are on other replicas; it is deleted once it believes none is"
    ]


def test_a_down_store_holding_content_alone_says_how_much_and_what_it_believes() -> None:
    replicas = REPLICAS.copy()
    replicas.loc[0, ["really_unique_count", "at_risk_count"]] = [2, 2]
    down = causes(STORES, replicas, ENTRIES, NEXT, AS_OF)[0].consequences
    assert down[0] == (
        "2 CNs only it holds, in 1 folder: out of reach until it is back (PFJNB02 believes 6 CNs "
        "are only there, in 1 folder; 4 of them are on other replicas)"
    )


def test_content_at_risk_is_what_is_so_never_a_belief() -> None:
    assert at_risk_cns(REPLICAS).tolist() == [0, 0, 0, 1, 0, 0]
    heads = {h.key: h for h in headline_counts(STORES, REPLICAS, ENTRIES, 0)}
    assert heads["at-risk"].count == 1 and heads["at-risk"].tier == "critical"
    assert (
        heads["at-risk"].label == "CN of content at risk" and heads["at-risk"].href == "/replicas?at_risk=1"
    )
    assert heads["open-entries"].tier == "info" and heads["overdue"].tier == "warning"
    # a run published before the column: nothing counted, never the belief instead
    assert at_risk_cns(REPLICAS.drop(columns="at_risk_count")).tolist() == [0] * len(REPLICAS)
