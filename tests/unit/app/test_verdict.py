"""The folder page's verdict: one line per unhealthy replica, most urgent first."""

from __future__ import annotations

import pandas as pd

from pfscope.app.figures import folder_verdicts

T = pd.Timestamp
AS_OF = T("2026-11-08T23:59:49Z")


def frames(**over):  # type: ignore[no-untyped-def]
    # missing_* and unique_* are each store's belief; lacks_*, not_told_*, really_unique_* and
    # at_risk_* are what is so
    replicas = pd.DataFrame(
        [
            {
                "store": "PFRED01",
                "health": "backfilling",
                "missing_count": 6,
                "missing_cnset": "PFDUB03:114-119",
                "unique_count": 0,
                "unique_cnset": "",
                "delete_pending_since": None,
                "lacks_count": 6,
                "lacks_cnset": "PFDUB03:114-119",
                "not_told_count": 0,
                "not_told_cnset": "",
                "really_unique_count": 0,
                "at_risk_count": 0,
                "at_risk_cnset": "",
            },
            {
                "store": "PFDUB01",
                "health": "overdue",
                "missing_count": 2,
                "missing_cnset": "PFDUB02:5-6",
                "unique_count": 0,
                "unique_cnset": "",
                "delete_pending_since": None,
                "lacks_count": 7,
                "lacks_cnset": "PFDUB02:5-11",
                "not_told_count": 5,
                "not_told_cnset": "PFDUB02:7-11",
                "really_unique_count": 0,
                "at_risk_count": 0,
                "at_risk_cnset": "",
            },
            {
                "store": "PFJNB02",
                "health": "in_sync",
                "missing_count": 0,
                "missing_cnset": "",
                "unique_count": 6,
                "unique_cnset": "PFJNB02:40-45",
                "delete_pending_since": None,
                "lacks_count": 0,
                "lacks_cnset": "",
                "not_told_count": 0,
                "not_told_cnset": "",
                "really_unique_count": 0,
                "at_risk_count": 0,
                "at_risk_cnset": "",
            },
            {
                "store": "PFSIN01",
                "health": "in_sync",
                "missing_count": 0,
                "missing_cnset": "",
                "unique_count": 0,
                "unique_cnset": "",
                "delete_pending_since": None,
                "lacks_count": 1,
                "lacks_cnset": "PFRED01:3",
                "not_told_count": 1,
                "not_told_cnset": "PFRED01:3",
                "really_unique_count": 0,
                "at_risk_count": 0,
                "at_risk_cnset": "",
            },
            {
                "store": "PFSIN02",
                "health": "in_sync",
                "missing_count": 0,
                "missing_cnset": "",
                "unique_count": 0,
                "unique_cnset": "",
                "delete_pending_since": None,
                "lacks_count": 0,
                "lacks_cnset": "",
                "not_told_count": 0,
                "not_told_cnset": "",
                "really_unique_count": 0,
                "at_risk_count": 0,
                "at_risk_cnset": "",
            },
        ]
    )
    entries = pd.DataFrame(
        [
            {
                "entry_id": "PFRED01/1-2/1",
                "observer": "PFRED01",
                "state": "open",
                "requests": 0,
                "last_request_at": None,
            },
            {
                "entry_id": "PFDUB01/1-2/1",
                "observer": "PFDUB01",
                "state": "open",
                "requests": 2,
                "last_request_at": T("2026-11-08T20:00:00Z"),
            },
        ]
    )
    nxt = pd.DataFrame(
        [
            {
                "entry_id": "PFRED01/1-2/1",
                "observer": "PFRED01",
                "due_at": T("2026-11-09T07:52:00Z"),
                "rank": 1,
                "source": "PFDUB03",
                "waiting": False,
            },
        ]
    )
    stores = pd.DataFrame(
        [
            {
                "store": s,
                "status": "down" if s == "PFJNB02" else "up",
                "down_since": T("2026-11-07T00:00:00Z") if s == "PFJNB02" else None,
            }
            for s in ("PFRED01", "PFDUB01", "PFJNB02", "PFSIN01", "PFSIN02")
        ]
    )
    return replicas, entries, nxt, stores


