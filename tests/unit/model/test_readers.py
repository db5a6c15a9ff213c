"""The topology and event-log readers: every reject reason, duplicates, and the accounting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pfscope.spark_jobs.model import events as ev
from pfscope.spark_jobs.model.events import read_event_log
from pfscope.spark_jobs.model.timeutil import TimeError, format_ts, parse_ts
from pfscope.spark_jobs.model.topology import TopologyError, load_topology, topology_from_json
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
        {"fid": "1-123", "path": "IPM_SUBTREE\\Folder1", "parent": "1-1", "replicas": ["PFS1", "PFS2"]}
    ],
}
T0 = "2026-11-02T08:00:00Z"


@pytest.fixture(scope="module")
def topo():  # type: ignore[no-untyped-def]
    return topology_from_json(TOPO)


def j(**fields: object) -> str:
    return json.dumps(fields)


SEND = {
    "ts": T0,
    "store": "PFS1",
    "kind": "send",
    "msg": "m1",
    "type": "content",
    "fid": "1-123",
    "to": ["PFS2"],
    "cnset": "PFS1:1-3",
    "changes": "PFS1:3",
}


def send(**over: object) -> str:
    return json.dumps({**SEND, **over})


def drop(d: dict, key: str) -> str:
    return json.dumps({k: v for k, v in d.items() if k != key})


# (line, reason): each line is read alone after SEND, so a receive has a send to refer to
CASES = [
    ("", ev.R_EMPTY),
    ("   ", ev.R_EMPTY),
    ("{not json", ev.R_NOT_JSON),
    ('{"ts": "x"} trailing', ev.R_NOT_JSON),
    ("[1, 2]", ev.R_NOT_OBJECT),
    ('"a string"', ev.R_NOT_OBJECT),
    (j(ts=T0, store="PFS1"), ev.r_missing("kind")),
    (j(ts=T0, store="PFS1", kind="explode"), ev.R_UNKNOWN_KIND),
    (j(store="PFS1", kind="store_status", status="up"), ev.r_missing("ts")),
    (j(ts="yesterday", store="PFS1", kind="store_status", status="up"), ev.R_BAD_TS),
    (j(ts="2026-11-02T08:00:00", store="PFS1", kind="store_status", status="up"), ev.R_BAD_TS),  # no offset
    (j(ts=T0, kind="store_status", status="up"), ev.r_missing("store")),
    (j(ts=T0, store=7, kind="store_status", status="up"), ev.r_ill_typed("store")),
    (j(ts=T0, store="PFS9", kind="store_status", status="up"), ev.r_unknown_store("store")),
    (j(ts=T0, store="PFS1", kind="store_status", status="sideways"), ev.r_ill_typed("status")),
    (j(ts=T0, store="PFS1", kind="change", cn=1), ev.r_missing("fid")),
    (j(ts=T0, store="PFS1", kind="change", fid="folder", cn=1), ev.r_ill_typed("fid")),
    (j(ts=T0, store="PFS1", kind="change", fid="1-123"), ev.r_missing("cn")),
    (j(ts=T0, store="PFS1", kind="change", fid="1-123", cn=0), ev.r_ill_typed("cn")),
    (j(ts=T0, store="PFS1", kind="change", fid="1-123", cn="5"), ev.r_ill_typed("cn")),
    (j(ts=T0, store="PFS1", kind="change", fid="1-123", cn=True), ev.r_ill_typed("cn")),
    (j(ts=T0, store="PFS1", kind="change", fid="1-123", cn=2.5), ev.r_ill_typed("cn")),
    (j(ts=T0, store="PFS1", kind="change", fid="1-123", cn=1, op="rename"), ev.r_ill_typed("op")),
    (j(ts=T0, store="PFS1", kind="change", fid="1-123", cn=1, item=5), ev.r_ill_typed("item")),
    (j(ts=T0, store="PFS1", kind="change", fid="1-123", cn=1, bytes=-1), ev.r_ill_typed("bytes")),
    (send(type="telegram"), ev.R_UNKNOWN_TYPE),
    (drop(SEND, "msg"), ev.r_missing("msg")),
    (send(msg=""), ev.r_ill_typed("msg")),
    (send(fid="1-1"), ev.R_TYPE_FID),
    (send(type="hierarchy"), ev.R_TYPE_FID),
    (drop(SEND, "to"), ev.r_missing("to")),
    (send(to=[]), ev.r_ill_typed("to")),
    (send(to="PFS2"), ev.r_ill_typed("to")),
    (send(to=["PFS2", "PFS2"]), ev.r_ill_typed("to")),
    (send(to=["PFS7"]), ev.r_unknown_store("to")),
    (send(to=["PFS1"]), ev.R_TO_SENDER),
    (drop(SEND, "cnset"), ev.r_missing("cnset")),
    (send(cnset="PFS1:3-1"), ev.r_lo_above_hi("cnset")),
    (send(cnset={"PFS1": [[4, 2]]}), ev.r_lo_above_hi("cnset")),
    (send(cnset="PFS1:0-3"), ev.r_cn_below_1("cnset")),
    (send(cnset={"PFS1": [[-1, 2]]}), ev.r_cn_below_1("cnset")),
    (send(cnset="PFS1:x"), ev.r_ill_typed("cnset")),
    (send(cnset=[1, 2]), ev.r_ill_typed("cnset")),
    (send(cnset="PFS9:1-3"), ev.r_unknown_store("cnset")),
    (drop(SEND, "changes"), ev.r_missing("changes")),
    (send(changes="PFS1:5-4"), ev.r_lo_above_hi("changes")),
    (send(type="backfill_request", changes=None), ev.r_missing("requested")),
    (send(type="backfill_request", requested="PFS2:1", source="PFS3"), ev.R_SOURCE_NOT_IN_TO),
    (send(type="backfill_request", requested="PFS2:1", source="PFS8"), ev.r_unknown_store("source")),
    (send(type="status_request", changes=None), ev.r_missing("responders")),
    (send(type="status_request", responders=["PFS5"]), ev.r_unknown_store("responders")),
    (j(ts=T0, store="PFS2", kind="receive"), ev.r_missing("msg")),
    (j(ts=T0, store="PFS2", kind="receive", msg="nope"), ev.R_NEVER_SENT),
    (j(ts="1995-12-31T23:59:59Z", store="PFS2", kind="receive", msg="m1"), ev.R_TS_TOO_EARLY),
    (j(ts=T0, store="PFS3", kind="receive", msg="m1"), ev.R_NOT_ADDRESSEE),
    (j(ts="2026-11-02T07:59:59Z", store="PFS2", kind="receive", msg="m1"), ev.R_BEFORE_SEND),
    (j(ts=T0, store="PFS1", kind="replicas", fid="1-1", replicas=["PFS1"]), ev.R_HIERARCHY_REPLICAS),
    (j(ts=T0, store="PFS1", kind="replicas", fid="1-123"), ev.r_missing("replicas")),
    (
        j(ts=T0, store="PFS1", kind="replicas", fid="1-123", replicas=["PFS1", "X"]),
        ev.r_unknown_store("replicas"),
    ),
    (j(ts=T0, store="PFS1", kind="replicas", fid="1-123", replicas=["PFS1"], path=3), ev.r_ill_typed("path")),
    (send(msg="m1", cnset="PFS1:1-4"), ev.R_MSG_REUSED),
]


@pytest.mark.parametrize(("line", "reason"), CASES, ids=[r for _, r in CASES])
def test_every_reject_reason(topo, tmp_path: Path, line: str, reason: str) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "events.jsonl"
    path.write_text(json.dumps(SEND) + "\n" + line + "\n", encoding="utf-8")
    log = read_event_log([path], topo)
    assert [(r.source, r.line, r.reason, r.text) for r in log.rejects] == [(str(path), 2, reason, line)]
    assert log.lines_read == 2 == log.accepted + log.duplicates + len(log.rejects)


def test_every_reason_constant_is_covered() -> None:
    reasons = {r for _, r in CASES}
    constants = {v for k, v in vars(ev).items() if k.startswith("R_")}
    assert constants - reasons == {ev.R_NOT_UTF8, ev.R_RECEIVED_TWICE, ev.R_CN_NOT_INCREASING}  # tested below


def test_not_utf8(topo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"ts": "\xff\xfe"}\r\n' + json.dumps(SEND).encode() + b"\r\n")
    log = read_event_log([path], topo)
    assert [(r.line, r.reason, r.text) for r in log.rejects] == [(1, ev.R_NOT_UTF8, "")]
    assert log.accepted == 1  # CR LF endings are fine


def test_received_twice_and_exact_repeat(topo) -> None:  # type: ignore[no-untyped-def]
    recv = j(ts="2026-11-02T08:05:00Z", store="PFS2", kind="receive", msg="m1")
    again = j(ts="2026-11-02T09:00:00Z", store="PFS2", kind="receive", msg="m1")
    log = event_log_from_lines([send(), recv, recv, again], topo)
    assert log.duplicates == 1
    assert [(r.line, r.reason) for r in log.rejects] == [(4, ev.R_RECEIVED_TWICE)]
    assert log.accepted == 2


def test_change_numbers_only_increase_in_time_order(topo) -> None:  # type: ignore[no-untyped-def]
    def change(ts: str, cn: int) -> str:
        return j(ts=ts, store="PFS1", kind="change", fid="1-123", cn=cn)

    late_but_first = change("2026-11-02T10:00:00Z", 5)
    lines = [
        late_but_first,
        change("2026-11-02T09:00:00Z", 5),
        change("2026-11-02T09:30:00Z", 7),
        late_but_first,
        change("2026-11-02T11:00:00Z", 8),
    ]
    log = event_log_from_lines(lines, topo)
    # in time order: 5 (09:00), 7 (09:30), 5 (10:00: not above 7, and its exact repeat with it), 8
    assert sorted((r.line, r.reason) for r in log.rejects) == [
        (1, ev.R_CN_NOT_INCREASING),
        (4, ev.R_CN_NOT_INCREASING),
    ]
    assert log.duplicates == 0 and log.accepted == 3
    assert log.lines_read == log.accepted + log.duplicates + len(log.rejects)


def test_same_meaning_sends_are_duplicates(topo) -> None:  # type: ignore[no-untyped-def]
    a = send(to=["PFS2", "PFS3"], cnset="PFS1:1-3")
    b = json.dumps(
        {
            **json.loads(a),
            "ts": "2026-11-02T09:00:00+01:00",
            "to": ["PFS3", "PFS2"],
            "cnset": {"PFS1": [[1, 2], [3, 3]]},
        }
    )
    log = event_log_from_lines([a, b, a], topo)
    assert log.duplicates == 2 and log.accepted == 1 and not log.rejects


def test_repeat_of_a_rejected_line_is_rejected_too(topo) -> None:  # type: ignore[no-untyped-def]
    reused = send(cnset="PFS1:1-9")
    log = event_log_from_lines([send(), reused, reused], topo)
    assert [r.reason for r in log.rejects] == [ev.R_MSG_REUSED, ev.R_MSG_REUSED]
    assert log.duplicates == 0


def test_receive_before_its_send_in_the_input(topo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "pfs2.jsonl").write_text(
        j(ts="2026-11-02T08:05:00Z", store="PFS2", kind="receive", msg="m1") + "\n"
    )
    (tmp_path / "b.jsonl").write_text(send() + "\n")
    log = read_event_log([tmp_path], topo)
    assert log.rejects == [] and log.accepted == 2
    [receive] = [e for e in log.events if e.kind == "receive"]
    assert receive.message is not None and receive.message.sender == "PFS1" and receive.fid == "1-123"


def test_files_folders_and_globs_in_sorted_order(topo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    for name in ("b.jsonl", "a.jsonl", "c.txt"):
        (tmp_path / name).write_text("garbage\n\nmore\n")
    log = read_event_log([str(tmp_path / "*.jsonl")], topo)
    assert [(Path(r.source).name, r.line) for r in log.rejects] == [
        ("a.jsonl", 1),
        ("a.jsonl", 2),
        ("a.jsonl", 3),
        ("b.jsonl", 1),
        ("b.jsonl", 2),
        ("b.jsonl", 3),
    ]
    folder = read_event_log([tmp_path], topo)
    assert {Path(r.source).name for r in folder.rejects} == {"a.jsonl", "b.jsonl"}
    with pytest.raises(FileNotFoundError):
        read_event_log([tmp_path / "missing.jsonl"], topo)


def test_time_order_is_time_then_input(topo) -> None:  # type: ignore[no-untyped-def]
    lines = [
        j(ts="2026-11-02T09:00:00Z", store="PFS1", kind="store_status", status="down"),
        j(ts="2026-11-02T08:00:00Z", store="PFS2", kind="store_status", status="down"),
        j(ts="2026-11-02T09:00:00Z", store="PFS3", kind="store_status", status="down"),
    ]
    log = event_log_from_lines(lines, topo)
    assert [e.store for e in log.in_time_order()] == ["PFS2", "PFS1", "PFS3"]


# --------------------------------------------------------------------------------------------
# times
# --------------------------------------------------------------------------------------------
def test_timestamps() -> None:
    assert parse_ts("2026-11-02T08:15:00Z") == parse_ts("2026-11-02T09:15:00+01:00")
    assert parse_ts("2026-11-02T08:15:00.250Z") - parse_ts("2026-11-02T08:15:00Z") == 250_000
    assert format_ts(parse_ts("2026-11-02T08:15:00Z")) == "2026-11-02T08:15:00Z"
    assert format_ts(parse_ts("2026-11-02T08:15:00.5Z")) == "2026-11-02T08:15:00.500000Z"
    for bad in ("2026-11-02", "2026-11-02T08:15:00", "soon", 5, None):
        with pytest.raises(TimeError):
            parse_ts(bad)


# --------------------------------------------------------------------------------------------
# topology
# --------------------------------------------------------------------------------------------
def test_topology_json_and_yaml_agree(tmp_path: Path) -> None:
    import yaml

    (tmp_path / "t.json").write_text(json.dumps(TOPO))
    (tmp_path / "t.yaml").write_text(yaml.safe_dump(TOPO))
    a, b = load_topology(tmp_path / "t.json"), load_topology(tmp_path / "t.yaml")
    assert a == b
    assert a.site_cost("Dublin", "Redmond") == a.site_cost("Redmond", "Dublin") == 10
    assert a.site_cost("Dublin", "Dublin") == 0
    assert a.initial_replicas("1-1") == ("PFS1", "PFS2", "PFS3")


def _with(**over: object) -> dict:
    return {**TOPO, **over}


TOPOLOGY_ERRORS = [
    ("{broken", "not valid JSON"),
    (json.dumps([1]), "must be an object"),
    (json.dumps({"stores": []}), "'sites' is missing"),
    (json.dumps(_with(stores=[])), "'stores' is empty"),
    (json.dumps(_with(stores=[{**TOPO["stores"][0], "site": "Paris"}])), "not in 'sites'"),
    (json.dumps(_with(stores=[{**TOPO["stores"][0], "version": "2016"}])), "expected one of"),
    (json.dumps(_with(stores=[TOPO["stores"][0], TOPO["stores"][0]])), "listed twice"),
    (json.dumps(_with(stores=[{**TOPO["stores"][0], "name": "PF S1"}])), "without spaces"),
    (
        json.dumps(_with(stores=[{**TOPO["stores"][0], "preferred_backfill_source": "PFX"}])),
        "which is not a store",
    ),
    (json.dumps(_with(stores=[{**TOPO["stores"][0], "preferred_backfill_source": "PFS1"}])), "names itself"),
    (json.dumps(_with(folders=[{"fid": "1-1", "replicas": []}])), "implicit"),
    (json.dumps(_with(folders=[{"fid": "nope", "replicas": []}])), "is not a FID"),
    (json.dumps(_with(folders=[{"fid": "1-5", "replicas": ["PFX"]}])), "is not a store"),
    (json.dumps(_with(folders=[{"fid": "1-5", "parent": "1-9", "replicas": []}])), "not a folder"),
    (json.dumps(_with(folders=[{"fid": "1-5"}, {"fid": "1-5"}])), "listed twice"),
    (json.dumps(_with(costs=[{"a": "Redmond", "b": "Dublin", "cost": -1}])), "whole number"),
    (
        json.dumps(
            _with(
                costs=[{"a": "Redmond", "b": "Dublin", "cost": 1}, {"a": "Dublin", "b": "Redmond", "cost": 2}]
            )
        ),
        "two costs",
    ),
]


@pytest.mark.parametrize(("text", "problem"), TOPOLOGY_ERRORS, ids=[p for _, p in TOPOLOGY_ERRORS])
def test_topology_errors_are_one_line_naming_the_file(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "topology.json"
    path.write_text(text)
    with pytest.raises(TopologyError) as err:
        load_topology(path)
    message = str(err.value)
    assert "\n" not in message and message.startswith(str(path)) and problem in message


def test_unreadable_topology(tmp_path: Path) -> None:
    with pytest.raises(TopologyError, match="cannot read"):
        load_topology(tmp_path / "absent.json")
    (tmp_path / "t.yaml").write_text("sites: [a\n")
    with pytest.raises(TopologyError, match="not valid YAML"):
        load_topology(tmp_path / "t.yaml")


def test_fids_are_upper_cased(topo) -> None:  # type: ignore[no-untyped-def]
    t = topology_from_json(_with(folders=[{"fid": "1-2a45", "parent": "1-1", "replicas": []}]))
    assert list(t.folders) == ["1-2A45"]
    log = event_log_from_lines([j(ts=T0, store="PFS1", kind="change", fid="1-2a45", cn=1)], t)
    assert log.events[0].fid == "1-2A45"
