"""The event log reader: every reject reason, duplicates, the send/receive join, change numbers,
files and the accounting ``lines_read == accepted + duplicates + rejected``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pfscope.spark_jobs.model import events as ev
from pfscope.spark_jobs.model.cnset import CNSet
from pfscope.spark_jobs.model.events import (
    EventLog,
    RejectRow,
    expand_paths,
    make_seq,
    read_event_log,
)
from pfscope.spark_jobs.model.timeutil import SECOND, format_ts, parse_ts
from pfscope.spark_jobs.model.topology import Topology, topology_from_json
from tests.logbuilder import event_log_from_lines

TOPO = {
    "sites": ["Redmond", "Dublin"],
    "costs": [{"a": "Redmond", "b": "Dublin", "cost": 10}],
    "stores": [
        {"name": "PFS1", "server": "EX1", "site": "Redmond", "version": "2003"},
        {"name": "PFS2", "server": "EX2", "site": "Redmond", "version": "2007"},
        {"name": "PFS3", "server": "EX3", "site": "Dublin", "version": "2000"},
    ],
    "folders": [
        {"fid": "1-ABC", "path": "IPM_SUBTREE\\F", "parent": "1-1", "replicas": ["PFS1", "PFS2", "PFS3"]}
    ],
}
BASE = parse_ts("2026-11-02T08:00:00Z")
DROP = object()  # a field value that removes the field
BIG = 987_654_321_987  # written as 5000 sevens by ``digits``: more than Python's int() converts by default


def digits(text: str) -> str:
    return text.replace(str(BIG), "7" * 5000)


@pytest.fixture(scope="module")
def topo() -> Topology:
    return topology_from_json(TOPO)


def ts(sec: float) -> str:
    return format_ts(BASE + int(sec * SECOND))


def at(sec: float) -> int:
    return BASE + int(sec * SECOND)


def line(base: dict[str, Any], **over: Any) -> str:
    obj = {**base, **over}
    return json.dumps({k: v for k, v in obj.items() if v is not DROP})


SEND = {
    "ts": ts(10),
    "store": "PFS1",
    "kind": "send",
    "msg": "m2",
    "type": "content",
    "fid": "1-ABC",
    "to": ["PFS2"],
    "cnset": "PFS1:1-3",
    "changes": "PFS1:3",
}
CHANGE = {"ts": ts(10), "store": "PFS2", "kind": "change", "fid": "1-ABC", "cn": 1}
RECEIVE = {"ts": ts(10), "store": "PFS2", "kind": "receive", "msg": "m1"}
REPLICAS = {"ts": ts(10), "store": "PFS1", "kind": "replicas", "fid": "1-ABC", "replicas": ["PFS1", "PFS2"]}
STATUS = {"ts": ts(10), "store": "PFS3", "kind": "store_status", "status": "down"}
BFREQ = {**SEND, "type": "backfill_request", "changes": DROP, "requested": "PFS1:1-3", "source": "PFS2"}
SREQ = {**SEND, "type": "status_request", "changes": DROP, "responders": ["PFS2"]}


def send(**over: Any) -> str:
    return line(SEND, **over)


def change(**over: Any) -> str:
    return line(CHANGE, **over)


def receive(**over: Any) -> str:
    return line(RECEIVE, **over)


def replicas(**over: Any) -> str:
    return line(REPLICAS, **over)


def status(**over: Any) -> str:
    return line(STATUS, **over)


def bfreq(**over: Any) -> str:
    return line(BFREQ, **over)


def sreq(**over: Any) -> str:
    return line(SREQ, **over)


# Every case is read after these three valid lines, so the case is line 4.
PRELUDE = [
    line(SEND, ts=ts(0), msg="m1"),  # m1: PFS1 -> PFS2 at 0 s
    line(RECEIVE, ts=ts(5)),  # PFS2 processed m1 at 5 s
    line(CHANGE, ts=ts(0), store="PFS1", cn=5),  # PFS1's change 5 on 1-ABC at 0 s
]

# (id, line, reason); a bytes line is written as is and is not UTF-8
CASES: list[tuple[str, str | bytes, str]] = [
    # not usable at all
    ("empty", "", ev.R_EMPTY),
    ("blank", "   \t ", ev.R_EMPTY),
    ("not-utf8", b'{"ts": "caf\xe9"}', ev.R_NOT_UTF8),
    ("not-utf8-latin1", b"\xff\xfe\x00{", ev.R_NOT_UTF8),
    ("not-json", "{not json", ev.R_NOT_JSON),
    ("not-json-trailing", send() + " x", ev.R_NOT_JSON),
    ("not-json-two-objects", send() + send(), ev.R_NOT_JSON),
    ("not-json-single-quotes", "{'kind': 'change'}", ev.R_NOT_JSON),
    ("not-object-list", "[1, 2]", ev.R_NOT_OBJECT),
    ("not-object-string", '"a string"', ev.R_NOT_OBJECT),
    ("not-object-number", "42", ev.R_NOT_OBJECT),
    ("not-object-null", "null", ev.R_NOT_OBJECT),
    # the common fields
    ("kind-missing", status(kind=DROP), ev.r_missing("kind")),
    ("kind-null", status(kind=None), ev.r_missing("kind")),
    ("kind-unknown", status(kind="explode"), ev.R_UNKNOWN_KIND),
    ("kind-case", status(kind="Change"), ev.R_UNKNOWN_KIND),
    ("kind-number", status(kind=4), ev.R_UNKNOWN_KIND),
    ("ts-missing", status(ts=DROP), ev.r_missing("ts")),
    ("ts-null", status(ts=None), ev.r_missing("ts")),
    ("ts-garbage", status(ts="yesterday"), ev.R_BAD_TS),
    ("ts-naive", status(ts="2026-11-02T08:00:00"), ev.R_BAD_TS),
    ("ts-naive-fraction", status(ts="2026-11-02T08:00:00.000"), ev.R_BAD_TS),
    ("ts-date-only", status(ts="2026-11-02"), ev.R_BAD_TS),
    ("ts-number", status(ts=1_793_606_400), ev.R_BAD_TS),
    ("ts-year-1", status(ts="0001-01-01T00:00:00Z"), ev.R_TS_TOO_EARLY),
    ("ts-just-before-1996", status(ts="1996-01-01T00:59:59.999999+01:00"), ev.R_TS_TOO_EARLY),
    ("store-missing", status(store=DROP), ev.r_missing("store")),
    ("store-number", status(store=7), ev.r_ill_typed("store")),
    ("store-empty", status(store=""), ev.r_ill_typed("store")),
    ("store-unknown", status(store="PFS9"), ev.r_unknown_store("store")),
    ("store-case", status(store="pfs1"), ev.r_unknown_store("store")),
    # store_status
    ("status-missing", status(status=DROP), ev.r_missing("status")),
    ("status-unknown", status(status="sideways"), ev.r_ill_typed("status")),
    ("status-case", status(status="UP"), ev.r_ill_typed("status")),
    # change
    ("change-fid-missing", change(fid=DROP), ev.r_missing("fid")),
    ("change-fid-name", change(fid="Folder1"), ev.r_ill_typed("fid")),
    ("change-fid-number", change(fid=123), ev.r_ill_typed("fid")),
    ("change-cn-missing", change(cn=DROP), ev.r_missing("cn")),
    ("change-cn-zero", change(cn=0), ev.r_ill_typed("cn")),
    ("change-cn-negative", change(cn=-3), ev.r_ill_typed("cn")),
    ("change-cn-text", change(cn="5"), ev.r_ill_typed("cn")),
    ("change-cn-bool", change(cn=True), ev.r_ill_typed("cn")),
    ("change-cn-float", change(cn=2.5), ev.r_ill_typed("cn")),
    ("change-cn-2-48", change(cn=ev.MAX_CN + 1), ev.r_out_of_range("cn")),
    ("change-cn-2-63", change(cn=2**63), ev.r_out_of_range("cn")),
    ("change-cn-huge", change(cn=10**30), ev.r_out_of_range("cn")),
    # more digits than Python's ``int`` converts by default (4300): still a number, beyond the bound
    ("change-cn-5000-digits", digits(change(cn=BIG)), ev.r_out_of_range("cn")),
    ("change-cn-minus-5000-digits", digits(change(cn=-BIG)), ev.r_ill_typed("cn")),
    ("change-bytes-5000-digits", digits(change(bytes=BIG)), ev.r_out_of_range("bytes")),
    ("send-cnset-5000-digits-text", digits(send(cnset=f"PFS1:1-{BIG}")), ev.r_out_of_range("cnset")),
    ("send-cnset-5000-digits-object", digits(send(cnset={"PFS1": [[1, BIG]]})), ev.r_out_of_range("cnset")),
    ("send-cnset-5000-digits-reversed", digits(send(cnset={"PFS1": [[BIG, 1]]})), ev.r_lo_above_hi("cnset")),
    ("send-changes-5000-digits-text", digits(send(changes=f"PFS1:{BIG}")), ev.r_out_of_range("changes")),
    ("request-requested-5000-digits", digits(bfreq(requested=f"PFS1:{BIG}")), ev.r_out_of_range("requested")),
    ("change-op-unknown", change(op="rename"), ev.r_ill_typed("op")),
    ("change-op-number", change(op=1), ev.r_ill_typed("op")),
    ("change-item-number", change(item=5), ev.r_ill_typed("item")),
    ("change-bytes-negative", change(bytes=-1), ev.r_ill_typed("bytes")),
    ("change-bytes-text", change(bytes="10"), ev.r_ill_typed("bytes")),
    ("change-bytes-float", change(bytes=1.5), ev.r_ill_typed("bytes")),
    ("change-bytes-bool", change(bytes=True), ev.r_ill_typed("bytes")),
    ("change-bytes-2-63", change(bytes=2**63), ev.r_out_of_range("bytes")),
    # send
    ("send-msg-missing", send(msg=DROP), ev.r_missing("msg")),
    ("send-msg-empty", send(msg=""), ev.r_ill_typed("msg")),
    ("send-msg-number", send(msg=2), ev.r_ill_typed("msg")),
    ("send-type-missing", send(type=DROP), ev.r_missing("type")),
    ("send-type-unknown", send(type="telegram"), ev.R_UNKNOWN_TYPE),
    ("send-type-hex", send(type="0x4"), ev.R_UNKNOWN_TYPE),
    ("send-type-number", send(type=4), ev.R_UNKNOWN_TYPE),
    ("send-fid-missing", send(fid=DROP), ev.r_missing("fid")),
    ("send-fid-bad", send(fid="1_ABC"), ev.r_ill_typed("fid")),
    ("send-content-for-hierarchy", send(fid="1-1"), ev.R_TYPE_FID),
    ("send-hierarchy-for-folder", send(type="hierarchy"), ev.R_TYPE_FID),
    ("send-to-missing", send(to=DROP), ev.r_missing("to")),
    ("send-to-empty", send(to=[]), ev.r_ill_typed("to")),
    ("send-to-string", send(to="PFS2"), ev.r_ill_typed("to")),
    ("send-to-twice", send(to=["PFS2", "PFS2"]), ev.r_ill_typed("to")),
    ("send-to-number", send(to=[2]), ev.r_ill_typed("to")),
    ("send-to-empty-name", send(to=["PFS2", ""]), ev.r_ill_typed("to")),
    ("send-to-unknown", send(to=["PFS2", "PFS7"]), ev.r_unknown_store("to")),
    ("send-to-sender", send(to=["PFS1"]), ev.R_TO_SENDER),
    ("send-to-includes-sender", send(to=["PFS2", "PFS1"]), ev.R_TO_SENDER),
    ("send-cnset-missing", send(cnset=DROP), ev.r_missing("cnset")),
    ("send-cnset-null", send(cnset=None), ev.r_missing("cnset")),
    ("send-cnset-garbage", send(cnset="PFS1:x"), ev.r_ill_typed("cnset")),
    ("send-cnset-no-origin", send(cnset="1-3"), ev.r_ill_typed("cnset")),
    ("send-cnset-list", send(cnset=[1, 2]), ev.r_ill_typed("cnset")),
    ("send-cnset-number", send(cnset=5), ev.r_ill_typed("cnset")),
    ("send-cnset-short-range", send(cnset={"PFS1": [[1]]}), ev.r_ill_typed("cnset")),
    ("send-cnset-beyond-a-long", send(cnset="PFS1:1-9223372036854775808"), ev.r_out_of_range("cnset")),
    ("send-cnset-2-64", send(cnset="PFS1:18446744073709551616"), ev.r_out_of_range("cnset")),
    ("send-cnset-2-48", send(cnset={"PFS1": [[1, 2**48]]}), ev.r_out_of_range("cnset")),
    ("send-cnset-reversed", send(cnset="PFS1:9-3"), ev.r_lo_above_hi("cnset")),
    ("send-cnset-zero", send(cnset="PFS1:0-3"), ev.r_cn_below_1("cnset")),
    ("send-cnset-negative", send(cnset={"PFS1": [[-5, 3]]}), ev.r_cn_below_1("cnset")),
    ("send-changes-beyond", send(changes="PFS1:1-281474976710656"), ev.r_out_of_range("changes")),
    ("send-cnset-ranges-text", send(cnset={"PFS1": "1-3"}), ev.r_ill_typed("cnset")),
    ("send-cnset-float", send(cnset={"PFS1": [[1, 2.5]]}), ev.r_ill_typed("cnset")),
    ("send-cnset-unknown-text", send(cnset="PFS1:1;PFS9:1-3"), ev.r_unknown_store("cnset")),
    ("send-cnset-unknown-object", send(cnset={"PFS9": [[1, 3]]}), ev.r_unknown_store("cnset")),
    ("send-cnset-below-1-text", send(cnset="PFS1:0-3"), ev.r_cn_below_1("cnset")),
    ("send-cnset-below-1-object", send(cnset={"PFS1": [[-1, 2]]}), ev.r_cn_below_1("cnset")),
    ("send-cnset-lo-hi-text", send(cnset="PFS1:3-1"), ev.r_lo_above_hi("cnset")),
    ("send-cnset-lo-hi-object", send(cnset={"PFS1": [[4, 2]]}), ev.r_lo_above_hi("cnset")),
    ("send-changes-missing", send(changes=DROP), ev.r_missing("changes")),
    (
        "send-hierarchy-changes-missing",
        send(type="hierarchy", fid="1-1", changes=DROP),
        ev.r_missing("changes"),
    ),
    ("send-response-changes-missing", send(type="backfill_response", changes=DROP), ev.r_missing("changes")),
    ("send-changes-garbage", send(changes="PFS1:"), ev.r_ill_typed("changes")),
    ("send-changes-unknown", send(changes={"PFS8": [[1, 1]]}), ev.r_unknown_store("changes")),
    ("send-changes-below-1", send(changes="PFS1:0"), ev.r_cn_below_1("changes")),
    ("send-changes-lo-hi", send(changes={"PFS1": [[5, 4]]}), ev.r_lo_above_hi("changes")),
    ("request-requested-missing", bfreq(requested=DROP), ev.r_missing("requested")),
    ("request-requested-garbage", bfreq(requested=["PFS1", 1]), ev.r_ill_typed("requested")),
    ("request-requested-unknown", bfreq(requested="PFS6:1"), ev.r_unknown_store("requested")),
    ("request-requested-below-1", bfreq(requested={"PFS1": [[0, 0]]}), ev.r_cn_below_1("requested")),
    ("request-requested-lo-hi", bfreq(requested="PFS1:9-2"), ev.r_lo_above_hi("requested")),
    ("request-source-unknown", bfreq(source="PFS8"), ev.r_unknown_store("source")),
    ("request-source-number", bfreq(source=2), ev.r_ill_typed("source")),
    ("request-source-empty", bfreq(source=""), ev.r_ill_typed("source")),
    ("request-source-not-in-to", bfreq(source="PFS3"), ev.R_SOURCE_NOT_IN_TO),
    ("status-request-responders-missing", sreq(responders=DROP), ev.r_missing("responders")),
    ("status-request-responders-string", sreq(responders="PFS2"), ev.r_ill_typed("responders")),
    ("status-request-responders-twice", sreq(responders=["PFS2", "PFS2"]), ev.r_ill_typed("responders")),
    ("status-request-responders-unknown", sreq(responders=["PFS5"]), ev.r_unknown_store("responders")),
    # receive
    ("receive-msg-missing", receive(msg=DROP), ev.r_missing("msg")),
    ("receive-msg-number", receive(msg=1), ev.r_ill_typed("msg")),
    ("receive-msg-empty", receive(msg=""), ev.r_ill_typed("msg")),
    ("receive-never-sent", receive(msg="m9"), ev.R_NEVER_SENT),
    ("receive-not-addressee", receive(store="PFS3"), ev.R_NOT_ADDRESSEE),
    ("receive-by-the-sender", receive(store="PFS1"), ev.R_NOT_ADDRESSEE),
    ("receive-before-send", receive(ts=ts(-1)), ev.R_BEFORE_SEND),
    ("receive-before-send-other-offset", receive(ts="2026-11-02T08:59:59+01:00"), ev.R_BEFORE_SEND),
    ("receive-twice", receive(ts=ts(6)), ev.R_RECEIVED_TWICE),
    # replicas
    ("replicas-hierarchy", replicas(fid="1-1"), ev.R_HIERARCHY_REPLICAS),
    ("replicas-fid-missing", replicas(fid=DROP), ev.r_missing("fid")),
    ("replicas-fid-bad", replicas(fid="ABC"), ev.r_ill_typed("fid")),
    ("replicas-missing", replicas(replicas=DROP), ev.r_missing("replicas")),
    ("replicas-string", replicas(replicas="PFS1"), ev.r_ill_typed("replicas")),
    ("replicas-twice", replicas(replicas=["PFS1", "PFS1"]), ev.r_ill_typed("replicas")),
    ("replicas-unknown", replicas(replicas=["PFS1", "X"]), ev.r_unknown_store("replicas")),
    ("replicas-path-number", replicas(path=3), ev.r_ill_typed("path")),
    # derived: a list of field names, on any kind
    ("derived-string", send(derived="cnset"), ev.r_ill_typed("derived")),
    ("derived-object", send(derived={"cnset": True}), ev.r_ill_typed("derived")),
    ("derived-number-item", change(derived=[1]), ev.r_ill_typed("derived")),
    ("derived-empty-name", change(derived=["event", ""]), ev.r_ill_typed("derived")),
    ("derived-true", receive(derived=True), ev.r_ill_typed("derived")),
    # a lone surrogate (a ``\ud800`` escape) is no text: it cannot be written as UTF-8
    ("receive-msg-lone-surrogate", receive(msg="m\ud800"), ev.r_ill_typed("msg")),
    ("send-msg-lone-surrogate", send(msg="\udc00"), ev.r_ill_typed("msg")),
    ("change-item-lone-surrogate", change(item="a\ud800b"), ev.r_ill_typed("item")),
    ("replicas-path-lone-surrogate", replicas(path="p\udfff"), ev.r_ill_typed("path")),
    ("derived-lone-surrogate", change(derived=["event", "\ud800"]), ev.r_ill_typed("derived")),
    # between lines
    ("msg-reused", send(msg="m1"), ev.R_MSG_REUSED),
    ("msg-reused-other-to", send(msg="m1", ts=ts(0), to=["PFS3"]), ev.R_MSG_REUSED),
    ("cn-same", change(store="PFS1", cn=5), ev.R_CN_NOT_INCREASING),
    ("cn-lower", change(store="PFS1", cn=4), ev.R_CN_NOT_INCREASING),
    ("cn-lower-fid-case", change(store="PFS1", cn=2, fid="1-abc"), ev.R_CN_NOT_INCREASING),
]


def write(path: Path, lines: list[str | bytes], *, newline: bytes = b"\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join((x if isinstance(x, bytes) else x.encode("utf-8")) + newline for x in lines))
    return path


def rows(log: EventLog) -> list[tuple[str, int, str, str]]:
    return [(r.source, r.line, r.reason, r.text) for r in log.rejects]


def named(log: EventLog) -> list[tuple[int, str | None, int | None]]:
    """Each reject's line and the line it names (source, line): the accepted line it conflicts with."""
    return [(r.line, r.conflict_source, r.conflict_line) for r in log.rejects]


