"""The fold and the reference replay against the rules of the model document, one rule a test.

Unless a test says otherwise: sites A (P1, P2), B (P3) and C (P4); A-B cost 10, C has no affinity;
every store runs 2003; folder 1-10 has replicas P1, P2, P3. The observer is P1, which holds its own
CN P1:1 from the start (so its entries are not new-replica entries).
"""

from __future__ import annotations

from typing import Any

import pytest

from pfscope.spark_jobs.model.replay import ReplayResult
from tests.logbuilder import H, Log, M, S, at, one, rows, topology

FID = "1-10"
STORES = {"P1": ("A", "2003"), "P2": ("A", "2003"), "P3": ("B", "2003"), "P4": ("C", "2003")}
COSTS = {("A", "B"): 10}


def make_log(
    stores: dict[str, tuple[str, str]] | None = None,
    replicas: tuple[str, ...] = ("P1", "P2", "P3"),
    *,
    own: bool = True,
) -> Log:
    log = Log(topology(stores or STORES, folders={FID: replicas}, costs=COSTS))
    if own:
        log.change(0, "P1", FID, 1)
    return log


def status(log: Log, t: int, sender: str, cnset: str, to: str = "P1", received: int | None = None) -> str:
    """A status message from ``sender`` processed by ``to`` (at ``received``, default at once)."""
    return log.message(
        t, sender, "status", FID, cnset=cnset, received={to: t if received is None else received}
    )


def entries(result: ReplayResult, observer: str = "P1", fid: str = FID) -> list[dict[str, Any]]:
    return sorted(rows(result, "backfill_entries", observer=observer, fid=fid), key=lambda r: r["entry_id"])


def requests(result: ReplayResult, observer: str = "P1", fid: str = FID) -> list[tuple[Any, ...]]:
    return sorted(
        (r["attempt"], r["at"], r["kind"], r["source"], r["cnset"])
        for r in rows(result, "backfill_requests", observer=observer, fid=fid)
        if r["entry_id"] is not None
    )


def candidates(result: ReplayResult, attempt: int, observer: str = "P1") -> list[tuple[Any, ...]]:
    return sorted(
        (r["rank"], r["candidate"], r["unavailable"], r["chosen"], r["assigned_cnset"])
        for r in rows(result, "backfill_candidates", observer=observer, fid=FID, attempt=attempt)
    )


# --------------------------------------------------------------------------------------------
# the state table
# --------------------------------------------------------------------------------------------
def test_believed_keeps_the_message_sent_last_not_the_one_processed_last() -> None:
    log = make_log()
    old = log.send(1 * H, "P2", "status", FID, to=["P1"], cnset="P2:1-5")
    new = log.send(2 * H, "P2", "status", FID, to=["P1"], cnset="P2:1-8")
    log.receive(3 * H, "P1", new)
    log.receive(4 * H, "P1", old)  # older, processed later: does not overwrite
    r = log.replay()
    row = one(r, "state_table", observer="P1", fid=FID, subject="P2")
    assert row["cnset"] == "P2:1-8"
    assert row["cnset_count"] == 8
    assert row["last_message_at"] == at(4 * H)  # but it is the last processed message
    causes = [h["cause"] for h in rows(r, "state_history", observer="P1", fid=FID, subject="P2")]
    assert causes == [new]


def test_believed_replaced_by_a_newer_message() -> None:
    log = make_log()
    status(log, 1 * H, "P2", "P2:1-5")
    status(log, 2 * H, "P2", "P2:1-3;P4:1")  # newer: replaces, even if it is not a superset
    r = log.replay()
    assert one(r, "state_table", observer="P1", fid=FID, subject="P2")["cnset"] == "P2:1-3;P4:1"


def test_mean_transit_and_last_message_at() -> None:
    log = make_log()
    status(log, 1 * H, "P2", "P2:1", received=1 * H + 10 * M)
    status(log, 2 * H, "P2", "P2:1", received=2 * H + 30 * M)
    r = log.replay()
    row = one(r, "state_table", observer="P1", fid=FID, subject="P2")
    assert row["mean_transit_s"] == pytest.approx(20 * 60)
    assert row["last_message_at"] == at(2 * H + 30 * M)
    silent = one(r, "state_table", observer="P1", fid=FID, subject="P3")  # on the list, never heard
    assert (silent["cnset"], silent["last_message_at"], silent["mean_transit_s"]) == ("", None, None)


