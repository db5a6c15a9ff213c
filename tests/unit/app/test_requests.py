"""Requests traced like any message (``app/figures/requests.py``): whether the source processed
each backfill request, which responses answered it, status requests' responders, and the entry
timeline's mark for a request its source has not processed; on small frames of the published
tables."""

from __future__ import annotations

from typing import Any

import pandas as pd

from pfscope.app import figures as f
from pfscope.app.figures import requests as rq
from pfscope.app.figures.backfill import UNPROCESSED
from pfscope.spark_jobs.model.cnset import CNSet
from pfscope.spark_jobs.model.rules.transit import EXPIRED, IN_TRANSIT, PROCESSED, QUEUED
from pfscope.spark_jobs.model.timeutil import HOUR, MINUTE

AS_OF = pd.Timestamp("2026-11-09T12:00:00Z")
FID = "1-123"
USUAL = {("PFS2", "PFS1"): HOUR, ("PFS2", "PFS3"): 10 * MINUTE, ("PFS1", "PFS2"): MINUTE}


def t(text: str | None) -> pd.Timestamp | None:
    return pd.Timestamp(f"2026-11-{text}", tz="UTC") if text else None


def msg(
    m: str, sender: str, type: str, sent: str, to: dict[str, str | None], changes: str = "", cnset: str = ""
) -> list[dict[str, Any]]:
    """One message's rows of ``messages``: one per recipient (``to``: recipient -> processed)."""
    return [
        {
            "msg": m,
            "fid": FID,
            "sender": sender,
            "type": type,
            "sent_at": t(sent),
            "recipient": r,
            "processed_at": t(p),
            "changes": changes,
            "changes_count": CNSet.parse(changes).count(),
            "cnset": cnset,
            "cnset_count": CNSet.parse(cnset).count(),
        }
        for r, p in to.items()
    ]


MESSAGES = pd.DataFrame(
    [
        # entry 2: its observed request to PFS3 never processed (expired)
        *msg("<q0>", "PFS2", "backfill_request", "05T00:00:00", {"PFS3": None}),
        # entry 1: #1 to PFS1 processed, answered twice (the second late, still before the next
        # request PFS1 processed: none, #3 is in transit)
        *msg("<q1>", "PFS2", "backfill_request", "07T06:00:00", {"PFS1": "07T06:01:00"}),
        *msg("<r1>", "PFS1", "backfill_response", "07T06:01:00", {"PFS2": "07T06:02:00"}, "PFS1:10"),
        *msg("<r2>", "PFS1", "backfill_response", "08T02:00:00", {"PFS2": None}, "PFS1:11"),
        *msg("<q2>", "PFS2", "backfill_request", "08T18:00:00", {"PFS3": None}),
        *msg("<q3>", "PFS2", "backfill_request", "09T11:30:00", {"PFS1": None}),
        # a response to another store answers none of PFS2's requests
        *msg("<rx>", "PFS1", "backfill_response", "07T06:30:00", {"PFS4": "07T06:31:00"}, "PFS1:12"),
        # a status request: PFS1 answers (to PFS2 alone), then sends its scheduled status to all
        *msg(
            "<s1>",
            "PFS2",
            "status_request",
            "08T00:00:00",
            {"PFS1": "08T00:05:00", "PFS3": "08T00:10:00"},
            cnset="PFS1:1-9",
        ),
        *msg("<st1>", "PFS1", "status", "08T00:05:00", {"PFS2": "08T00:06:00"}, cnset="PFS1:1-12"),
        *msg("<st2>", "PFS1", "status", "08T00:15:00", {"PFS2": None, "PFS3": None}, cnset="PFS1:1-12"),
    ]
)
for col in ("sent_at", "processed_at"):
    MESSAGES[col] = pd.to_datetime(MESSAGES[col], utc=True)


def entry(eid: str, opened: str, cns: str, state: str, closed: str | None, due: str | None) -> dict[str, Any]:
    return {
        "entry_id": eid,
        "observer": "PFS2",
        "fid": FID,
        "opened_at": t(opened),
        "opened_by": "<m>",
        "cnset_opened": cns,
        "cnset_remaining": cns if state == "open" else "",
        "locality": "local",
        "new_replica": False,
        "state": state,
        "closed_at": t(closed),
        "requests": 0,
        "next_due_at": t(due),
    }


