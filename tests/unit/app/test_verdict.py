"""The folder page's verdict: one line per unhealthy replica, most urgent first."""

from __future__ import annotations

import pandas as pd

from pfscope.app.figures import folder_verdicts

T = pd.Timestamp
AS_OF = T("2026-11-08T23:59:49Z")


def frames(**over):  # type: ignore[no-untyped-def]
    replicas = pd.DataFrame([
        {"store": "PFRED01", "health": "backfilling", "missing_count": 6, "missing_cnset": "PFDUB03:114-119",
         "unique_count": 0, "unique_cnset": "", "delete_pending_since": None},
        {"store": "PFDUB01", "health": "overdue", "missing_count": 2, "missing_cnset": "PFDUB02:5-6",
         "unique_count": 0, "unique_cnset": "", "delete_pending_since": None},
        {"store": "PFJNB02", "health": "in_sync", "missing_count": 0, "missing_cnset": "",
         "unique_count": 6, "unique_cnset": "PFJNB02:40-45", "delete_pending_since": None},
        {"store": "PFSIN01", "health": "in_sync", "missing_count": 0, "missing_cnset": "",
         "unique_count": 0, "unique_cnset": "", "delete_pending_since": None},
    ])
    entries = pd.DataFrame([
        {"entry_id": "PFRED01/1-2/1", "observer": "PFRED01", "state": "open", "requests": 0, "last_request_at": None},
        {"entry_id": "PFDUB01/1-2/1", "observer": "PFDUB01", "state": "open", "requests": 2,
         "last_request_at": T("2026-11-08T20:00:00Z")},
    ])
    nxt = pd.DataFrame([
        {"entry_id": "PFRED01/1-2/1", "observer": "PFRED01", "due_at": T("2026-11-09T07:52:00Z"), "rank": 1,
         "source": "PFDUB03", "waiting": False},
    ])
    stores = pd.DataFrame([
        {"store": s, "status": "down" if s == "PFJNB02" else "up",
         "down_since": T("2026-11-07T00:00:00Z") if s == "PFJNB02" else None}
        for s in ("PFRED01", "PFDUB01", "PFJNB02", "PFSIN01")])
    return replicas, entries, nxt, stores


def test_each_unhealthy_replica_gets_one_line_most_urgent_first() -> None:
    v = folder_verdicts(*frames(), AS_OF)
    assert [(x.store, x.tier) for x in v] == [("PFJNB02", "critical"), ("PFDUB01", "warning"), ("PFRED01", "info")]
    red = v[2].text
    assert red.startswith("PFRED01: lacks 6 CNs (PFDUB03:114-119) in 1 open entry")
    assert "next request 2026-11-09 07:52:00Z to PFDUB03" in red
    assert "its first request did not fill it: 2 requests so far, the last 2026-11-08 20:00:00Z" in v[1].text
    jnb = v[0].text
    assert "store down since 2026-11-07 00:00:00Z (1 d 23 h)" in jnb and "6 CNs only it holds (PFJNB02:40-45)" in jnb
    assert all(x.store != "PFSIN01" for x in v)  # in sync, store up: nothing to say


def test_no_holder_means_no_request_and_a_down_requester_waits() -> None:
    replicas, entries, nxt, stores = frames()
    v = {x.store: x.text for x in folder_verdicts(replicas, entries, nxt.iloc[0:0], stores, AS_OF)}
    assert "no replica is believed to hold them" in v["PFRED01"]
    stores.loc[stores["store"] == "PFRED01", ["status", "down_since"]] = ["down", T("2026-11-08T00:00:00Z")]
    v = {x.store: x.text for x in folder_verdicts(replicas, entries, nxt, stores, AS_OF)}
    assert "its next request (to PFDUB03) waits until PFRED01 comes back up" in v["PFRED01"]