def balanced(log: EventLog) -> bool:
    return log.lines_read == log.accepted + log.duplicates + len(log.rejects)


def test_the_prelude_is_clean(topo: Topology) -> None:
    log = event_log_from_lines(PRELUDE, topo)
    assert (log.lines_read, log.accepted, log.duplicates, log.rejects) == (3, 3, 0, [])


@pytest.mark.parametrize(("text", "reason"), [(t, r) for _, t, r in CASES], ids=[i for i, _, _ in CASES])
def test_every_reject_reason_from_a_file(
    topo: Topology, tmp_path: Path, text: str | bytes, reason: str
) -> None:
    path = write(tmp_path / "events.jsonl", [*PRELUDE, text])
    log = read_event_log([path], topo)
    expected_text = "" if isinstance(text, bytes) else text
    assert rows(log) == [(str(path), 4, reason, expected_text)]
    # the prelude line a rule between lines names: m1's send, PFS2's receive of it, PFS1's change 5
    names = {
        ev.R_MSG_REUSED: 1,
        ev.R_NOT_ADDRESSEE: 1,
        ev.R_BEFORE_SEND: 1,
        ev.R_RECEIVED_TWICE: 2,
        ev.R_CN_NOT_INCREASING: 3,
    }
    earlier = (str(path), names[reason]) if reason in names else (None, None)
    assert log.rejects[0] == RejectRow(str(path), 4, reason, expected_text, *earlier)
    assert (log.lines_read, log.accepted, log.duplicates) == (4, 3, 0)
    assert balanced(log)