ENTRIES = pd.DataFrame(
    [
        entry("PFS2/1-123/1", "07T00:00:00", "PFS1:10-12", "open", None, "09T20:00:00"),
        entry("PFS2/1-123/2", "04T00:00:00", "PFS1:5", "satisfied", "06T00:00:00", None),
        entry("PFS2/1-123/3", "09T10:00:00", "PFS1:20", "open", None, "09T16:00:00"),
        entry("PFS2/1-123/9", "09T10:00:00", "PFS1:99", "open", None, "09T16:00:00"),  # not asked about
    ]
)


def request(eid: str, attempt: int, at: str, kind: str, source: str, cns: str) -> dict[str, Any]:
    return {
        "entry_id": eid,
        "observer": "PFS2",
        "fid": FID,
        "attempt": attempt,
        "at": t(at),
        "kind": kind,
        "algorithm": "2003+",
        "source": source,
        "cnset": cns,
        "cnset_count": CNSet.parse(cns).count(),
        "due_at": t(at),
        "model_chose": True,
    }


REQUESTS = pd.DataFrame(
    [
        request("PFS2/1-123/1", 1, "07T06:00:00", "observed", "PFS1", "PFS1:10-12"),
        request("PFS2/1-123/1", 2, "08T18:00:00", "observed", "PFS3", "PFS1:11-12"),
        request("PFS2/1-123/1", 3, "09T11:30:00", "observed", "PFS1", "PFS1:11-12"),
        request("PFS2/1-123/2", 1, "05T00:00:00", "observed", "PFS3", "PFS1:5"),
        request("PFS2/1-123/2", 2, "05T06:00:00", "expected", "PFS1", "PFS1:5"),
    ]
)


def mail() -> rq.Mail:
    return rq.index(MESSAGES, AS_OF, USUAL)


def test_each_request_for_the_asked_cns_traced() -> None:
    asked = CNSet.parse("PFS1:5,10-12,20,30")
    got = rq.covering(ENTRIES, REQUESTS, mail(), asked, "PFS2")
    assert [e.entry_id for e in got] == ["PFS2/1-123/2", "PFS2/1-123/1", "PFS2/1-123/3"]  # oldest first
    old, e1, e3 = got
    assert [(r.attempt, r.kind, r.source, r.msg, r.reached.state) for r in old.requests] == [
        (1, "observed", "PFS3", "<q0>", EXPIRED),
        (2, "expected", "PFS1", None, "expected"),
    ]
    assert old.requests[1].reached.text == "expected by the rules; no such message in the log"
    assert [(r.msg, r.reached.text) for r in e1.requests] == [
        ("<q1>", "processed at 2026-11-07 06:01:00Z"),
        ("<q2>", "queued (expires 2026-11-10 18:00:00Z)"),
        ("<q3>", "in transit"),
    ]
    assert e1.requests[1].reached.usual == "PFS3 usually processes PFS2's mail within 10 min"
    # #1 answered by both responses PFS1 sent PFS2 after processing it (not the one to PFS4)
    first = e1.requests[0]
    assert [(a.msg, a.carried, a.delivery.state) for a in first.answers] == [
        ("<r1>", "PFS1:10", PROCESSED),
        ("<r2>", "PFS1:11", QUEUED),  # sent 34 h before the as-of
    ]
    assert first.answer_text == "2 responses, 1 processed by the requester"
    assert e1.requests[2].answers == ()
    assert e1.requests[2].answer_text == "no response: PFS1 has not processed the request"
    assert e3.requests == () and e3.next_due_at == t("09T16:00:00")


def test_the_requests_in_a_few_sentences() -> None:
    asked = CNSet.parse("PFS1:5,10-12,20,30")
    got = rq.requests_summary("PFS2", asked.text(), rq.covering(ENTRIES, REQUESTS, mail(), asked, "PFS2"))
    assert got == (
        "PFS2 asked for PFS1:5,10-12 in 5 backfill requests (1 expected by the rules; no such message in "
        "the log); 3 of them not processed by their source: #1 to PFS3 (sent 2026-11-05 00:00:00Z) expired "
        "(at 2026-11-07 00:00:00Z); #2 to PFS3 (sent 2026-11-08 18:00:00Z) queued (expires 2026-11-10 "
        "18:00:00Z); #3 to PFS1 (sent 2026-11-09 11:30:00Z) in transit. PFS1:20: no request yet (the first "
        "is due 2026-11-09 16:00:00Z). No backfill entry of PFS2 covers PFS1:30: it does not know it lacks "
        "them."
    )


