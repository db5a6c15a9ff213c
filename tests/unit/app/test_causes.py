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


def _entry(entry_id: str, opened: str, requests: int, due: str) -> dict[str, object]:
    observer, fid, _n = entry_id.split("/")
    return {
        "entry_id": entry_id,
        "observer": observer,
        "fid": fid,
        "opened_at": T(opened),
        "requests": requests,
        "next_due_at": T(due),
    }


ENTRIES = pd.DataFrame(
    [
        _entry("PFJNB02/1-2B/1", "2026-11-06T00:00:00Z", 1, "2026-11-06T06:00:00Z"),
        _entry("PFDUB01/1-2C/1", "2026-11-08T01:00:00Z", 2, "2026-11-09T01:00:00Z"),
        _entry("PFRED01/1-2E/1", "2026-11-08T20:00:00Z", 0, "2026-11-09T02:00:00Z"),
    ]
)


def _next(entry_id: str, due: str, source: str, cnset: str) -> dict[str, object]:
    observer, fid, _n = entry_id.split("/")
    return {
        "entry_id": entry_id,
        "observer": observer,
        "fid": fid,
        "due_at": T(due),
        "rank": 1,
        "source": source,
        "cnset": cnset,
        "waiting": False,
    }


NEXT = pd.DataFrame(
    [
        _next("PFDUB01/1-2C/1", "2026-11-09T01:00:00Z", "PFDUB02", "PFRED01:4"),
        _next("PFRED01/1-2E/1", "2026-11-09T02:00:00Z", "PFJNB02", "PFDUB01:7"),
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
        "1-2C: its overdue entry PFDUB01/1-2C/1 (opened 2026-11-08 01:00:00Z, 2 requests: the first did not "
        "fill it); next request 2026-11-09 01:00:00Z: PFDUB02 for PFRED01:4"
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


def test_an_overdue_cause_speaks_of_the_longest_open_overdue_entry_and_its_own_next_request() -> None:
    """The demo's trap: a younger entry of the same replica is due first; the cause must not give
    its time. It names the longest-open overdue entry, as the /backfill grid lists it first."""
    entries = pd.concat(
        [
            ENTRIES,
            pd.DataFrame(
                [
                    _entry("PFDUB01/1-2C/2", "2026-11-08T03:00:00Z", 3, "2026-11-09T05:00:00Z"),
                    _entry("PFDUB01/1-2C/3", "2026-11-08T22:00:00Z", 0, "2026-11-08T23:00:00Z"),
                ]
            ),
        ],
        ignore_index=True,
    )
    nxt = pd.concat(
        [NEXT, pd.DataFrame([_next("PFDUB01/1-2C/3", "2026-11-08T23:00:00Z", "PFRED01", "PFRED01:9")])],
        ignore_index=True,
    )
    overdue = next(c for c in causes(STORES, REPLICAS, entries, nxt, AS_OF) if c.tier == "warning")
    assert overdue.href == "/backfill?observer=PFDUB01&overdue=1"
    assert overdue.consequences == [
        "1-2C: the longest open of its 2 overdue entries, PFDUB01/1-2C/1 (opened 2026-11-08 01:00:00Z, "
        "2 requests: the first did not fill it); next request 2026-11-09 01:00:00Z: PFDUB02 for PFRED01:4"
    ]
    # an overdue entry no store is believed to hold the CNs of says so, never another entry's request
    alone = causes(STORES, REPLICAS, entries, nxt[nxt["entry_id"] != "PFDUB01/1-2C/1"], AS_OF)
    line = next(c for c in alone if c.tier == "warning").consequences[0]
    assert line.endswith("next request 2026-11-09 01:00:00Z: none: no replica is believed to hold these CNs")


def _ahead(
    store: str, fid: str, at: str | None, latest: str | None, why: str | None = None
) -> dict[str, object]:
    return {
        "store": store,
        "fid": fid,
        "in_sync_at": T(at) if at else pd.NaT,
        "latest_in_sync_at": T(latest) if latest else pd.NaT,
        "sources": ["PFDUB02"] if at else [],
        "blocked_by": why,
    }


DOWN_WHY = "PFJNB02 is down since 2026-11-07T00:00:00Z: it processes nothing until it is back"
FORECAST = pd.DataFrame(
    [
        _ahead("PFJNB02", "1-2A", None, None, DOWN_WHY),
        _ahead("PFJNB02", "1-2B", None, None, DOWN_WHY),
        _ahead("PFDUB01", "1-2C", "2026-11-09T01:20:00Z", "2026-11-09T13:30:00Z"),
        _ahead(
            "PFRED01", "1-2E", None, None, "only PFJNB02 holds PFJNB02:5: down since 2026-11-07T00:00:00Z"
        ),
    ]
)


def test_each_line_about_replicas_that_lack_cns_ends_with_their_forecast() -> None:
    got = causes(STORES, REPLICAS, ENTRIES, NEXT, AS_OF, FORECAST)
    down = got[0].consequences
    # the down store's own replicas: all of them held back, and why
    assert (
        "2 replicas of its own lack CNs; forecast: all 2 replicas will not catch up within 14 days: "
        + DOWN_WHY
    ) in down
    # the replica elsewhere that will ask it next: its own forecast
    assert down[-1] == (
        "1 replica elsewhere will ask it next; forecast: will not catch up within 14 days: only PFJNB02 holds "
        "PFJNB02:5: down since 2026-11-07T00:00:00Z"
    )
    overdue = next(c for c in got if c.tier == "warning").consequences
    assert overdue[0].endswith(
        "; forecast: in sync by ~Mon 11-09 01:20 via PFDUB02, Mon 11-09 13:30 at the latest if a reply is lost"
    )
    # the backfill under way (entries of PFDUB01 and PFRED01, not of the down store): the last in
    # sync, at the latest, and how many will not catch up
    under_way = got[-1].consequences[0]
    assert under_way.endswith(
        "forecast: 1 replica in sync by ~Mon 11-09 01:20 (Mon 11-09 13:30 at the latest); 1 replica will not "
        "catch up within 14 days: only PFJNB02 holds CNs it lacks: down since 2026-11-07T00:00:00Z"
    )
    # a line about replicas without a forecast (they lack nothing) is as before
    assert got[1].consequences == causes(STORES, REPLICAS, ENTRIES, NEXT, AS_OF)[1].consequences
    # without the forecast (a run published before it): no line says one
    assert not any(
        "forecast" in line for c in causes(STORES, REPLICAS, ENTRIES, NEXT, AS_OF) for line in c.consequences
    )