def test_each_unhealthy_replica_gets_one_line_most_urgent_first() -> None:
    v = folder_verdicts(*frames(), AS_OF)
    assert [(x.store, x.tier) for x in v] == [
        ("PFDUB01", "warning"),
        ("PFJNB02", "warning"),
        ("PFRED01", "info"),
        ("PFSIN01", "info"),
    ]
    red = v[2].text
    assert red == (
        "PFRED01: lacks 6 CNs (PFDUB03:114-119), all of which it knows of: backfill in 1 open entry; "
        "next request 2026-11-09 07:52:00Z to PFDUB03."
    )
    assert "its first request did not fill it: 2 requests so far, the last 2026-11-08 20:00:00Z" in v[0].text
    jnb = v[1].text
    # a down store's belief is said to be its belief, with what is so: nothing of it is at risk
    assert jnb == (
        "PFJNB02: store down since 2026-11-07 00:00:00Z (1 d 23 h): its health here is as last known; "
        "PFJNB02 believes 6 CNs (PFJNB02:40-45) are only there; all 6 are on other replicas: nothing "
        "here is at risk."
    )
    assert all(x.store != "PFSIN02" for x in v)  # in sync, lacks nothing, store up: nothing to say


def test_lacks_in_two_parts_known_missing_and_not_told_yet() -> None:
    v = {x.store: x.text for x in folder_verdicts(*frames(), AS_OF)}
    assert v["PFDUB01"] == (
        "PFDUB01: lacks 7 CNs (PFDUB02:5-11): 2 it knows of (PFDUB02:5-6: backfill in 1 open entry; its first "
        "request did not fill it: 2 requests so far, the last 2026-11-08 20:00:00Z; no replica is believed to hold "
        "them, so no request will go out until one says it does), 5 it has not been told of (PFDUB02:7-11): they "
        "arrive, or PFDUB01 learns of them, with the next message from a store that holds them."
    )
    # in sync never hides what a replica lacks
    assert v["PFSIN01"] == (
        "PFSIN01: in sync (no backfill entry), lacks 1 CN (PFRED01:3): not told yet: it arrives, "
        "or PFSIN01 learns of it, with the next message from a store that holds it."
    )


def test_content_at_risk_is_what_only_it_holds_beside_its_belief() -> None:
    replicas, entries, nxt, stores = frames()
    replicas.loc[
        replicas["store"] == "PFJNB02", ["really_unique_count", "at_risk_count", "at_risk_cnset"]
    ] = [2, 2, "PFJNB02:44-45"]
    jnb = {x.store: x for x in folder_verdicts(replicas, entries, nxt, stores, AS_OF)}["PFJNB02"]
    assert jnb.tier == "critical"
    assert jnb.text.endswith(
        "PFJNB02 holds PFJNB02:44-45 (2 CNs) alone: at risk while it is down; PFJNB02 believes "
        "6 CNs (PFJNB02:40-45) are only there; 4 of them are on other replicas."
    )
    pending = replicas[replicas["store"] == "PFJNB02"].assign(
        health="delete_pending", delete_pending_since=T("2026-11-08T20:00:00Z")
    )
    gone = folder_verdicts(pending, entries, nxt, stores.assign(status="up"), AS_OF)[0]
    assert (gone.tier, gone.text) == (
        "critical",
        "PFJNB02: left the replica list 2026-11-08 20:00:00Z; PFJNB02 holds "
        "PFJNB02:44-45 (2 CNs) alone: at risk until another replica holds it; PFJNB02 "
        "believes 6 CNs (PFJNB02:40-45) are only there; 4 of them are on other replicas: "
        "it is deleted once it believes none is.",
    )
    # believed unique but held elsewhere: leaving, nothing at risk
    safe = pending.assign(really_unique_count=0, at_risk_count=0, at_risk_cnset="")
    gone = folder_verdicts(safe, entries, nxt, stores.assign(status="up"), AS_OF)[0]
    assert gone.tier == "warning" and "nothing only it holds; PFJNB02 believes 6 CNs" in gone.text