def test_neither_request_processed_as_on_the_demo() -> None:
    two = REQUESTS[REQUESTS["attempt"].isin([2, 3]) & (REQUESTS["entry_id"] == "PFS2/1-123/1")]
    entries = rq.covering(ENTRIES, two, mail(), CNSet.parse("PFS1:11"), "PFS2")
    assert rq.requests_summary("PFS2", "PFS1:11", entries).startswith(
        "PFS2 asked for PFS1:11 in 2 backfill requests; neither was processed by its source: "
        "#2 to PFS3 (sent 2026-11-08 18:00:00Z) queued"
    )
    assert rq.requests_summary("PFS2", "PFS1:30", ()) == (
        "No backfill entry of PFS2 covers PFS1:30: it does not know it lacks them."
    )


def test_a_status_request_s_responders() -> None:
    responders = pd.DataFrame(
        {
            "msg": ["<s1>"] * 3,
            "requester": ["PFS2"] * 3,
            "fid": [FID] * 3,
            "sent_at": [t("08T00:00:00")] * 3,
            "responder": ["PFS1", "PFS3", "PFS4"],
            "position": [1, None, 2],
            "group": ["1", None, "3"],
            "expected": [True, False, True],
            "observed": [True, True, False],
            "should_respond": [True, False, True],
        }
    )
    got = {r.responder: r for r in rq.status_trace(responders, mail(), "<s1>")}
    assert got["PFS1"].named_by == "model and log"
    assert got["PFS1"].reached.text == "processed at 2026-11-08 00:05:00Z"
    # its answer to PFS2 alone, not the scheduled status to every replica
    assert [a.msg for a in got["PFS1"].answers] == ["<st1>"]
    assert got["PFS1"].answer_text == "1 status message, 1 processed by the requester"
    assert got["PFS3"].answer_text == "no status message (none due: nothing newer)"
    assert (got["PFS4"].named_by, got["PFS4"].reached.text) == ("model only", "not sent to it")
    assert got["PFS4"].answer_text == "no status message: not named in the request, none due"
    assert rq.status_trace(responders, mail(), "<nope>") == ()


def test_the_timeline_marks_requests_their_source_has_not_processed() -> None:
    reached = rq.with_reached(REQUESTS, mail())
    assert reached["reached"].tolist() == [PROCESSED, QUEUED, IN_TRANSIT, EXPIRED, "expected"]
    assert reached["answered"].tolist() == [2, 0, 0, 0, 0]
    marks = f.entry_timeline_marks(ENTRIES, reached)
    lost = marks[marks["kind"] == UNPROCESSED]
    assert sorted(zip(lost["entry_id"], lost["attempt"], strict=True)) == [
        ("PFS2/1-123/1", 2),
        ("PFS2/1-123/1", 3),
        ("PFS2/1-123/2", 1),
    ]
    fig, _ = f.fig_entry_timeline(marks)
    (trace,) = [d for d in fig.data if d.name == "request not processed by its source"]
    assert trace.marker.symbol == "diamond-x-open"
    hover = " ".join(trace.hovertext)
    assert "not processed by PFS3 as of the run: queued (expires 2026-11-10 18:00:00Z)" in hover
    assert "not processed by PFS1 as of the run: in transit" in hover
    assert "PFS3 usually processes PFS2's mail within 10 min" in hover
    assert "expired (at 2026-11-07 00:00:00Z)" in hover
    # the processed request keeps its filled diamond, and says when its source processed it
    (seen,) = [d for d in fig.data if d.name == "request (observed)"]
    assert "PFS1 processed at 2026-11-07 06:01:00Z" in " ".join(seen.hovertext)
    # without the rule's columns (the report) every observed request keeps its filled diamond
    plain = f.entry_timeline_marks(ENTRIES, REQUESTS)
    assert not (plain["kind"] == UNPROCESSED).any()


def test_an_older_run_without_messages() -> None:
    got = rq.folder_requests(REQUESTS, MESSAGES.iloc[0:0], pd.DataFrame(), AS_OF)
    assert got["reached"].tolist() == [rq.UNKNOWN] * 4 + ["expected"]
    assert not (f.entry_timeline_marks(ENTRIES, got)["kind"] == UNPROCESSED).any()


def test_a_run_without_transits_still_marks_what_its_source_has_not_processed() -> None:
    got = rq.folder_requests(REQUESTS, MESSAGES, None, AS_OF)
    assert got["reached"].tolist() == [
        PROCESSED,
        "in transit or queued",
        "in transit or queued",
        EXPIRED,
        "expected",
    ]
    marks = f.entry_timeline_marks(ENTRIES, got)
    assert (marks["kind"] == UNPROCESSED).sum() == 3