def test_owned_grows_by_local_changes_and_message_changes() -> None:
    log = make_log()
    log.change(1 * H, "P1", FID, 2)
    log.message(2 * H, "P2", "content", FID, cnset="P2:1-4", changes="P2:3-4", received={"P1": 2 * H})
    log.message(3 * H, "P3", "status", FID, cnset="P3:1-9", received={"P1": 3 * H})  # no changes
    r = log.replay()
    me = one(r, "state_table", observer="P1", fid=FID, subject="P1")
    assert (me["cnset"], me["last_sent_cn"], me["is_self"]) == ("P1:1-2;P2:3-4", 2, True)


def test_state_table_lag_count_is_owned_of_the_subject_minus_believed() -> None:
    log = make_log()
    for cn in range(1, 6):
        log.change(cn * M, "P2", FID, cn)
    log.change(0, "P3", FID, 1)
    status(log, 1 * H, "P2", "P2:1-3")
    r = log.replay()
    assert one(r, "state_table", observer="P1", fid=FID, subject="P2")["lag_count"] == 2
    assert one(r, "state_table", observer="P1", fid=FID, subject="P3")["lag_count"] == 1  # no row: lacks all
    assert one(r, "state_table", observer="P1", fid=FID, subject="P1")["lag_count"] == 0


# --------------------------------------------------------------------------------------------
# derived knowledge (ingested Exchange logs mark what they inferred)
# --------------------------------------------------------------------------------------------
def _derived(r: ReplayResult, subject: str, observer: str = "P1") -> tuple[bool, list[tuple[str, bool]]]:
    row = one(r, "state_table", observer=observer, fid=FID, subject=subject)
    hist = [
        (h["cnset"], h["derived"])
        for h in rows(r, "state_history", observer=observer, fid=FID, subject=subject)
    ]
    return row["derived"], hist


def test_a_send_with_a_derived_cnset_makes_the_believed_row_derived() -> None:
    log = make_log()
    log.message(
        1 * H, "P2", "content", FID, cnset="P2:1-4", changes="P2:4", received={"P1": 1 * H}, derived=["cnset"]
    )
    log.message(
        1 * H, "P3", "content", FID, cnset="P3:1-2", changes="P3:2", received={"P1": 1 * H}, derived=["to"]
    )  # another field derived: the set itself was read
    r = log.replay()
    assert _derived(r, "P2") == (True, [("P2:1-4", True)])
    assert _derived(r, "P3") == (False, [("P3:1-2", False)])
    assert _derived(r, "P1")[0] is False  # changes carried by a message with a derived cnset are read


def test_a_later_message_that_prints_the_set_clears_the_mark_even_with_the_same_set() -> None:
    log = make_log()
    log.message(
        1 * H, "P2", "content", FID, cnset="P2:1-4", changes="P2:4", received={"P1": 1 * H}, derived=["cnset"]
    )
    log.message(2 * H, "P2", "status", FID, cnset="P2:1-4", received={"P1": 2 * H})
    r = log.replay()
    assert _derived(r, "P2") == (False, [("P2:1-4", True), ("P2:1-4", False)])
    causes = [h["cause"] for h in rows(r, "state_history", observer="P1", fid=FID, subject="P2")]
    assert len(set(causes)) == 2  # one history row per message that changed the row


def test_an_older_derived_message_processed_later_does_not_mark_the_row() -> None:
    log = make_log()
    old = log.send(1 * H, "P2", "content", FID, to=["P1"], cnset="P2:1-3", changes="P2:3", derived=["cnset"])
    new = log.send(2 * H, "P2", "status", FID, to=["P1"], cnset="P2:1-4")
    log.receive(3 * H, "P1", new)
    log.receive(4 * H, "P1", old)
    assert _derived(log.replay(), "P2") == (False, [("P2:1-4", False)])


def test_derived_change_lines_mark_the_self_row_for_good() -> None:
    log = make_log()  # P1:1 by a plain change
    r = log.replay()
    assert _derived(r, "P1") == (False, [("P1:1", False)])
    log.change(1 * H, "P1", FID, 2, derived=["event"])
    log.change(2 * H, "P1", FID, 3)
    log.message(3 * H, "P2", "content", FID, cnset="P2:1", changes="P2:1", received={"P1": 3 * H})
    r = log.replay()
    assert _derived(r, "P1") == (
        True,
        [("P1:1", False), ("P1:1-2", True), ("P1:1-3", True), ("P1:1-3;P2:1", True)],
    )