@pytest.mark.parametrize(
    ("text", "reason"),
    [(t, r) for _, t, r in CASES if isinstance(t, str)],
    ids=[i for i, t, _ in CASES if isinstance(t, str)],
)
def test_every_reject_reason_in_memory(topo: Topology, text: str, reason: str) -> None:
    log = event_log_from_lines([*PRELUDE, text], topo, source="mem")
    assert rows(log) == [("mem", 4, reason, text)]
    assert log.accepted == 3 and log.duplicates == 0 and balanced(log)


def test_every_reason_constant_and_function_is_covered() -> None:
    reasons = {r for _, _, r in CASES}
    constants = {v for k, v in vars(ev).items() if k.startswith("R_") and isinstance(v, str)}
    assert len(constants) == 18
    assert constants <= reasons, constants - reasons
    functions = [f for k, f in vars(ev).items() if k.startswith("r_") and callable(f)]
    assert {f.__name__ for f in functions} == {
        "r_missing",
        "r_ill_typed",
        "r_unknown_store",
        "r_cn_below_1",
        "r_lo_above_hi",
        "r_out_of_range",
    }
    for f in functions:
        prefix = f("FIELD").replace("FIELD", "")
        assert any(r.startswith(prefix) for r in reasons), f.__name__


def test_reason_texts_are_fixed() -> None:
    """Operators' scripts and the Spark job read these exact phrases."""
    assert ev.r_missing("ts") == "missing field: ts"
    assert ev.r_ill_typed("cn") == "ill-typed field: cn"
    assert ev.r_unknown_store("to") == "unknown store in field: to"
    assert ev.r_cn_below_1("cnset") == "CN below 1 in field: cnset"
    assert ev.r_lo_above_hi("changes") == "range with lo > hi in field: changes"
    assert ev.r_out_of_range("bytes") == "number out of range in field: bytes"
    assert (ev.R_EMPTY, ev.R_NOT_UTF8, ev.R_NOT_JSON, ev.R_NOT_OBJECT) == (
        "empty line",
        "not UTF-8",
        "not JSON",
        "not a JSON object",
    )
    assert (ev.R_UNKNOWN_KIND, ev.R_UNKNOWN_TYPE, ev.R_BAD_TS) == (
        "unknown kind",
        "unknown type",
        "bad timestamp",
    )
    assert ev.R_HIERARCHY_REPLICAS == "replicas event for the hierarchy 1-1"
    assert ev.R_NEVER_SENT == "receive of a message never sent"
    assert ev.R_BEFORE_SEND == "receive stamped before its send"
    assert ev.R_NOT_ADDRESSEE == "receive by a store not in to"
    assert ev.R_MSG_REUSED == "message id reused with different content"