def test_no_holder_means_no_request_and_a_down_requester_waits() -> None:
    replicas, entries, nxt, stores = frames()
    v = {x.store: x.text for x in folder_verdicts(replicas, entries, nxt.iloc[0:0], stores, AS_OF)}
    assert "no replica is believed to hold them" in v["PFRED01"]
    stores.loc[stores["store"] == "PFRED01", ["status", "down_since"]] = ["down", T("2026-11-08T00:00:00Z")]
    v = {x.store: x.text for x in folder_verdicts(replicas, entries, nxt, stores, AS_OF)}
    assert "its next request (to PFDUB03) waits until PFRED01 comes back up" in v["PFRED01"]


def test_each_line_ends_with_the_replicas_forecast() -> None:
    """In sync by when, via whom, and the bound; or why it will not catch up; nothing for a
    replica the forecast has no row for (it lacks nothing)."""
    replicas, entries, nxt, stores = frames()
    forecast = pd.DataFrame(
        [
            {
                "store": "PFRED01",
                "in_sync_at": T("2026-11-09T08:05:00Z"),
                "latest_in_sync_at": T("2026-11-10T08:20:00Z"),
                "sources": ["PFDUB03"],
                "blocked_by": None,
            },
            {
                "store": "PFSIN01",
                "in_sync_at": T("2026-11-09T00:10:00Z"),
                "latest_in_sync_at": T("2026-11-09T00:10:00Z"),
                "sources": ["PFRED01"],
                "blocked_by": None,
            },
            {
                "store": "PFDUB01",
                "in_sync_at": None,
                "latest_in_sync_at": None,
                "sources": [],
                "blocked_by": "only PFJNB02 holds PFDUB02:5-11: down since 2026-11-07T00:00:00Z",
            },
        ]
    )
    lines = {v.store: v.text for v in folder_verdicts(replicas, entries, nxt, stores, AS_OF, forecast)}
    assert lines["PFRED01"].endswith(
        "; forecast: in sync by ~Mon 11-09 08:05 via PFDUB03, Tue 11-10 08:20 at the latest if a reply is lost."
    )
    assert lines["PFSIN01"].endswith(
        "forecast: in sync by ~Mon 11-09 00:10 via PFRED01 (a lost reply would not delay it)."
    )
    assert lines["PFDUB01"].endswith(
        "forecast: will not catch up within 14 days: only PFJNB02 holds PFDUB02:5-11: down since 2026-11-07T00:00:00Z."
    )
    assert "forecast" not in lines["PFJNB02"]  # down, but lacks nothing: no forecast row
    # without the table (an older run), no forecast is said
    assert all("forecast" not in v.text for v in folder_verdicts(replicas, entries, nxt, stores, AS_OF))


def test_a_verdict_keeps_its_forecast_apart_for_the_link_to_its_explanation() -> None:
    """The folder page makes a line's forecast a link: the verdict says which words it is, and the
    rest of the line before it; a line without a forecast is its own head."""
    replicas, entries, nxt, stores = frames()
    forecast = pd.DataFrame(
        [
            {
                "store": "PFRED01",
                "in_sync_at": T("2026-11-09T08:05:00Z"),
                "latest_in_sync_at": T("2026-11-10T08:20:00Z"),
                "sources": ["PFDUB03"],
                "blocked_by": None,
            }
        ]
    )
    by_store = {v.store: v for v in folder_verdicts(replicas, entries, nxt, stores, AS_OF, forecast)}
    red = by_store["PFRED01"]
    assert red.forecast == (
        "forecast: in sync by ~Mon 11-09 08:05 via PFDUB03, Tue 11-10 08:20 at the latest if a reply is lost"
    )
    assert red.head() + red.forecast + "." == red.text and red.head().endswith("; ")
    dub = by_store["PFDUB01"]
    assert dub.forecast == "" and dub.head() == dub.text