def test_changes_marked_derived_on_a_message_mark_the_receivers_self_row() -> None:
    log = make_log()
    log.message(
        1 * H,
        "P2",
        "content",
        FID,
        cnset="P2:1-4",
        changes="P2:1-4",
        received={"P1": 1 * H},
        derived=["changes"],
    )
    r = log.replay()
    assert _derived(r, "P1") == (True, [("P1:1", False), ("P1:1;P2:1-4", True)])
    assert _derived(r, "P2")[0] is False  # its cnset was read


def test_simulated_logs_have_no_derived_row() -> None:
    log = make_log()
    status(log, 1 * H, "P2", "P2:1-5")
    r = log.replay()
    assert not any(x["derived"] for x in r.tables["state_table"])
    assert not any(x["derived"] for x in r.tables["state_history"])


# --------------------------------------------------------------------------------------------
# the backfill array
# --------------------------------------------------------------------------------------------
def test_entry_opens_at_the_revealing_event_with_exactly_the_uncovered_missing_cns() -> None:
    log = make_log()
    log.changes(0, "P1", FID, [2, 3])
    m1 = status(log, 1 * H, "P2", "P1:1-3;P2:1-5")
    m2 = status(log, 2 * H, "P3", "P1:1-2;P2:1-7;P3:1-2")
    status(log, 2 * H + 30 * M, "P2", "P1:1-3;P2:1-5")  # nothing new: no entry
    r = log.replay(as_of=3 * H)
    got = [
        (
            e["opened_at"],
            e["opened_by"],
            e["cnset_opened"],
            e["cnset_remaining"],
            e["locality"],
            e["new_replica"],
            e["state"],
            e["requests"],
            e["next_due_at"],
        )
        for e in entries(r)
    ]
    assert got == [
        (at(1 * H), m1, "P2:1-5", "P2:1-5", "local", False, "open", 0, at(7 * H)),
        (at(2 * H), m2, "P2:6-7;P3:1-2", "P2:6-7;P3:1-2", "remote", False, "open", 0, at(14 * H)),
    ]


def test_several_events_at_the_same_time_open_several_entries() -> None:
    log = make_log()
    status(log, 1 * H, "P2", "P2:1-5")
    status(log, 1 * H, "P3", "P3:1-2")
    r = log.replay()
    assert [(e["opened_at"], e["cnset_opened"]) for e in entries(r)] == [
        (at(1 * H), "P2:1-5"),
        (at(1 * H), "P3:1-2"),
    ]


def test_within_one_event_owned_is_updated_before_the_backfill_array() -> None:
    log = make_log(own=False)
    log.message(1 * H, "P2", "content", FID, cnset="P2:1-6", changes="P2:1-5", received={"P1": 1 * H})
    e = entries(log.replay())
    # only P2:6 is missing; owned was no longer empty when the entry opened: not a new replica
    assert [(x["cnset_opened"], x["new_replica"], x["next_due_at"]) for x in e] == [
        ("P2:6", False, at(7 * H))
    ]


@pytest.mark.parametrize("status_first", [True, False])
def test_events_with_the_same_time_apply_in_input_order(status_first: bool) -> None:
    log = make_log()
    st = log.send(1 * H, "P2", "status", FID, to=["P1"], cnset="P2:1-5")
    ct = log.send(1 * H, "P3", "content", FID, to=["P1"], cnset="P2:1-5", changes="P2:1-5")
    for msg in (st, ct) if status_first else (ct, st):
        log.receive(2 * H, "P1", msg)
    e = entries(log.replay())
    if status_first:  # the entry opens, then the content fills it at the same time
        assert [(x["opened_at"], x["state"], x["closed_at"]) for x in e] == [
            (at(2 * H), "satisfied", at(2 * H))
        ]
    else:  # nothing is missing when the status is applied
        assert e == []


def test_messages_from_stores_off_the_list_open_no_entry() -> None:
    log = make_log()
    status(log, 1 * H, "P4", "P4:1-5")  # P4 is not a replica of the folder
    r = log.replay()
    assert entries(r) == []
    assert one(r, "replicas", store="P1", fid=FID)["missing_count"] == 0


@pytest.mark.parametrize(
    ("sender", "own", "local", "due"),
    [
        ("P2", False, True, 1 * H + 15 * M),  # new replica, local
        ("P3", False, False, 13 * H),  # new replica, remote
        ("P2", True, True, 7 * H),
        ("P3", True, False, 13 * H),
    ],
)
def test_first_time_out_by_new_replica_and_locality(sender: str, own: bool, local: bool, due: int) -> None:
    log = make_log(own=own)
    status(log, 1 * H, sender, f"{sender}:1-5")
    e = entries(log.replay())[0]
    assert (e["new_replica"], e["locality"], e["next_due_at"]) == (
        not own,
        "local" if local else "remote",
        at(due),
    )