# --------------------------------------------------------------------------------------------
# Accepted lines
# --------------------------------------------------------------------------------------------
ACCEPTED = [
    ("change-minimal", change()),
    ("change-full", change(op="create", item="item-1", bytes=0)),
    ("change-modify", change(op="modify", bytes=2048)),
    ("change-largest-numbers", change(cn=ev.MAX_CN, bytes=2**63 - 1)),
    ("send-largest-cns", send(cnset="PFS1:1-281474976710655;PFS2:1-281474976710655")),
    ("change-delete", change(op="delete")),
    ("change-null-optionals", change(op=None, item=None, bytes=None)),
    ("change-lower-case-fid", change(fid="1-abc")),
    ("change-unknown-folder", change(fid="7-77")),
    ("change-other-offset", change(ts="2026-11-02T09:00:10+01:00")),
    ("change-fraction", change(ts="2026-11-02T08:00:10.123456Z")),
    ("content-text", send()),
    ("content-object", send(cnset={"PFS1": [[1, 3]]}, changes={"PFS1": [[3, 3]]})),
    ("content-empty-sets", send(cnset="", changes={})),
    ("content-two-to", send(to=["PFS3", "PFS2"])),
    ("hierarchy", send(type="hierarchy", fid="1-1")),
    ("response-folder", send(type="backfill_response")),
    ("response-hierarchy", send(type="backfill_response", fid="1-1")),
    ("status", send(type="status", changes=DROP)),
    ("status-hierarchy", send(type="status", fid="1-1", changes=DROP)),
    ("request-text", bfreq()),
    ("request-object", bfreq(requested={"PFS2": [[1, 4], [6, 6]]})),
    ("request-no-source", bfreq(source=DROP, to=["PFS2", "PFS3"])),
    ("request-null-source", bfreq(source=None)),
    ("request-hierarchy", bfreq(fid="1-1")),
    ("status-request", sreq()),
    ("status-request-no-responders", sreq(responders=[])),
    ("replicas", replicas()),
    ("replicas-empty", replicas(replicas=[])),
    ("replicas-path", replicas(path="IPM_SUBTREE\\Renamed")),
    ("status-down", status()),
    ("status-up", status(status="up")),
    ("extra-field", status(note="ignored")),
    ("derived-send", send(derived=["cnset", "to"])),
    ("derived-change", change(derived=["event"], implied_by="m1")),
    ("derived-empty", status(derived=[])),
    ("derived-null", replicas(derived=None)),
    ("crlf-tolerant", status() + "\r"),
]


@pytest.mark.parametrize("text", [t for _, t in ACCEPTED], ids=[i for i, _ in ACCEPTED])
def test_valid_lines_are_accepted(topo: Topology, text: str) -> None:
    log = event_log_from_lines([*PRELUDE, text], topo)
    assert log.rejects == []
    assert (log.lines_read, log.accepted, log.duplicates) == (4, 4, 0)


def test_fields_of_a_change(topo: Topology) -> None:
    log = event_log_from_lines([change(fid="1-abc", op="modify", item="it", bytes=12)], topo)
    (e,) = log.events
    assert (e.ts, e.seq, e.store, e.kind, e.fid, e.cn, e.op, e.item, e.bytes) == (
        at(10),
        make_seq(0, 1),
        "PFS2",
        "change",
        "1-ABC",
        1,
        "modify",
        "it",
        12,
    )


def test_fields_of_sends(topo: Topology) -> None:
    log = event_log_from_lines(
        [
            send(to=["PFS3", "PFS2"], cnset={"PFS1": [[1, 16], [18, 18]]}, changes="PFS1:18", fid="1-abc"),
            bfreq(msg="m3", requested={"PFS2": [[2, 4]]}, changes="PFS1:1", to=["PFS3", "PFS2"]),
            sreq(msg="m4", responders=["PFS3", "PFS2"], to=["PFS2", "PFS3"]),
            send(msg="m5", type="status", changes="PFS1:1"),
        ],
        topo,
    )
    assert log.rejects == []
    m = log.messages["m2"]
    assert (m.msg, m.sender, m.type, m.fid, m.to, m.sent_at, m.seq) == (
        "m2",
        "PFS1",
        "content",
        "1-ABC",
        ("PFS3", "PFS2"),
        at(10),
        make_seq(0, 1),
    )
    assert m.cnset == CNSet.parse("PFS1:1-16,18") and m.cnset.text() == "PFS1:1-16,18"
    assert m.changes == CNSet.parse("PFS1:18")
    assert (m.requested, m.source, m.responders) == (None, None, None)
    assert m.asked() == ("PFS3", "PFS2")
    assert log.events[0].message is m and log.events[0].fid == "1-ABC"
    r = log.messages["m3"]
    assert r.requested == CNSet.parse("PFS2:2-4") and r.source == "PFS2"
    assert r.changes is None  # a request carries no changes, even if the line has some
    assert r.asked() == ("PFS2",)
    s = log.messages["m4"]
    assert s.responders == ("PFS3", "PFS2") and s.changes is None
    assert log.messages["m5"].changes is None


