"""The forecast of small logs whose future follows from the rules by hand: one round trip after
the due request, the bound's retry, mail on its way, and what blocks a replica."""

from __future__ import annotations

from typing import Any

from pfscope.spark_jobs.model.events import Message
from pfscope.spark_jobs.model.forecast.folder import duration, unblock_text
from pfscope.spark_jobs.model.forecast.tables import forecast_tables, in_flight
from pfscope.spark_jobs.model.forecast.world import Transits
from pfscope.spark_jobs.model.org import OrgContext
from pfscope.spark_jobs.model.replay import ReplayResult
from pfscope.spark_jobs.model.timeutil import format_ts
from tests.logbuilder import H, Log, M, at, one, topology

FID = "1-123"
STORES = {"P1": ("A", "2003"), "P2": ("A", "2003"), "P3": ("A", "2003")}


def play_inputs(
    log: Log, as_of: int
) -> tuple[ReplayResult, OrgContext, dict[str, list[tuple[Message, str]]], Transits]:
    """What the forecast starts from at ``as_of``: the replay (its folds), the organisation, the
    mail on its way and the pairs' transits."""
    result = log.replay(as_of=as_of)
    applied = [e for e in log.event_log().events if e.ts <= result.as_of]
    org = OrgContext.build(log.topo, (e for e in applied if e.kind == "store_status"))
    return result, org, in_flight(applied, result.as_of), Transits.from_rows(result.tables["transits"])


def forecast(log: Log, as_of: int) -> tuple[ReplayResult, list[dict[str, Any]], list[dict[str, Any]]]:
    result, org, mail, transits = play_inputs(log, as_of)
    rows, requests = forecast_tables(result.folds, org, mail, result.as_of, transits)
    return result, rows, requests


def told_by_p2(log: Log) -> None:
    """P3 makes P3:1 (P1 and P2 get it: P3 is no new replica); P1 makes P1:1-3; P2 gets them
    (5 min); P3 never gets P1's mail (expired); at 60 h P2's status message (10 min) tells P3
    that P2 holds them: P3 files a backfill entry."""
    log.changes(0, "P3", FID, [1])
    log.message(M, "P3", "content", FID, received={"P1": 11 * M, "P2": 13 * M}, changes="P3:1", cnset="P3:1")
    log.changes(0, "P1", FID, [1, 2, 3])
    log.message(15 * M, "P1", "content", FID, received={"P2": 20 * M}, changes="P1:1-3", cnset="P1:1-3")
    log.send(15 * M, "P1", "content", FID, to=["P3"], changes="P1:1-3", cnset="P1:1-3")
    log.message(60 * H, "P2", "status", FID, received={"P3": 60 * H + 10 * M}, cnset="P1:1-3")


def test_in_sync_one_round_trip_after_the_due_request() -> None:
    log = Log(topology(STORES, folders={FID: ["P1", "P2", "P3"]}))
    told_by_p2(log)
    result, rows, requests = forecast(log, 61 * H)
    entry = one(result, "backfill_entries", observer="P3", fid=FID)
    assert entry["next_due_at"] == at(66 * H + 10 * M)  # 6 hours: a local entry's first time-out
    (row,) = rows
    assert (row["store"], row["lacks_cnset"], row["lacks_count"]) == ("P3", "P1:1-3", 3)
    # P3 asks P2 (the only store it believes holds them): P3->P2 took 12 min, P2->P3 10 min
    assert row["in_sync_at"] == at(66 * H + 10 * M + 12 * M + 10 * M)
    assert (row["requests"], row["sources"], row["blocked_by"]) == (1, ["P2"], None)
    first = [q for q in requests if q["attempt"] == 1]
    assert [(q["observer"], q["source"], q["cnset"], q["outcome"]) for q in first] == [
        ("P3", "P2", "P1:1-3", "answered")
    ]
    assert first[0]["answered_at"] == row["in_sync_at"] and first[0]["entry_id"] == entry["entry_id"]


def test_the_bound_loses_the_first_reply_and_waits_for_the_retry() -> None:
    log = Log(topology(STORES, folders={FID: ["P1", "P2", "P3"]}))
    told_by_p2(log)
    _, rows, requests = forecast(log, 61 * H)
    (row,) = rows
    # the retry falls due 12 hours after the first request (the second time-out, local), to P2
    # again (no other store is believed to hold them), and is answered one round trip later
    assert row["latest_in_sync_at"] == at(66 * H + 10 * M + 12 * H + 12 * M + 10 * M)
    # ... and the baseline never needs it: its one request is answered
    assert [q["attempt"] for q in requests] == [1]


def test_mail_on_its_way_lands_at_the_pairs_typical_transit() -> None:
    log = Log(topology(STORES, folders={FID: ["P1", "P2", "P3"]}))
    log.changes(0, "P1", FID, [1])
    log.message(M, "P1", "content", FID, received={"P2": 6 * M, "P3": 8 * M}, changes="P1:1", cnset="P1:1")
    log.changes(10 * H, "P1", FID, [2])
    log.send(10 * H, "P1", "content", FID, to=["P2", "P3"], changes="P1:2", cnset="P1:1-2")
    _, rows, requests = forecast(log, 10 * H + M)
    assert {r["store"]: (r["in_sync_at"], r["sources"], r["requests"]) for r in rows} == {
        "P2": (at(10 * H + 5 * M), ["P1"], 0),  # sent 10:00, P1->P2 takes 5 min
        "P3": (at(10 * H + 7 * M), ["P1"], 0),
    }
    assert requests == []
    # sent longer ago than the pair takes: processed at the as-of
    _, rows, _ = forecast(log, 11 * H)
    assert {r["in_sync_at"] for r in rows} == {at(11 * H)}