def test_locality_counts_only_up_stores() -> None:
    log = make_log()
    log.status(30 * M, "P2", "down")
    status(log, 20 * M, "P2", "P2:1-5", received=1 * H)  # sent before going down
    e = entries(log.replay())[0]
    assert (e["locality"], e["next_due_at"]) == ("remote", at(13 * H))


def test_locality_needs_the_union_of_same_site_stores() -> None:
    stores = {**STORES, "P5": ("A", "2003")}
    log = make_log(stores, replicas=("P1", "P2", "P3", "P5"))
    status(log, 1 * H, "P2", "P2:1-5")
    status(log, 1 * H, "P5", "P2:1-5;P5:1-2")  # an entry for P5:1-2 only
    status(log, 2 * H, "P3", "P2:1-9;P5:1-3")  # P2:6-9 and P5:3 are only in site B
    status(log, 2 * H, "P2", "P2:1-9")  # now P2 holds P2:6-9, but nobody in A holds P5:3
    r = log.replay(as_of=3 * H)
    assert [(e["cnset_opened"], e["locality"]) for e in entries(r)] == [
        ("P2:1-5", "local"),
        ("P5:1-2", "local"),
        ("P2:6-9;P5:3", "remote"),
    ]


def test_cns_arriving_later_leave_the_entry_until_it_is_satisfied() -> None:
    log = make_log()
    status(log, 1 * H, "P2", "P2:1-5")
    log.message(2 * H, "P2", "content", FID, cnset="P2:1-5", changes="P2:1-3", received={"P1": 2 * H})
    log.message(
        3 * H, "P2", "backfill_response", FID, cnset="P2:1-5", changes="P2:4-5", received={"P1": 3 * H}
    )
    mid = entries(log.replay(as_of=2 * H + 30 * M))[0]
    assert (mid["cnset_opened"], mid["cnset_remaining"], mid["state"], mid["closed_at"]) == (
        "P2:1-5",
        "P2:4-5",
        "open",
        None,
    )
    end = entries(log.replay())[0]
    assert (end["cnset_remaining"], end["state"], end["closed_at"], end["next_due_at"]) == (
        "",
        "satisfied",
        at(3 * H),
        None,
    )


def test_expected_requests_at_due_time_with_sources_chosen() -> None:
    log = make_log()
    status(log, 1 * H, "P3", "P2:1-5;P3:1-3")  # remote (P3:1-3 only in site B): due at 13 h
    status(log, 1 * H + 30 * M, "P2", "P2:1-5")  # nothing new
    r = log.replay(as_of=14 * H)
    e = entries(r)[0]
    assert (e["locality"], e["requests"], e["next_due_at"]) == ("remote", 1, at(13 * H + 24 * H))
    assert requests(r) == [
        (1, at(13 * H), "expected", "P2", "P2:1-5"),  # same site first, asked for what it holds
        (1, at(13 * H), "expected", "P3", "P3:1-3"),  # then the rest
    ]
    assert {x["algorithm"] for x in rows(r, "backfill_requests", observer="P1")} == {"2003+"}
    assert candidates(r, 1) == [(1, "P2", False, True, "P2:1-5"), (2, "P3", False, True, "P3:1-3")]
    for s in ("P2", "P3"):
        assert one(r, "state_table", observer="P1", fid=FID, subject=s)["last_backfill_request_at"] == at(
            13 * H
        )


def test_exchange_2000_requester_asks_the_first_store_holding_everything() -> None:
    stores = {**STORES, "P1": ("A", "2000")}
    log = make_log(stores)
    status(log, 1 * H, "P3", "P2:1-5;P3:1-3")
    status(log, 1 * H + 30 * M, "P2", "P2:1-5")  # same site, but does not hold all
    r = log.replay(as_of=14 * H)
    assert requests(r) == [(1, at(13 * H), "expected", "P3", "P2:1-5;P3:1-3")]
    assert {x["algorithm"] for x in rows(r, "backfill_requests", observer="P1")} == {"2000"}