def test_fields_of_replicas_and_status(topo: Topology) -> None:
    log = event_log_from_lines([replicas(path="P", fid="1-abc"), status(status="up")], topo)
    r, s = log.events
    assert (r.kind, r.fid, r.replicas, r.path, r.store) == (
        "replicas",
        "1-ABC",
        ("PFS1", "PFS2"),
        "P",
        "PFS1",
    )
    assert (s.kind, s.status, s.store, s.ts) == ("store_status", "up", "PFS3", at(10))


def test_derived_is_kept_as_a_set_of_names(topo: Topology) -> None:
    log = event_log_from_lines(
        [
            send(derived=["to", "cnset", "to"]),
            send(msg="m3"),
            change(derived=["event"], implied_by="m2"),
            change(cn=2, ts=ts(11)),
        ],
        topo,
    )
    assert log.rejects == []
    assert log.messages["m2"].derived == ("cnset", "to") and log.messages["m3"].derived == ()
    assert [e.derived for e in log.events if e.kind == "change"] == [("event",), ()]


def test_derived_in_another_order_is_the_same_meaning(topo: Topology) -> None:
    log = event_log_from_lines([send(derived=["cnset", "to"]), send(derived=["to", "cnset"])], topo)
    assert (log.accepted, log.duplicates, log.rejects) == (1, 1, [])


def test_a_change_known_and_the_same_change_inferred_are_two_meanings(topo: Topology) -> None:
    log = event_log_from_lines([change(), change(derived=["event"])], topo)
    assert (log.accepted, log.duplicates) == (1, 0)
    assert [(r.line, r.reason) for r in log.rejects] == [(2, ev.R_CN_NOT_INCREASING)]


@pytest.mark.parametrize("field", ["cnset", "changes"])
def test_both_cn_set_forms_for_a_send(topo: Topology, field: str) -> None:
    as_text = send(msg="a", **{field: "PFS1:1-16,18;PFS2:3"})
    as_object = send(msg="b", **{field: {"PFS2": [[3, 3]], "PFS1": [[1, 16], [18, 18]]}})
    unmerged = send(msg="c", **{field: {"PFS1": [[18, 18], [1, 9], [10, 16]], "PFS2": [[3, 3]]}})
    log = event_log_from_lines([as_text, as_object, unmerged], topo)
    assert log.rejects == [] and log.accepted == 3
    sets = {getattr(log.messages[k], field) for k in "abc"}
    assert len(sets) == 1 and sets.pop().text() == "PFS1:1-16,18;PFS2:3"


def test_both_cn_set_forms_for_a_request(topo: Topology) -> None:
    log = event_log_from_lines(
        [bfreq(msg="a", requested="PFS2:1-4,6"), bfreq(msg="b", requested={"PFS2": [[1, 4], [6, 6]]})], topo
    )
    assert log.rejects == []
    assert log.messages["a"].requested == log.messages["b"].requested == CNSet.parse("PFS2:1-4,6")


# --------------------------------------------------------------------------------------------
# Accounting and duplicates
# --------------------------------------------------------------------------------------------
def test_accounting_on_a_mixed_file(topo: Topology, tmp_path: Path) -> None:
    m1 = line(SEND, ts=ts(1), msg="m1", to=["PFS2", "PFS3"], cnset="PFS1:1", changes="PFS1:1")
    lines: list[str | bytes] = [
        change(store="PFS1", ts=ts(0)),  # 1 accepted
        change(store="PFS1", ts=ts(0)),  # 2 duplicate
        "{oops",  # 3 not JSON
        m1,  # 4 accepted
        receive(ts=ts(2)),  # 5 accepted
        receive(ts=ts(2)),  # 6 duplicate
        receive(ts=ts(3)),  # 7 received twice
        receive(ts=ts(3), store="PFS3", msg="m9"),  # 8 never sent
        "",  # 9 empty
        line(
            SEND, ts=ts(1), msg="m1", to=["PFS3", "PFS2"], cnset={"PFS1": [[1, 1]]}, changes="PFS1:1"
        ),  # 10 dup
        change(store="PFS1", ts=ts(5)),  # 11 CN not increasing
        status(ts=ts(6)),  # 12 accepted
        replicas(ts=ts(7)),  # 13 accepted
        b"\xc3\x28",  # 14 not UTF-8
        status(kind="nope"),  # 15 unknown kind
    ]
    path = write(tmp_path / "mixed.jsonl", lines)
    log = read_event_log([path], topo)
    assert (log.lines_read, log.accepted, log.duplicates, len(log.rejects)) == (15, 5, 3, 7)
    assert balanced(log)
    assert [(r.line, r.reason) for r in log.rejects] == [
        (3, ev.R_NOT_JSON),
        (7, ev.R_RECEIVED_TWICE),
        (8, ev.R_NEVER_SENT),
        (9, ev.R_EMPTY),
        (11, ev.R_CN_NOT_INCREASING),
        (14, ev.R_NOT_UTF8),
        (15, ev.R_UNKNOWN_KIND),
    ]
    assert all(r.source == str(path) for r in log.rejects)
    assert [e.seq & 0xFFFFFFFF for e in log.events] == [1, 4, 5, 12, 13]


def test_exact_duplicates_are_counted_and_applied_once(topo: Topology) -> None:
    lines = [change(), change(), status(), change(), status(), status(), PRELUDE[0], PRELUDE[0]]
    log = event_log_from_lines(lines, topo)
    assert log.rejects == []
    assert (log.lines_read, log.accepted, log.duplicates) == (8, 3, 5)
    assert [e.kind for e in log.events] == ["change", "store_status", "send"]
    assert [e.seq for e in log.events] == [
        make_seq(0, 1),
        make_seq(0, 3),
        make_seq(0, 7),
    ]  # the first of each


def test_a_change_written_differently_is_still_a_duplicate(topo: Topology) -> None:
    a = change(op="create")
    b = json.dumps(
        {
            "cn": 1,
            "op": "create",
            "kind": "change",
            "fid": "1-abc",
            "store": "PFS2",
            "ts": "2026-11-02T09:00:10+01:00",
        }
    )
    log = event_log_from_lines([a, b], topo)
    assert (log.accepted, log.duplicates, log.rejects) == (1, 1, [])


