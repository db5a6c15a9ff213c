"""Spark's reading of the log equals the reference reader on every rule between lines.

The differential test's noise only meets a few of the rules; here every stage-2 reason is hit,
with repeats of accepted and of rejected lines, across two files, so the narrow verdicts and
their joins back to the lines are checked line by line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pfscope.spark_jobs.compute import reading
from pfscope.spark_jobs.compute.reading import read_events
from pfscope.spark_jobs.model import events as ev
from pfscope.spark_jobs.model.events import read_event_log
from pfscope.spark_jobs.model.topology import topology_from_json
from tests.spark.table_compare import rows_of
from tests.unit.model.test_readers import TOPO  # the reader tests' three stores and one folder


def j(**fields: object) -> str:
    return json.dumps(fields)


def send(msg: str, ts: str = "2026-11-02T08:00:00Z", **over: object) -> str:
    return j(
        **{
            "ts": ts,
            "store": "PFS1",
            "kind": "send",
            "msg": msg,
            "type": "content",
            "fid": "1-123",
            "to": ["PFS2"],
            "cnset": "PFS1:1-3",
            "changes": "PFS1:3",
            **over,
        }
    )


def receive(msg: str, ts: str, store: str = "PFS2") -> str:
    return j(ts=ts, store=store, kind="receive", msg=msg)


def change(ts: str, cn: int, store: str = "PFS1", **over: object) -> str:
    return j(ts=ts, store=store, kind="change", fid="1-123", cn=cn, **over)


FIRST = [
    receive("m2", "2026-11-02T09:05:00Z"),  # its send comes in the second file: fine
    send("m1"),
    receive("m1", "2026-11-02T08:05:00Z"),
    receive("m1", "2026-11-02T08:05:00Z"),  # exact repeat: a duplicate
    receive("m1", "2026-11-02T09:00:00Z"),  # received twice
    receive("m1", "2026-11-02T07:59:59Z", store="PFS2"),  # stamped before its send (and a second receive)
    receive("m1", "2026-11-02T08:06:00Z", store="PFS3"),  # not an addressee
    receive("nope", "2026-11-02T08:06:00Z"),  # never sent
    send("m1", cnset="PFS1:1-9"),  # id reused
    send("m1", cnset="PFS1:1-9"),  # its repeat: rejected too
    change("2026-11-02T10:00:00Z", 5),
    change("2026-11-02T09:00:00Z", 5),
    change("2026-11-02T09:30:00Z", 7),
    change("2026-11-02T11:30:00Z", 20, item="a"),
    change("2026-11-02T11:30:00Z", 20, item="a"),  # its repeat, before the next line of the same time
    change("2026-11-02T11:30:00Z", 20, item="b"),  # same time and number, another meaning: not above 20
    "{not json",
]
SECOND = [
    send("m2", ts="2026-11-02T09:00:00Z", cnset="PFS1:1-5", changes="PFS1:4-5"),
    change("2026-11-02T10:00:00Z", 5),  # repeat of a rejected change (not above 7)
    change("2026-11-02T11:00:00Z", 8),
    change("2026-11-02T11:00:00Z", 1, store="PFS2"),
    # not above 20: names the accepted 20 (item a), not its repeat nor the rejected 20 (item b)
    change("2026-11-02T11:45:00Z", 19),
    send("m1"),  # a repeat of the first send: a duplicate
    "",
    change("2026-11-02T12:00:00Z", 2**63),  # beyond a long: rejected, not an overflow of the job
    change("2026-11-02T12:00:00Z", 2**48),  # beyond Exchange's 48-bit CN: rejected
    change("2026-11-02T12:00:00Z", 2**48 - 1),  # the largest CN
    send("m9", ts="2026-11-02T12:30:00Z", cnset="PFS1:1-9223372036854775808"),  # beyond a long: rejected
    send(
        "m8", ts="2026-11-02T12:40:00Z", cnset="PFS1:1-281474976710655;PFS2:1-281474976710655"
    ),  # counts sum
    receive("m9", "2026-11-02T13:00:00Z"),  # of the rejected send: a receive of a message never sent
    receive("m8", "2026-11-02T13:00:00Z"),
]


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    (tmp_path / "a.jsonl").write_text("\n".join(FIRST) + "\n", encoding="utf-8")
    (tmp_path / "b.jsonl").write_text("\n".join(SECOND) + "\n", encoding="utf-8")
    return tmp_path


def _event(e: Any) -> tuple[Any, ...]:
    m = e.message
    return (
        e.seq,
        e.ts,
        e.store,
        e.kind,
        e.fid,
        e.cn,
        e.msg_id if m is None else m.msg,
        None if m is None else (m.sender, m.sent_at, m.seq, m.type, m.cnset.text()),
    )


def vars_of(r: ev.RejectRow) -> dict[str, Any]:
    return {f: getattr(r, f) for f in r.__slots__}


def _reject(r: dict[str, Any]) -> tuple[Any, ...]:
    """A reject as compared: every column, the line it names included."""
    return (r["source"], r["line"], r["reason"], r["text"], r["conflict_source"], r["conflict_line"])


def _row(r: dict[str, Any]) -> tuple[Any, ...]:
    mail = r["kind"] in ("send", "receive")
    return (
        r["seq"],
        r["ts"],
        r["store"],
        r["kind"],
        r["fid"],
        r["cn"],
        r["msg"],
        (r["sender"] or r["store"], r["sent_at"] or r["ts"], r["msg_seq"] or r["seq"], r["type"], r["cnset"])
        if mail
        else None,
    )


def test_every_rule_between_lines_as_the_reference_reader(spark, log_dir: Path) -> None:  # type: ignore[no-untyped-def]
    """In compact copies of the lines too (each a duplicate of its spaced original by meaning)."""
    (log_dir / "c.jsonl").write_text(
        "\n".join(
            json.dumps(json.loads(t), separators=(",", ":")) for t in FIRST + SECOND if t.startswith('{"')
        )
        + "\n"
    )
    topo = topology_from_json(TOPO)
    expected = read_event_log([log_dir], topo)
    got = read_events(spark, [str(log_dir)], topo)

    reasons = {r.reason for r in expected.rejects}
    assert reasons >= {
        ev.R_RECEIVED_TWICE,
        ev.R_BEFORE_SEND,
        ev.R_NOT_ADDRESSEE,
        ev.R_NEVER_SENT,
        ev.R_MSG_REUSED,
        ev.R_CN_NOT_INCREASING,
        ev.R_NOT_JSON,
        ev.R_EMPTY,
    }
    assert ev.r_out_of_range("cn") in reasons
    assert expected.duplicates >= 2

    assert (got.lines_read, got.accepted, got.duplicates) == (
        expected.lines_read,
        expected.accepted,
        expected.duplicates,
    )
    assert sorted(_reject(r) for r in rows_of(got.rejects)) == sorted(
        _reject(vars_of(r)) for r in expected.rejects
    )
    named = {
        (r.line, Path(r.conflict_source or "").name, r.conflict_line)
        for r in expected.rejects
        if r.source.endswith("b.jsonl")
    }
    assert (5, "a.jsonl", 14) in named  # the change 19 names the accepted change 20 in a.jsonl
    assert sorted(_row(r) for r in rows_of(got.events)) == sorted(_event(e) for e in expected.events)


@pytest.mark.parametrize("broadcast_rows", [0, reading.BROADCAST_ROWS])
def test_a_log_repeated_whole_is_all_duplicates(
    spark,
    tmp_path: Path,
    monkeypatch,  # type: ignore[no-untyped-def]
    broadcast_rows: int,
) -> None:
    """The same file given twice: every line of the second copy is a duplicate or shares its
    first's reject, whether the repeats are broadcast or joined by shuffle."""
    monkeypatch.setattr(reading, "BROADCAST_ROWS", broadcast_rows)
    topo = topology_from_json(TOPO)
    text = "\n".join(FIRST + SECOND) + "\n"
    (tmp_path / "one.jsonl").write_text(text, encoding="utf-8")
    (tmp_path / "two.jsonl").write_text(text, encoding="utf-8")
    expected = read_event_log([tmp_path], topo)
    got = read_events(spark, [str(tmp_path)], topo)
    assert (got.lines_read, got.accepted, got.duplicates) == (
        expected.lines_read,
        expected.accepted,
        expected.duplicates,
    )
    assert got.events.count() == expected.accepted
    assert sorted(_reject(r) for r in rows_of(got.rejects)) == sorted(
        _reject(vars_of(r)) for r in expected.rejects
    )