def test_preferred_source_asked_first() -> None:
    log = Log(topology(STORES, folders={FID: ("P1", "P2", "P3")}, costs=COSTS, preferred={"P1": "P3"}))
    log.change(0, "P1", FID, 1)
    status(log, 1 * H, "P2", "P2:1-5")
    status(log, 1 * H, "P3", "P2:1-5")
    r = log.replay(as_of=7 * H)
    assert requests(r) == [(1, at(7 * H), "expected", "P3", "P2:1-5")]
    assert one(r, "backfill_candidates", observer="P1", candidate="P3")["preferred"] is True


def test_down_source_sorts_last_at_the_request() -> None:
    log = make_log()
    status(log, 1 * H, "P2", "P2:1-5")
    status(log, 1 * H, "P3", "P2:1-5")
    log.status(7 * H, "P2", "down")  # down at exactly the due time: applied before the request
    r = log.replay(as_of=8 * H)
    assert requests(r) == [(1, at(7 * H), "expected", "P3", "P2:1-5")]
    assert one(r, "backfill_candidates", observer="P1", candidate="P2")["down"] is True
    # the time-out is not paused while a store is down; P2 down: no same-site holder, remote
    assert entries(r)[0]["next_due_at"] == at(7 * H + 24 * H)


def test_expected_request_with_no_candidate_has_no_source_rows() -> None:
    log = make_log()
    status(log, 1 * H, "P3", "P3:1-3")
    log.replicas(2 * H, FID, ["P1", "P2"])  # the only holder leaves the list
    r = log.replay(as_of=14 * H)
    e = entries(r)[0]
    assert (e["state"], e["requests"], e["next_due_at"]) == ("open", 1, at(13 * H + 24 * H))
    assert requests(r) == []
    assert rows(r, "backfill_candidates", observer="P1") == []


def test_locality_is_judged_again_at_each_request() -> None:
    log = make_log()
    status(log, 1 * H, "P3", "P3:1-3")  # remote: due at 13 h
    status(log, 2 * H, "P2", "P3:1-3")  # now a same-site store holds it all
    r = log.replay(as_of=14 * H)
    e = entries(r)[0]
    assert requests(r) == [(1, at(13 * H), "expected", "P2", "P3:1-3")]
    assert (e["locality"], e["next_due_at"]) == ("local", at(13 * H + 12 * H))


def test_retries_follow_the_table_counted_from_the_last_request() -> None:
    log = make_log()
    status(log, 1 * H, "P2", "P2:1-5")  # local: 6 h, 12 h, 24 h, 24 h
    r = log.replay(as_of=80 * H)
    e = entries(r)[0]
    assert sorted({x[1] for x in requests(r)}) == [at(7 * H), at(19 * H), at(43 * H), at(67 * H)]
    assert (e["requests"], e["next_due_at"]) == (4, at(91 * H))


def test_observed_request_is_an_attempt_and_resets_the_timer() -> None:
    log = make_log()
    status(log, 1 * H, "P2", "P2:1-5;P3:1-2")  # local (P2 holds all): due at 7 h
    log.backfill_request(3 * H, "P1", FID, "P2", "P2:1-5")
    log.send(3 * H, "P1", "backfill_request", FID, to=["P2", "P3"], requested="P3:1-2")  # same attempt
    log.backfill_request(4 * H, "P1", FID, "P4", "P4:1")  # overlaps no entry
    r = log.replay(as_of=10 * H)
    e = entries(r)[0]
    assert (e["requests"], e["next_due_at"]) == (1, at(3 * H + 12 * H))
    assert requests(r) == [
        (1, at(3 * H), "observed", "P2", "P2:1-5"),
        (1, at(3 * H), "observed", "P2", "P3:1-2"),  # no source: each store in to is asked
        (1, at(3 * H), "observed", "P3", "P3:1-2"),
    ]
    stray = one(r, "backfill_requests", observer="P1", source="P4")
    assert (stray["entry_id"], stray["kind"], stray["cnset"]) == (None, "observed", "P4:1")
    later = log.replay(as_of=15 * H)
    assert entries(later)[0]["requests"] == 2
    assert [x for x in requests(later) if x[0] == 2] == [(2, at(15 * H), "expected", "P2", "P2:1-5;P3:1-2")]