BASE_SEND = {
    "ts": "2026-11-02T08:00:00Z",
    "store": "PFS1",
    "kind": "send",
    "msg": "m1",
    "type": "content",
    "fid": "1-ABC",
    "to": ["PFS2", "PFS3"],
    "cnset": {"PFS1": [[1, 16], [18, 18]]},
    "changes": "PFS1:18",
}
SAME_MEANING = [
    ("cnset-as-text", {"cnset": "PFS1:1-16,18"}),
    ("cnset-text-unordered", {"cnset": "PFS1:18,1-10,5-16"}),
    ("cnset-object-unmerged", {"cnset": {"PFS1": [[1, 8], [9, 16], [18, 18]]}}),
    ("changes-as-object", {"changes": {"PFS1": [[18, 18]]}}),
    ("to-reordered", {"to": ["PFS3", "PFS2"]}),
    ("other-offset", {"ts": "2026-11-02T09:00:00+01:00"}),
    ("negative-offset", {"ts": "2026-11-02T03:00:00-05:00"}),
    ("with-fraction", {"ts": "2026-11-02T08:00:00.000Z"}),
    ("fid-lower-case", {"fid": "1-abc"}),
    ("derived-empty", {"derived": []}),
    (
        "all-at-once",
        {
            "cnset": "PFS1:1-16,18",
            "to": ["PFS3", "PFS2"],
            "ts": "2026-11-02T10:00:00+02:00",
            "changes": {"PFS1": [[18, 18]]},
        },
    ),
]


@pytest.mark.parametrize("over", [o for _, o in SAME_MEANING], ids=[i for i, _ in SAME_MEANING])
def test_a_send_with_the_same_meaning_is_a_duplicate(topo: Topology, over: dict[str, Any]) -> None:
    first = json.dumps(BASE_SEND)
    again = json.dumps(
        dict(reversed(list({**BASE_SEND, **over}.items()))), indent=None, separators=(",", ":")
    )
    log = event_log_from_lines([first, again, receive(ts=ts(1)), receive(store="PFS3", ts=ts(1))], topo)
    assert log.rejects == []
    assert (log.lines_read, log.accepted, log.duplicates) == (4, 3, 1)
    sends = [e for e in log.events if e.kind == "send"]
    assert len(sends) == 1 and sends[0].seq == make_seq(0, 1)
    assert log.messages["m1"].to == ("PFS2", "PFS3")  # the first line's
    assert log.messages["m1"].cnset.text() == "PFS1:1-16,18"


REUSED = [
    ("other-cnset", {"cnset": "PFS1:1-17"}),
    ("other-changes", {"changes": "PFS1:17-18"}),
    ("fewer-to", {"to": ["PFS2"]}),
    ("other-type", {"type": "backfill_response"}),
    ("other-time", {"ts": "2026-11-02T08:00:01Z"}),
    ("other-sender", {"store": "PFS2", "to": ["PFS1", "PFS3"]}),
    ("other-folder", {"fid": "1-ABD"}),
    ("status-type", {"type": "status", "changes": DROP}),
    # a set the writer only inferred is not the set it read: the tables say which
    ("derived-cnset", {"derived": ["cnset"]}),
]


@pytest.mark.parametrize("over", [o for _, o in REUSED], ids=[i for i, _ in REUSED])
def test_a_message_id_reused_with_different_content_is_rejected(topo: Topology, over: dict[str, Any]) -> None:
    first = json.dumps(BASE_SEND)
    other = line(BASE_SEND, **over)
    log = event_log_from_lines([first, other, other], topo)
    assert rows(log) == [("<memory>", 2, ev.R_MSG_REUSED, other), ("<memory>", 3, ev.R_MSG_REUSED, other)]
    assert named(log) == [(2, "<memory>", 1), (3, "<memory>", 1)]  # the message's send, for the repeat too
    assert (log.accepted, log.duplicates) == (1, 0) and balanced(log)
    assert log.messages["m1"].seq == make_seq(0, 1)


def test_receives_join_the_first_send_of_an_id(topo: Topology) -> None:
    first = json.dumps(BASE_SEND)  # to PFS2 and PFS3
    reused = line(BASE_SEND, to=["PFS2"], cnset="PFS1:1")
    log = event_log_from_lines([first, reused, receive(store="PFS3", ts=ts(1))], topo)
    assert [(r.line, r.reason) for r in log.rejects] == [(2, ev.R_MSG_REUSED)]
    rcv = log.events[-1]
    assert rcv.kind == "receive" and rcv.message is log.messages["m1"] and rcv.message.to == ("PFS2", "PFS3")


def test_the_first_usable_send_of_an_id_is_the_message(topo: Topology) -> None:
    broken = line(BASE_SEND, to=["PFS1"])  # addressed to its sender: rejected on its own
    good = line(BASE_SEND, cnset="PFS1:1")
    log = event_log_from_lines([broken, good, receive(ts=ts(1))], topo)
    assert [(r.line, r.reason) for r in log.rejects] == [(1, ev.R_TO_SENDER)]
    assert log.accepted == 2 and log.messages["m1"].cnset.text() == "PFS1:1"


# --------------------------------------------------------------------------------------------
# Receives against their sends
# --------------------------------------------------------------------------------------------
def test_a_receive_before_its_send_in_the_input_is_accepted(topo: Topology, tmp_path: Path) -> None:
    pfs2 = write(tmp_path / "a-pfs2.jsonl", [receive(ts=ts(5))])
    pfs1 = write(tmp_path / "b-pfs1.jsonl", [line(SEND, ts=ts(0), msg="m1")])
    log = read_event_log([pfs1, pfs2], topo)
    assert log.rejects == [] and log.accepted == 2
    rcv, snd = log.events  # input order: a-pfs2 first
    assert rcv.kind == "receive" and snd.kind == "send"
    assert rcv.message is snd.message is log.messages["m1"]
    assert rcv.fid == "1-ABC"
    assert [e.kind for e in log.in_time_order()] == ["send", "receive"]


def test_a_receive_in_an_earlier_file_stamped_before_the_send_is_rejected(
    topo: Topology, tmp_path: Path
) -> None:
    text = receive(ts=ts(-5))
    pfs2 = write(tmp_path / "a.jsonl", [text])
    write(tmp_path / "b.jsonl", [line(SEND, ts=ts(0), msg="m1")])
    log = read_event_log([tmp_path], topo)
    assert rows(log) == [(str(pfs2), 1, ev.R_BEFORE_SEND, text)]
    assert named(log) == [(1, str(tmp_path / "b.jsonl"), 1)]  # its send, later in the input
    assert log.accepted == 1 and log.events[0].seq == make_seq(1, 1) and log.events[0].kind == "send"


def test_receive_checks(topo: Topology) -> None:
    m1 = line(SEND, ts=ts(0), msg="m1", to=["PFS2", "PFS3"])
    lines = [
        m1,
        receive(ts=ts(0)),  # 2 accepted: at the send's own instant
        receive(ts=ts(9)),  # 3 PFS2 again, later
        receive(ts=ts(0)),  # 4 exact repeat of line 2: a duplicate
        receive(store="PFS1", ts=ts(9)),  # 5 the sender is not an addressee
        receive(store="PFS3", ts=ts(-1)),  # 6 before the send
        receive(store="PFS3", ts="2026-11-02T09:00:02+01:00"),  # 7 accepted
        receive(store="PFS3", ts=ts(1)),  # 8 PFS3 again, earlier than its first but still a second receive
        receive(store="PFS2", msg="m7", ts=ts(3)),  # 9 never sent
    ]
    log = event_log_from_lines(lines, topo)
    assert [(r.line, r.reason, r.text) for r in log.rejects] == [
        (3, ev.R_RECEIVED_TWICE, lines[2]),
        (5, ev.R_NOT_ADDRESSEE, lines[4]),
        (6, ev.R_BEFORE_SEND, lines[5]),
        (8, ev.R_RECEIVED_TWICE, lines[7]),
        (9, ev.R_NEVER_SENT, lines[8]),
    ]
    # received twice: the store's first accepted receive; not an addressee or before the send:
    # the send; never sent: no line
    assert named(log) == [
        (3, "<memory>", 2),
        (5, "<memory>", 1),
        (6, "<memory>", 1),
        (8, "<memory>", 7),
        (9, None, None),
    ]
    assert (log.accepted, log.duplicates) == (3, 1) and balanced(log)
    accepted = [(e.store, e.ts) for e in log.events if e.kind == "receive"]
    assert accepted == [("PFS2", at(0)), ("PFS3", at(2))]


