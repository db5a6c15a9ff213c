"""A store that is down sends nothing: its requests wait for it (replication-model.md).

P1 learns at 1 h (a status message from P2) that P2 holds P2:1-5, which P1 lacks: an entry opens,
local (same site), first request due 6 h later (7 h), the second 12 h after that (19 h). P1 goes
down and up at every point of the entry's life; the source P2 goes down too.
"""

from __future__ import annotations

import pytest

from pfscope.spark_jobs.model.events import EventLog
from tests.logbuilder import H, Log, M, at, rows, topology

FID = "1-123"

TOPO = topology(
    {"P1": ("A", "2003"), "P2": ("A", "2003"), "P3": ("A", "2003")}, folders={FID: ["P1", "P2", "P3"]}
)


def opened_log() -> Log:
    log = Log(TOPO)
    log.change(10 * M, "P1", FID, 1)  # P1 holds something: not a new replica (6 h, not 15 minutes)
    log.message(1 * H, "P2", "status", FID, to=["P1"], cnset="P2:1-5", received={"P1": 1 * H})
    return log


def requests(log: Log, as_of: int) -> list[tuple[int, str, str]]:
    result = log.replay(as_of=as_of)
    return [(q["at"], q["kind"], q["source"]) for q in rows(result, "backfill_requests", observer="P1")]


def entry(log: Log, as_of: int) -> dict:  # type: ignore[type-arg]
    return rows(log.replay(as_of=as_of), "backfill_entries", observer="P1")[0]


def test_up_all_along_the_requests_come_at_the_time_outs() -> None:
    log = opened_log()
    assert requests(log, 30 * H) == [(at(7 * H), "expected", "P2"), (at(19 * H), "expected", "P2")]


@pytest.mark.parametrize(
    ("down", "up", "first"),
    [
        (30 * M, 3 * H, 7 * H),  # down before the entry opens, up before it falls due: as if never down
        (2 * H, 9 * H, 9 * H),  # down before the first request, up after it: requested when it comes up
        (7 * H, 8 * H, 8 * H),  # down at the very time it falls due (the status line comes first)
        (6 * H, 7 * H, 7 * H),  # up again at the time it falls due: requested then, after that line
    ],
)
def test_a_request_that_falls_due_while_the_requester_is_down_waits_for_it(
    down: int, up: int, first: int
) -> None:
    log = opened_log()
    log.status(down, "P1", "down")
    log.status(up, "P1", "up")
    got = requests(log, 40 * H)
    assert got[0] == (at(first), "expected", "P2")
    # the next time-out counts from that request: 12 h later
    assert got[1] == (at(first + 12 * H), "expected", "P2")
    assert entry(log, 40 * H)["requests"] == 2


def test_between_two_requests_the_second_waits_and_no_source_is_marked_for_it() -> None:
    log = opened_log()
    log.status(10 * H, "P1", "down")  # after the first request (7 h), before the second (19 h)
    log.status(25 * H, "P1", "up")
    assert requests(log, 26 * H) == [(at(7 * H), "expected", "P2"), (at(25 * H), "expected", "P2")]


def test_while_still_down_at_the_as_of_nothing_is_sent_and_the_entry_stays_due_in_the_past() -> None:
    log = opened_log()
    log.status(2 * H, "P1", "down")
    result = log.replay(as_of=48 * H)
    assert rows(result, "backfill_requests", observer="P1") == []
    e = rows(result, "backfill_entries", observer="P1")[0]
    assert e["requests"] == 0 and e["next_due_at"] == at(7 * H) and e["state"] == "open"
    replica = rows(result, "replicas", store="P1", fid=FID)[0]
    assert replica["health"] == "backfilling"  # never overdue for requests it never sent
    assert not any(r["unavailable"] for r in rows(result, "state_table", observer="P1", fid=FID))
    nxt = rows(result, "next_requests", observer="P1")
    assert [(r["source"], r["due_at"], r["waiting"], r["cnset"], r["attempt"]) for r in nxt] == [
        ("P2", at(7 * H), True, "P2:1-5", 1)
    ]


def test_a_request_never_sent_marks_no_source_unavailable() -> None:
    """Up: the first request to P2 goes unanswered, so P2 is marked at the second. Down between
    them: the second is not sent, and P2 is not marked while P1 is down."""
    log = opened_log()
    cands = rows(log.replay(as_of=20 * H), "backfill_candidates", entry_id="P1/" + FID + "/1")
    assert [c["unavailable"] for c in cands if c["attempt"] == 2] == [True]
    log = opened_log()
    log.status(8 * H, "P1", "down")
    result = log.replay(as_of=20 * H)
    assert [c["attempt"] for c in rows(result, "backfill_candidates", observer="P1")] == [1]
    assert not any(r["unavailable"] for r in rows(result, "state_table", observer="P1", fid=FID))
    nxt = rows(result, "next_requests", observer="P1")
    assert [(r["due_at"], r["waiting"], r["attempt"]) for r in nxt] == [(at(19 * H), True, 2)]
    # the next request, as planned: P2 is the only holder; it would be marked (no response since)
    assert [c["unavailable"] for c in rows(result, "next_candidates", observer="P1")] == [True]


def test_a_source_that_is_down_sorts_last_but_its_requester_still_asks() -> None:
    log = opened_log()
    log.message(2 * H, "P3", "status", FID, to=["P1"], cnset="P2:1-5;P3:1", received={"P1": 2 * H})
    log.status(3 * H, "P2", "down")  # the source is down: the requester is up and asks P3 first
    got = requests(log, 8 * H)
    assert got[0][0] == at(7 * H) and got[0][2] == "P3"
    nxt = rows(log.replay(as_of=8 * H), "next_requests", observer="P1")
    assert nxt and not any(r["waiting"] for r in nxt)


def test_an_event_log_with_outages_still_accounts_for_every_line() -> None:
    log = opened_log()
    log.status(2 * H, "P1", "down")
    log.status(9 * H, "P1", "up")
    ev: EventLog = log.event_log()
    assert ev.lines_read == ev.accepted + ev.duplicates + len(ev.rejects)


def test_the_stores_table_says_since_when_a_store_is_down() -> None:
    log = opened_log()
    log.status(2 * H, "P1", "down")
    log.status(3 * H, "P1", "down")  # a repeat: still down since 2 h
    log.status(4 * H, "P2", "down")
    log.status(5 * H, "P2", "up")
    stores = {r["store"]: r for r in log.replay(as_of=6 * H).tables["stores"]}
    assert (stores["P1"]["status"], stores["P1"]["down_since"]) == ("down", at(2 * H))
    assert (stores["P2"]["status"], stores["P2"]["down_since"]) == ("up", None)
    assert stores["P3"]["down_since"] is None
    log.status(7 * H, "P2", "down")
    assert {r["store"]: r["down_since"] for r in log.replay(as_of=8 * H).tables["stores"]}["P2"] == at(7 * H)