def test_unanswered_source_is_marked_unavailable_and_sorts_last_until_it_speaks() -> None:
    log = make_log()
    status(log, 1 * H, "P2", "P2:1-5")  # local: due at 7 h
    status(log, 1 * H, "P3", "P2:1-5")
    # 7 h: P2 (cost 0) asked; no backfill response before 19 h
    r = log.replay(as_of=19 * H)
    assert candidates(r, 1) == [(1, "P2", False, True, "P2:1-5"), (2, "P3", False, False, "")]
    assert candidates(r, 2) == [(1, "P3", False, True, "P2:1-5"), (2, "P2", True, False, "")]
    # any message from P2 about the folder clears its mark; P3, asked at 19 h, is marked at 43 h
    status(log, 21 * H, "P2", "P2:1-5")
    r = log.replay(as_of=43 * H)
    assert candidates(r, 3) == [(1, "P2", False, True, "P2:1-5"), (2, "P3", True, False, "")]


def test_a_backfill_response_before_the_next_request_keeps_the_source_available() -> None:
    log = make_log()
    status(log, 1 * H, "P2", "P2:1-5")
    status(log, 1 * H, "P3", "P2:1-5")
    log.message(
        8 * H, "P2", "backfill_response", FID, cnset="P2:1-5", changes="P2:1-2", received={"P1": 8 * H}
    )
    r = log.replay(as_of=19 * H)
    assert candidates(r, 2) == [(1, "P2", False, True, "P2:3-5"), (2, "P3", False, False, "")]


def test_a_message_other_than_a_backfill_response_does_not_count_as_answer() -> None:
    log = make_log()
    status(log, 1 * H, "P2", "P2:1-5")
    status(log, 1 * H, "P3", "P2:1-5")
    status(log, 8 * H, "P2", "P2:1-5")  # P2 speaks, but does not answer the request
    r = log.replay(as_of=19 * H)
    assert candidates(r, 2) == [(1, "P3", False, True, "P2:1-5"), (2, "P2", True, False, "")]


def test_entry_due_at_t_is_requested_after_events_stamped_t() -> None:
    log = make_log()
    status(log, 1 * H, "P2", "P2:1-5")  # due at 7 h
    log.message(
        6 * H, "P2", "backfill_response", FID, cnset="P2:1-5", changes="P2:1-5", received={"P1": 7 * H}
    )
    r = log.replay(as_of=8 * H)
    e = entries(r)[0]
    assert (e["state"], e["requests"], e["closed_at"]) == ("satisfied", 0, at(7 * H))
    assert requests(r) == []


def test_entry_due_at_t_is_requested_before_later_events() -> None:
    log = make_log()
    status(log, 1 * H, "P2", "P2:1-5")  # due at 7 h
    log.message(
        6 * H,
        "P2",
        "backfill_response",
        FID,
        cnset="P2:1-5",
        changes="P2:1-5",
        received={"P1": 7 * H + 1 * S},
    )
    r = log.replay(as_of=8 * H)
    e = entries(r)[0]
    assert (e["state"], e["requests"], e["closed_at"]) == ("satisfied", 1, at(7 * H + 1 * S))
    assert requests(r) == [(1, at(7 * H), "expected", "P2", "P2:1-5")]


def test_as_of_in_the_middle_of_the_log() -> None:
    log = make_log()
    status(log, 1 * H, "P2", "P2:1-5")  # due at 7 h
    log.message(
        8 * H, "P2", "backfill_response", FID, cnset="P2:1-5", changes="P2:1-5", received={"P1": 8 * H}
    )
    at_due = log.replay(as_of=7 * H)  # due at the as-of time: it happened; the 8 h event did not
    e = entries(at_due)[0]
    assert (e["state"], e["requests"], e["cnset_remaining"]) == ("open", 1, "P2:1-5")
    assert one(at_due, "state_table", observer="P1", fid=FID, subject="P1")["cnset"] == "P1:1"
    assert one(at_due, "summary")["as_of"] == at(7 * H)
    before = log.replay(as_of=7 * H - 1)
    e = entries(before)[0]
    assert (e["requests"], e["next_due_at"]) == (0, at(7 * H))
    end = log.replay()
    assert entries(end)[0]["state"] == "satisfied"


# --------------------------------------------------------------------------------------------
# leaving and rejoining the list
# --------------------------------------------------------------------------------------------
def _leaving_log() -> Log:
    log = make_log()
    log.changes(0, "P1", FID, [2, 3])
    status(log, 1 * H, "P2", "P1:1-2;P2:1-5")  # entry for P2:1-5
    log.replicas(5 * H, FID, ["P2", "P3"])
    status(log, 5 * H + 30 * M, "P2", "P1:1-2;P2:1-6")  # off the list: no new entry
    return log