def test_a_receive_of_a_message_whose_send_was_rejected_is_never_sent(topo: Topology) -> None:
    bad_send = line(SEND, ts=ts(0), msg="m1", cnset="PFS1:3-1")
    rcv = receive(ts=ts(1))
    log = event_log_from_lines([bad_send, rcv, rcv], topo)
    assert [(r.line, r.reason) for r in log.rejects] == [
        (1, ev.r_lo_above_hi("cnset")),
        (2, ev.R_NEVER_SENT),
        (3, ev.R_NEVER_SENT),
    ]
    assert (log.accepted, log.duplicates) == (0, 0) and balanced(log)


# --------------------------------------------------------------------------------------------
# Change numbers only increase, in event order
# --------------------------------------------------------------------------------------------
def test_change_numbers_increase_in_time_order_not_input_order(topo: Topology) -> None:
    lines = [
        change(ts=ts(10), cn=5),  # 1
        change(ts=ts(0), cn=3),  # 2: earlier in time, so fine although after 5 in the input
        change(ts=ts(20), cn=4),  # 3: after 5 in time: rejected
        change(ts=ts(30), cn=5),  # 4: equal to the last: rejected
        change(ts=ts(40), cn=6),  # 5: fine (the rejected ones do not move the bar)
        change(ts=ts(15), cn=1, store="PFS1"),  # 6: another store
        change(ts=ts(15), cn=1, fid="1-DEF"),  # 7: another folder
    ]
    log = event_log_from_lines(lines, topo)
    assert [(r.line, r.reason, r.text) for r in log.rejects] == [
        (3, ev.R_CN_NOT_INCREASING, lines[2]),
        (4, ev.R_CN_NOT_INCREASING, lines[3]),
    ]
    assert named(log) == [(3, "<memory>", 1), (4, "<memory>", 1)]  # the accepted 5, not the rejected 4
    assert [e.cn for e in log.events] == [5, 3, 6, 1, 1]
    assert balanced(log)


