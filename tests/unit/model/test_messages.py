"""The replay's ``messages`` table: one row per message sent by the as-of and recipient, with
when (by the as-of) the recipient processed it, the changes it carried and the sender's set."""

from __future__ import annotations

from pfscope.spark_jobs.model.tables import KEYS, TABLES
from tests.logbuilder import H, Log, M, at, one, rows, topology

FID = "1-123"


def test_messages_rows_per_recipient_with_processing_as_of() -> None:
    topo = topology(
        {"P1": ("A", "2003"), "P2": ("A", "2003"), "P3": ("B", "2003")},
        folders={FID: ["P1", "P2", "P3"]},
        costs={("A", "B"): 10},
    )
    log = Log(topo)
    log.changes(0, "P1", FID, [1, 2, 3, 5])
    content = log.message(
        1 * H,
        "P1",
        "content",
        FID,
        to=["P2", "P3"],
        received={"P2": 1 * H + 5 * M},
        cnset="P1:1-3,5",
        changes="P1:1-3,5",
    )
    status = log.message(2 * H, "P2", "status", FID, received={"P1": 2 * H + M}, cnset="P1:1-3,5")
    log.receive(4 * H + 1, "P3", content)  # after the as-of: not processed by then
    log.message(5 * H, "P1", "content", FID, received={"P2": 5 * H + M}, changes="P1:6", cnset="P1:1-3,5-6")
    result = log.replay(as_of=4 * H)

    table = result.tables["messages"]
    assert {(r["msg"], r["recipient"]) for r in table} == {(content, "P2"), (content, "P3"), (status, "P1")}
    p2 = one(result, "messages", msg=content, recipient="P2")
    assert p2 == {
        "msg": content,
        "fid": FID,
        "sender": "P1",
        "type": "content",
        "sent_at": at(1 * H),
        "recipient": "P2",
        "processed_at": at(1 * H + 5 * M),
        "changes": "P1:1-3,5",
        "changes_count": 4,
        "cnset": "P1:1-3,5",
        "cnset_count": 4,
    }
    assert one(result, "messages", msg=content, recipient="P3")["processed_at"] is None
    s = one(result, "messages", msg=status)
    assert (s["type"], s["changes"], s["changes_count"], s["cnset_count"]) == ("status", "", 0, 4)
    assert s["processed_at"] == at(2 * H + M)
    # the declared columns and key, and every row's columns
    assert KEYS["messages"] == ("msg", "recipient")
    assert all(set(r) == {n for n, _ in TABLES["messages"]} for r in table)
    # without an as-of (the last event's), the later message and the late receive count
    later = log.replay()
    assert len(rows(later, "messages")) == 4
    assert one(later, "messages", msg=content, recipient="P3")["processed_at"] == at(4 * H + 1)


def test_transits_per_pair_from_the_processed_messages() -> None:
    """``transits``: per sender and recipient, the processed messages' count, lower median and
    longest transit, in seconds; a message not processed by the as-of counts for nothing."""
    topo = topology(
        {"P1": ("A", "2003"), "P2": ("A", "2003"), "P3": ("A", "2003")}, folders={FID: ["P1", "P2", "P3"]}
    )
    log = Log(topo)
    log.changes(0, "P1", FID, [1])
    for sent, took in ((1 * H, 5 * M), (2 * H, 20 * M), (3 * H, 10 * M), (4 * H, 40 * M)):
        log.message(
            sent, "P1", "content", FID, to=["P2"], received={"P2": sent + took}, changes="P1:1", cnset="P1:1"
        )
    log.message(
        5 * H, "P1", "content", FID, to=["P2", "P3"], received={"P2": 10 * H}, changes="P1:1", cnset="P1:1"
    )
    log.message(5 * H, "P2", "status", FID, to=["P1"], received={"P1": 5 * H + 2 * M}, cnset="")
    result = log.replay(as_of=6 * H)

    assert [(r["sender"], r["recipient"]) for r in result.tables["transits"]] == [("P1", "P2"), ("P2", "P1")]
    assert one(result, "transits", sender="P1", recipient="P2") == {
        "sender": "P1",
        "recipient": "P2",
        "messages": 4,  # the fifth was processed after the as-of; P3 never processed one
        "median_transit_s": 600.0,  # 5, 10, 20, 40 minutes: the lower middle
        "longest_transit_s": 2400.0,
    }
    assert one(result, "transits", sender="P2", recipient="P1")["median_transit_s"] == 120.0
    assert [n for n, _ in TABLES["transits"]] == list(one(result, "transits", sender="P2", recipient="P1"))
    assert KEYS["transits"] == ("sender", "recipient")