def test_leaving_the_list_abandons_entries_and_makes_the_replica_delete_pending() -> None:
    log = _leaving_log()
    r = log.replay()
    assert [(e["state"], e["closed_at"], e["next_due_at"]) for e in entries(r)] == [
        ("abandoned", at(5 * H), None)
    ]
    rep = one(r, "replicas", store="P1", fid=FID)
    assert (rep["health"], rep["open_entries"], rep["missing_count"], rep["unique_count"]) == (
        "delete_pending",
        0,
        0,
        1,  # P1:3 is held by nobody else on the list
    )


def test_delete_pending_replica_is_deleted_when_others_hold_everything() -> None:
    log = _leaving_log()
    status(log, 6 * H, "P3", "P1:1-3")
    r = log.replay()
    rep = one(r, "replicas", store="P1", fid=FID)
    assert (rep["health"], rep["unique_count"], rep["missing_count"]) == ("deleted", 0, 0)
    assert rep["deleted_at"] == at(6 * H)


def test_leaving_with_nothing_unique_is_deleted_at_once() -> None:
    log = make_log()
    status(log, 1 * H, "P2", "P1:1")
    log.replicas(2 * H, FID, ["P2", "P3"])
    rep = one(log.replay(), "replicas", store="P1", fid=FID)
    assert (rep["health"], rep["deleted_at"]) == ("deleted", at(2 * H))


def test_rejoining_starts_from_the_kept_owned_set() -> None:
    log = _leaving_log()
    status(log, 6 * H, "P3", "P1:1-3")
    log.replicas(8 * H, FID, ["P1", "P2", "P3"])
    r = log.replay(as_of=9 * H)
    assert one(r, "state_table", observer="P1", fid=FID, subject="P1")["cnset"] == "P1:1-3"
    rejoin = entries(r)[-1]
    assert (rejoin["opened_at"], rejoin["cnset_opened"], rejoin["new_replica"], rejoin["state"]) == (
        at(8 * H),
        "P2:1-6",
        False,
        "open",
    )
    rep = one(r, "replicas", store="P1", fid=FID)
    assert (rep["health"], rep["missing_count"]) == ("backfilling", 6)


# --------------------------------------------------------------------------------------------
# the replicas table
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("as_of", "health", "open_entries"),
    [
        (2 * H, "backfilling", 1),  # no request yet
        (7 * H, "backfilling", 1),  # one request
        (19 * H, "overdue", 1),  # two requests: the first did not fill it
        (21 * H, "in_sync", 0),  # satisfied at 20 h
    ],
)
def test_health_in_the_replicas_table(as_of: int, health: str, open_entries: int) -> None:
    log = make_log()
    status(log, 1 * H, "P2", "P2:1-5")
    log.message(
        20 * H, "P2", "backfill_response", FID, cnset="P2:1-5", changes="P2:1-5", received={"P1": 20 * H}
    )
    rep = one(log.replay(as_of=as_of), "replicas", store="P1", fid=FID)
    assert (rep["health"], rep["open_entries"]) == (health, open_entries)
    assert rep["missing_count"] == (5 if open_entries else 0)


def test_next_status_at_in_the_replicas_table() -> None:
    log = make_log(own=False)
    log.change(10 * H, "P1", FID, 1)  # 2026-11-02 10:00 -> 2026-11-03 12:15
    status(log, 11 * H, "P2", "")  # no changes: does not count
    assert one(log.replay(), "replicas", store="P1", fid=FID)["next_status_at"] == at(36 * H + 15 * M)
    assert one(log.replay(as_of=36 * H + 15 * M), "replicas", store="P1", fid=FID)["next_status_at"] is None
    log.message(13 * H, "P2", "content", FID, cnset="P2:1", changes="P2:1", received={"P1": 13 * H})
    assert one(log.replay(), "replicas", store="P1", fid=FID)["next_status_at"] == at(48 * H + 15 * M)
    never = one(log.replay(), "replicas", store="P3", fid=FID)
    assert never["next_status_at"] is None