def test_content_only_a_down_store_holds_blocks_until_it_is_back() -> None:
    log = Log(topology(STORES, folders={FID: ["P1", "P2", "P3"]}))
    log.changes(0, "P1", FID, [1, 2, 3])
    log.send(15 * M, "P1", "content", FID, to=["P2", "P3"], changes="P1:1-3", cnset="P1:1-3")
    log.message(H, "P2", "status", FID, received={"P1": H + 5 * M}, cnset="")
    log.status(10 * H, "P1", "down")
    _, rows, requests = forecast(log, 60 * H)
    assert {r["store"] for r in rows} == {"P2", "P3"}
    for r in rows:
        assert r["in_sync_at"] is None and r["latest_in_sync_at"] is None
        # nothing would tell them of P1:1-3 once P1 is back either: its mail expired long ago
        assert r["blocked_by"] == (
            f"only P1 holds P1:1-3: down since {format_ts(at(10 * H))}; "
            "still not in sync within 14 days once P1 is back"
        )
        assert (r["waits_for"], r["after_back_s"], r["latest_after_back_s"]) == (["P1"], None, None)
    assert requests == []


def test_a_replica_waiting_for_a_down_source_says_how_long_after_its_return() -> None:
    """P1's content mail is lost; its status message (00:15 the next day, 5 min) tells P2 and P3
    that P1 holds P1:1-3: they file entries; P1 goes down. With P1 back at the as-of, the entries'
    next requests go to it and are answered one round trip (5 + 5 min) later."""
    log = Log(topology(STORES, folders={FID: ["P1", "P2", "P3"]}))
    log.changes(0, "P1", FID, [1, 2, 3])
    log.send(15 * M, "P1", "content", FID, to=["P2", "P3"], changes="P1:1-3", cnset="P1:1-3")
    told = 24 * H + 15 * M
    log.message(told, "P1", "status", FID, received={"P2": told + 5 * M, "P3": told + 5 * M}, cnset="P1:1-3")
    log.status(25 * H, "P1", "down")
    result, rows, _ = forecast(log, 50 * H)
    assert {r["store"] for r in rows} == {"P2", "P3"}
    for r in rows:
        due = one(result, "backfill_entries", observer=r["store"], fid=FID)["next_due_at"]
        assert r["in_sync_at"] is None and r["waits_for"] == ["P1"]
        assert r["after_back_s"] == (due + 10 * M - result.as_of) / 1e6
        assert r["latest_after_back_s"] > r["after_back_s"]  # the bound: its first reply lost
        assert r["blocked_by"] == (
            f"only P1 holds P1:1-3: down since {format_ts(at(25 * H))}; " + unblock_text(r)
        )
        assert unblock_text(r).startswith(f"in sync ~{duration(r['after_back_s'])} after P1 is back, ")
        assert unblock_text(r).endswith(" at the latest if its queued mail expires first or a reply is lost")


def test_duration_reads_as_an_operator_says_it() -> None:
    assert [duration(s) for s in (20, 300, 7200, 9000, 86400, 3 * 86400 + 4 * 3600 + 59)] == [
        "0 min",
        "5 min",
        "2 h",
        "2 h 30 min",
        "1 d",
        "3 d 4 h",
    ]


def test_content_nobody_will_tell_of_blocks_with_that_said() -> None:
    """P1 is up and holds P1:1-3, but its content mail expired and no change or status message is
    due: nothing in the play tells P2 and P3 (Exchange waits for the next change)."""
    log = Log(topology(STORES, folders={FID: ["P1", "P2", "P3"]}))
    log.changes(0, "P1", FID, [1, 2, 3])
    log.send(15 * M, "P1", "content", FID, to=["P2", "P3"], changes="P1:1-3", cnset="P1:1-3")
    _, rows, _ = forecast(log, 60 * H)
    assert {r["store"]: r["blocked_by"] for r in rows} == {
        s: f"nothing on its way tells {s} of P1:1-3 (no change, status message or reply is due)"
        for s in ("P2", "P3")
    }


def test_a_replica_on_a_down_store_catches_up_with_nothing() -> None:
    log = Log(topology(STORES, folders={FID: ["P1", "P2", "P3"]}))
    log.status(H, "P3", "down")
    log.changes(2 * H, "P1", FID, [1])
    log.message(
        2 * H,
        "P1",
        "content",
        FID,
        received={"P2": 2 * H + 5 * M},
        to=["P2", "P3"],
        changes="P1:1",
        cnset="P1:1",
    )
    _, rows, _ = forecast(log, 3 * H)
    (row,) = rows
    assert row["store"] == "P3" and row["in_sync_at"] is None
    assert row["blocked_by"].startswith(f"P3 is down since {format_ts(at(H))}: it processes nothing")
    # its mail waits in its queue: in sync the moment it is back; the bound, should that mail
    # expire first: the next status message tells it, and it backfills
    assert (row["waits_for"], row["after_back_s"]) == (["P3"], 0.0)
    assert row["latest_after_back_s"] > 24 * 3600
    assert row["blocked_by"].endswith(
        f"; in sync as soon as P3 is back, {duration(row['latest_after_back_s'])} at the latest "
        "if its queued mail expires first or a reply is lost"
    )


def test_a_replica_that_lacks_nothing_has_no_forecast() -> None:
    log = Log(topology(STORES, folders={FID: ["P1", "P2", "P3"]}))
    log.changes(0, "P1", FID, [1])
    log.message(M, "P1", "content", FID, received={"P2": 6 * M, "P3": 8 * M}, changes="P1:1", cnset="P1:1")
    assert forecast(log, H)[1:] == ([], [])