def test_change_numbers_across_files(topo: Topology, tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", [change(ts=ts(10), cn=5)])
    b = write(tmp_path / "b.jsonl", [change(ts=ts(0), cn=3), change(ts=ts(20), cn=4)])
    log = read_event_log([b, a], topo)
    assert [(r.source, r.line, r.reason) for r in log.rejects] == [(str(b), 2, ev.R_CN_NOT_INCREASING)]
    assert named(log) == [(2, str(a), 1)]
    assert [e.cn for e in log.events] == [5, 3]


def test_equal_times_fall_back_to_input_order(topo: Topology) -> None:
    lines = [change(cn=5), change(cn=3, ts="2026-11-02T09:00:10+01:00")]
    log = event_log_from_lines(lines, topo)
    assert [(r.line, r.reason) for r in log.rejects] == [(2, ev.R_CN_NOT_INCREASING)]


def test_a_duplicate_of_a_change_rejected_for_its_cn_is_rejected_too(topo: Topology) -> None:
    late = change(ts=ts(20), cn=5)
    same_other_spelling = json.dumps(
        {"kind": "change", "cn": 5, "fid": "1-abc", "store": "PFS2", "ts": "2026-11-02T09:00:20+01:00"}
    )
    lines = [change(ts=ts(10), cn=5), late, late, same_other_spelling]
    log = event_log_from_lines(lines, topo)
    assert [(r.line, r.reason, r.text) for r in log.rejects] == [
        (2, ev.R_CN_NOT_INCREASING, late),
        (3, ev.R_CN_NOT_INCREASING, late),
        (4, ev.R_CN_NOT_INCREASING, same_other_spelling),
    ]
    assert named(log) == [(2, "<memory>", 1), (3, "<memory>", 1), (4, "<memory>", 1)]
    assert (log.accepted, log.duplicates) == (1, 0) and balanced(log)


def test_a_change_first_taken_then_rejected_for_its_cn_takes_its_repeats_along(topo: Topology) -> None:
    """The repeat is first counted as a duplicate of an accepted line; then a later line (earlier
    in time) makes the original fail, and the repeat must move to the rejects."""
    late = change(ts=ts(20), cn=5)
    lines = [late, late, change(ts=ts(10), cn=6), status()]
    log = event_log_from_lines(lines, topo)
    assert [(r.line, r.reason, r.text) for r in log.rejects] == [
        (1, ev.R_CN_NOT_INCREASING, late),
        (2, ev.R_CN_NOT_INCREASING, late),
    ]
    assert named(log) == [(1, "<memory>", 3), (2, "<memory>", 3)]  # a later line, earlier in time
    assert (log.lines_read, log.accepted, log.duplicates) == (4, 2, 0)
    assert [e.cn for e in log.events if e.kind == "change"] == [6]


def test_a_repeat_of_a_rejected_line_shares_its_reason(topo: Topology) -> None:
    text = receive(msg="ghost")
    log = event_log_from_lines([text, text, text], topo)
    assert rows(log) == [("<memory>", n, ev.R_NEVER_SENT, text) for n in (1, 2, 3)]
    assert (log.accepted, log.duplicates) == (0, 0)


# --------------------------------------------------------------------------------------------
# Files, folders, globs
# --------------------------------------------------------------------------------------------
@pytest.fixture()
def logs(tmp_path: Path) -> Path:
    d = tmp_path / "logs"
    write(d / "b.jsonl", [status(ts=ts(1)), "oops-b"])
    write(d / "a.jsonl", [change(ts=ts(2)), change(ts=ts(3), cn=2), "oops-a"])
    write(d / "sub" / "c.jsonl", ["oops-c", status(ts=ts(0), status="up")])
    write(d / "sub" / "topology.json", ['{"sites": []}'])  # beside a log, not part of it
    write(d / "notes.txt", ["not an event log"])
    write(d / "sub" / "d.log", ["not an event log either"])
    return d


def test_a_folder_is_read_in_sorted_path_order_with_per_file_line_numbers(topo: Topology, logs: Path) -> None:
    log = read_event_log([logs], topo)
    a, b, c = str(logs / "a.jsonl"), str(logs / "b.jsonl"), str(logs / "sub" / "c.jsonl")
    assert rows(log) == [
        (a, 3, ev.R_NOT_JSON, "oops-a"),
        (b, 2, ev.R_NOT_JSON, "oops-b"),
        (c, 1, ev.R_NOT_JSON, "oops-c"),
    ]
    assert (log.lines_read, log.accepted) == (7, 4) and balanced(log)
    assert [e.seq for e in log.events] == [make_seq(0, 1), make_seq(0, 2), make_seq(1, 1), make_seq(2, 2)]
    assert [e.kind for e in log.events] == ["change", "change", "store_status", "store_status"]


def test_files_are_read_in_sorted_order_whatever_order_they_are_given(topo: Topology, logs: Path) -> None:
    a, b = logs / "a.jsonl", logs / "b.jsonl"
    one = read_event_log([b, a], topo)
    two = read_event_log([str(a), str(b)], topo)
    assert (
        rows(one) == rows(two) == [(str(a), 3, ev.R_NOT_JSON, "oops-a"), (str(b), 2, ev.R_NOT_JSON, "oops-b")]
    )
    assert [e.seq for e in one.events] == [make_seq(0, 1), make_seq(0, 2), make_seq(1, 1)]


def test_a_glob(topo: Topology, logs: Path) -> None:
    log = read_event_log([str(logs / "*.jsonl")], topo)
    assert [r.source for r in log.rejects] == [str(logs / "a.jsonl"), str(logs / "b.jsonl")]
    assert log.lines_read == 5
    deep = read_event_log([str(logs / "**" / "*.jsonl")], topo)
    assert deep.lines_read == 7
    assert [r.source for r in deep.rejects][-1] == str(logs / "sub" / "c.jsonl")


def test_expand_paths(logs: Path) -> None:
    a, b, c = str(logs / "a.jsonl"), str(logs / "b.jsonl"), str(logs / "sub" / "c.jsonl")
    assert expand_paths([logs]) == [a, b, c]
    assert expand_paths([b, logs, a]) == [a, b, c]  # each file once
    assert expand_paths([str(logs / "?.jsonl")]) == [a, b]
    assert expand_paths([str(logs / "[b]*")]) == [b]
    # a file named explicitly is read whatever its extension; the whole list is sorted
    assert expand_paths([str(logs / "sub"), str(logs / "notes.txt")]) == [str(logs / "notes.txt"), c]


def test_a_file_named_twice_is_read_once(topo: Topology, logs: Path) -> None:
    log = read_event_log([logs / "a.jsonl", logs, str(logs / "a.jsonl")], topo)
    assert log.lines_read == 7 and log.duplicates == 0


def test_a_missing_path_is_an_error_naming_it(topo: Topology, tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(FileNotFoundError, match="no such event log") as e:
        read_event_log([missing], topo)
    assert str(missing) in str(e.value)


def test_crlf_line_ends_and_a_last_line_without_one(topo: Topology, tmp_path: Path) -> None:
    p = tmp_path / "win.jsonl"
    p.write_bytes(change().encode() + b"\r\n" + b"junk\r\n" + b"\r\n" + status().encode())
    log = read_event_log([p], topo)
    assert rows(log) == [(str(p), 2, ev.R_NOT_JSON, "junk"), (str(p), 3, ev.R_EMPTY, "")]
    assert (log.lines_read, log.accepted) == (4, 2)


def test_not_utf8_keeps_the_line_numbers(topo: Topology, tmp_path: Path) -> None:
    p = tmp_path / "bytes.jsonl"
    p.write_bytes(change().encode() + b"\n" + b'{"store": "PFS\xb2"}\n' + b"\n" + status().encode() + b"\n")
    log = read_event_log([p], topo)
    assert rows(log) == [(str(p), 2, ev.R_NOT_UTF8, ""), (str(p), 3, ev.R_EMPTY, "")]
    assert (log.lines_read, log.accepted, log.duplicates) == (4, 2, 0)
    assert [e.seq for e in log.events] == [make_seq(0, 1), make_seq(0, 4)]


def test_an_empty_file_and_an_empty_folder(topo: Topology, tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_bytes(b"")
    (tmp_path / "nothing").mkdir()
    log = read_event_log([tmp_path / "empty.jsonl"], topo)
    assert (log.lines_read, log.accepted, log.duplicates, log.rejects) == (0, 0, 0, [])
    assert log.last_ts() is None and log.in_time_order() == []
    # a folder or glob that finds no log is a mistake, not an empty run
    with pytest.raises(FileNotFoundError, match=r"no \*\.jsonl event log"):
        read_event_log([tmp_path / "empty.jsonl", tmp_path / "nothing"], topo)
    with pytest.raises(FileNotFoundError, match="no file matches"):
        read_event_log([str(tmp_path / "*.log")], topo)


def test_make_seq_orders_files_before_lines() -> None:
    assert make_seq(0, 1) == 1
    assert make_seq(1, 1) == (1 << 32) | 1
    assert make_seq(0, 2**31) < make_seq(1, 1) < make_seq(1, 2) < make_seq(2, 1)


# --------------------------------------------------------------------------------------------
# Time order
# --------------------------------------------------------------------------------------------
def test_in_time_order_is_by_time_then_input_position(topo: Topology, tmp_path: Path) -> None:
    write(tmp_path / "a.jsonl", [change(ts=ts(10)), status(ts=ts(0)), status(ts=ts(0), store="PFS2")])
    write(
        tmp_path / "b.jsonl",
        [status(ts="2026-11-02T09:00:00+01:00", status="up"), change(ts=ts(5), store="PFS1")],
    )
    log = read_event_log([tmp_path], topo)
    assert log.rejects == []
    before = list(log.events)
    ordered = log.in_time_order()
    assert [(e.ts, e.seq) for e in ordered] == [
        (at(0), make_seq(0, 2)),
        (at(0), make_seq(0, 3)),
        (at(0), make_seq(1, 1)),
        (at(5), make_seq(1, 2)),
        (at(10), make_seq(0, 1)),
    ]
    assert ordered == sorted(log.events, key=lambda e: (e.ts, e.seq))
    assert log.events == before  # the input order is kept
    assert [e.seq for e in log.events] == sorted(e.seq for e in log.events)
    assert log.last_ts() == at(10)


def test_in_time_order_uses_the_instant_not_the_text(topo: Topology) -> None:
    lines = [status(ts="2026-11-02T08:30:00Z"), status(ts="2026-11-02T09:00:00+01:00", status="up")]
    log = event_log_from_lines(lines, topo)
    assert [e.status for e in log.in_time_order()] == ["up", "down"]


# --------------------------------------------------------------------------------------------
# Genuine gaps (these fail against the current code; see the report)
# --------------------------------------------------------------------------------------------
def test_a_deeply_nested_line_is_a_reject_not_a_crash(topo: Topology, tmp_path: Path) -> None:
    """``json.loads`` raises RecursionError (not ValueError) past ~1000 levels; one corrupt line
    must not stop the whole read."""
    junk = "[" * 100_000
    path = write(tmp_path / "events.jsonl", [*PRELUDE, junk])
    log = read_event_log([path], topo)
    assert rows(log) == [(str(path), 4, ev.R_NOT_JSON, junk)]
    assert log.accepted == 3 and balanced(log)


def test_a_surrogate_pair_is_text(topo: Topology) -> None:
    """An escaped pair is one character (U+1F600): kept, as UTF-8 text can hold it."""
    log = event_log_from_lines([change(item="\ud83d\ude00", ts=ts(20))], topo)
    assert log.accepted == 1 and log.events[0].item == "\U0001f600"


def test_a_fid_with_a_trailing_newline_is_ill_typed(topo: Topology) -> None:
    """``is_fid`` uses a ``$`` anchor, which also matches before a final newline, so the change is
    accepted for a folder named ``'1-ABC\\n'``."""
    text = change(fid="1-ABC\n")
    log = event_log_from_lines([text], topo)
    assert rows(log) == [("<memory>", 1, ev.r_ill_typed("fid"), text)]