# --------------------------------------------------------------------------------------------
# status requests
# --------------------------------------------------------------------------------------------
def test_responders_rows_expected_observed_and_should_respond() -> None:
    log = make_log()
    log.changes(0, "P1", FID, [2, 3])
    log.change(0, "P3", FID, 1)
    log.message(
        10 * M, "P1", "content", FID, cnset="P1:1-3", changes="P1:1-3", received={"P2": 20 * M, "P3": 40 * M}
    )
    status(log, 30 * M, "P3", "P1:1-3;P3:1")  # P1 has heard from P3
    req = log.message(
        1 * H,
        "P1",
        "status_request",
        FID,
        to=["P2", "P4"],
        cnset="P1:1-3",
        responders=["P2", "P4"],
        received={"P2": 1 * H + 10 * M},
    )
    log.change(2 * H, "P2", FID, 1)  # after processing the request
    r = log.replay(as_of=3 * H)
    got = sorted(
        (x["responder"], x["position"], x["group"], x["expected"], x["observed"], x["should_respond"])
        for x in rows(r, "responders", msg=req)
    )
    assert got == [
        ("P2", 2, "3", True, True, False),  # same site; equal sets when it processed the request
        ("P3", 1, "2", True, False, True),  # cost 10, heard from; never processed: owned at as-of
        ("P4", None, None, False, True, False),  # named but not expected
    ]
    assert {x["requester"] for x in rows(r, "responders", msg=req)} == {"P1"}


def test_oldest_copy_added_with_no_row_counting_as_zero() -> None:
    stores = {**STORES, "P5": ("B", "2003"), "P6": ("B", "2003")}
    log = make_log(stores, replicas=("P1", "P2", "P3", "P5", "P6"))
    status(log, 10 * M, "P2", "P2:1")
    status(log, 20 * M, "P3", "P3:1")
    status(log, 30 * M, "P5", "P5:1-2")
    req = log.send(1 * H, "P1", "status_request", FID, to=["P2"], cnset="P1:1", responders=["P2"])
    r = log.replay(as_of=2 * H)
    got = sorted((x["position"], x["responder"], x["group"]) for x in rows(r, "responders", msg=req))
    # group 2 (heard, cost 10): P3, P5; group 3: P2; then P6, never heard from, holds 0
    assert got == [(1, "P3", "2"), (2, "P5", "2"), (3, "P2", "3"), (4, "P6", "oldest")]


def test_group_1_pick_counts_as_backfilled_at_the_status_request() -> None:
    stores = {
        "P1": ("A", "2003"),
        "P2": ("A", "2003"),
        "P5": ("A", "2003"),
        "P6": ("A", "2003"),
        "P7": ("A", "2003"),
    }
    log = make_log(stores, replicas=("P1", "P2", "P5", "P6", "P7"))
    log.backfill_request(1 * H, "P1", FID, "P2", "P2:1")
    log.backfill_request(2 * H, "P1", FID, "P5", "P5:1")
    log.backfill_request(2 * H + 30 * M, "P1", FID, "P6", "P6:1")
    log.backfill_request(2 * H + 45 * M, "P1", FID, "P7", "P7:1")
    first = log.send(3 * H, "P1", "status_request", FID, to=["P2"], cnset="P1:1", responders=["P2"])
    second = log.send(4 * H, "P1", "status_request", FID, to=["P2"], cnset="P1:1", responders=["P2"])
    r = log.replay()

    def listed(msg: str) -> list[tuple[Any, ...]]:
        return sorted(
            (x["position"], x["responder"], x["group"])
            for x in rows(r, "responders", msg=msg)
            if x["expected"]
        )

    assert listed(first) == [(1, "P2", "1"), (2, "P5", "1"), (3, "P6", "1")]
    # P2, P5 and P6 now count as backfilled from at 3 h; P7 (2 h 45) is the longest ago
    assert listed(second) == [(1, "P7", "1"), (2, "P2", "1"), (3, "P5", "1")]


# --------------------------------------------------------------------------------------------
# the hierarchy
# --------------------------------------------------------------------------------------------
def test_hierarchy_folder_has_every_store_as_replica() -> None:
    log = make_log()
    log.change(0, "P4", "1-1", 1)
    log.message(1 * H, "P4", "hierarchy", "1-1", cnset="P4:1", received={"P1": 1 * H})
    r = log.replay(as_of=2 * H)
    assert sorted(x["store"] for x in rows(r, "replicas", fid="1-1")) == ["P1", "P2", "P3", "P4"]
    assert one(r, "folders", fid="1-1")["replicas"] == ["P1", "P2", "P3", "P4"]
    # P4 is on no folder's list but is a replica of the hierarchy: its message opens an entry
    e = entries(r, fid="1-1")
    assert [(x["cnset_opened"], x["new_replica"], x["locality"]) for x in e] == [("P4:1", True, "remote")]
    assert one(r, "replicas", store="P1", fid="1-1")["health"] == "backfilling"
