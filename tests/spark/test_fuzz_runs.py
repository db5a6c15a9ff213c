"""A fuzz differential of whole runs: small simulated logs with hostile lines mixed in at random
places, read by the reference reader and replayed, and computed and published by the Spark job.

Hostile lines: numbers at and beyond every integer bound (and floats, NaN and Infinity tokens)
in every numeric field (``cn``, ``bytes``, the ranges of ``cnset``, ``changes`` and
``requested`` as canonical text and as objects), empty and huge CN sets, reversed ranges, long
strings, invalid UTF-8, NUL bytes, a 1 MB line, deep nesting, duplicate keys, lone surrogates,
every field of every kind of line with a value of the wrong type, and receives of the hostile
sends. The job must publish every time, and its accounting (lines read, accepted, duplicates,
every reject's file, line, reason and text) and every published table must equal the replay's.

Times far from the rest: a line stamped before 1996 is a reject; one stamped in year 9999 is
accepted but lies after the run's clock, which bounds the default as-of, so it is not applied
(else an entry open until then would fall due every time-out in between: millions of expected
requests). Both sides run with the same pinned clock.
"""

from __future__ import annotations

import io
import json
import random
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from pfscope.spark_jobs.compute.job import compute
from pfscope.spark_jobs.compute.writing import write_tables
from pfscope.spark_jobs.model.events import MAX_CN, MAX_INT, read_event_log
from pfscope.spark_jobs.model.replay import replay
from pfscope.spark_jobs.model.tables import TABLES
from pfscope.spark_jobs.model.timeutil import format_ts, parse_ts
from pfscope.spark_jobs.model.topology import Topology
from pfscope.spark_jobs.published.runs import publish, read_latest, start_run
from pfscope.spark_jobs.simulator import build, run_scenario
from tests.spark.table_compare import ordered

pytestmark = pytest.mark.slow

#: every integer bound a column or a parser might hold, and one past it
INTS = [
    2**31 - 1,
    2**31,
    2**32,
    MAX_CN,
    MAX_CN + 1,
    2**53 + 1,
    MAX_INT,
    MAX_INT + 1,
    2**64,
    10**30,
    -1,
    0,
    -(2**63) - 1,
]
#: JSON number tokens that are not integers (Python's reader takes NaN and Infinity)
FLOATS = ["1e308", "-1e308", "1e400", "NaN", "Infinity", "-Infinity", "1.5", "2.0", "-0.0", "1E2"]
#: a placeholder for a raw token in a value, replaced in the line's text
RAW = "\u0000raw:"
WRONG = [None, True, False, 0, -1, 1.5, "", " ", "x", [], {}, ["x"], [None], {"a": 1}, [[1, 2]], 2**64]
LONG = "y" * 100_000
SURROGATES = ["\ud800", "\udfff", "a\ud800b", "\udc00\ud800"]


def _dumps(obj: dict[str, Any]) -> str:
    text = json.dumps(obj)
    # a raw token: the JSON string "\u0000raw:TOKEN" becomes TOKEN
    while '"\\u0000raw:' in text:
        start = text.index('"\\u0000raw:')
        end = text.index('"', start + 1)
        text = text[:start] + text[start + len('"\\u0000raw:') : end] + text[end + 1 :]
    return text


def _cnsets(origin: str) -> list[Any]:
    """A CN set field's hostile values: every bound in text and object form, reversed, empty, huge."""
    out: list[Any] = []
    for n in INTS:
        out += [
            f"{origin}:{n}",
            f"{origin}:1-{n}",
            f"{origin}:{n}-{n}",
            f"{origin}:{n}-1",
            {origin: [[1, n]]},
            {origin: [[n, n]]},
            {origin: [[n, 1]]},
        ]
    out += [{origin: [[1, RAW + t]]} for t in FLOATS]
    out += [
        f"{origin}:1-9223372036854775808",
        f"{origin}:1-18446744073709551616",
        f"{origin}:1-{MAX_CN}",
        "",
        {},
        {origin: []},
        f"{origin}:5-3,1-2",
        f"{origin}:1-{MAX_CN + 1},5-3",
        f"{origin}:" + ",".join(str(i) for i in range(1, 40_000, 2)),  # 20,000 ranges
        {origin: [[i, i] for i in range(1, 20_000, 2)]},
        f"{origin}:1-{MAX_CN};ZZZ:1",
    ]
    return out


def hostile_lines(lines: list[str], topo: Topology) -> list[bytes]:
    """Every hostile case, built on the log's own lines (so most fields but one are valid)."""
    recs = [json.loads(t) for t in lines]
    by_kind: dict[str, dict[str, Any]] = {}
    for r in recs:
        by_kind.setdefault(r["kind"] if r["kind"] != "send" else f"send:{r['type']}", r)
    stores = sorted(topo.stores)
    origin = stores[0]
    out: list[str] = []
    sends: list[dict[str, Any]] = []

    def add(rec: dict[str, Any]) -> None:
        out.append(_dumps(rec))
        if rec.get("kind") == "send":
            sends.append(rec)

    change = by_kind["change"]
    for f in ("cn", "bytes"):
        for n in INTS:
            add({**change, f: n})
        for t in FLOATS:
            add({**change, f: RAW + t})
    for key, base in by_kind.items():
        # every field of every kind of line: missing, and of every wrong type
        for f in [*base, "op", "item", "bytes", "source", "responders", "derived", "path"]:
            out.append(_dumps({k: v for k, v in base.items() if k != f}))
            for v in WRONG:
                add({**base, f: v})
            add({**base, f: RAW + "1e308"})
            add({**base, f: LONG})
            for s in SURROGATES:
                add({**base, f: s})
            add({**base, f: "a\u0000b"})
            add({**base, f: [LONG]} if f != "derived" else {**base, f: ["a\ud800"]})
        if key.startswith("send:"):
            for f in ("cnset", "changes", "requested"):
                for v in _cnsets(origin):
                    add({**base, "msg": f"{base['msg']}-{f}-{len(out)}", f: v})
            add({**base, "msg": LONG})
            add({**base, "msg": "m\ud800"})
            add({**base, "msg": "m\u0000"})
            add({**base, "to": [s for s in stores if s != base["store"]] * 2})
    # a valid change with a 1 MB item, an item of 100 KB, NUL and surrogates in accepted fields
    big_cn = MAX_CN - 1
    add({**change, "cn": big_cn, "item": "z" * 1_000_000})
    add({**change, "cn": MAX_CN, "item": "a\u0000\ud800"})
    add({**by_kind.get("replicas", change), "path": "p\ud800"})
    add({**change, "derived": ["event", "\udfff"]})
    # times far from the rest: before 1996 (rejects), 1996 itself, and far in the future (after the clock)
    for ts in (
        "0001-01-01T00:00:00Z",
        "1995-12-31T23:59:59.999999Z",
        "1996-01-01T00:00:00Z",
        "9999-12-31T23:59:59Z",
        "9999-12-31T23:59:59.999999-23:59",
    ):
        add({**change, "ts": ts, "cn": MAX_CN - 2})
        if "receive" in by_kind:
            add({**by_kind["receive"], "ts": ts})
    # receives of every hostile send, a second later, by its first addressee
    for s in sends:
        to = s.get("to")
        msg = s.get("msg")
        if isinstance(to, list) and to and isinstance(to[0], str) and isinstance(msg, str):
            out.append(
                _dumps(
                    {
                        "ts": s.get("ts") if isinstance(s.get("ts"), str) else "2026-11-02T08:00:00Z",
                        "store": to[0],
                        "kind": "receive",
                        "msg": msg,
                    }
                )
            )
    raw: list[bytes] = [t.encode("utf-8", "surrogatepass") for t in out]
    text = lines[0]
    raw += [
        b"",
        b"   ",
        b"\x00",
        text.encode()[:-1] + b"\x00}",
        b"{\x00}",
        text.encode() + b"\x00",
        b"\xff",
        b"\xc0\x80",
        b"\xed\xa0\x80",
        b"\xf4\x90\x80\x80",
        b"\xe2\x82",
        text.encode().replace(b"Z", b"\xfe", 1),
        text.encode()[:-1] + b', "item": "\xed\xa0\x80"}',  # a surrogate encoded in UTF-8: not UTF-8
        b"[" * 100_000 + b"]" * 100_000,
        b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
        text.encode()[:-1] + b', "x": ' + b"[" * 5000 + b"]" * 5000 + b"}",
        text.encode()[:-1] + b', "kind": "receive"}',
        text.encode()[:-1] + b', "cn": 2}',
        text.encode()[:-1] + b', "cn": ' + str(2**64).encode() + b"}",
        b"1" * 5000,
        text.encode()[:-1] + b', "cn": ' + b"7" * 5000 + b"}",
        b"x" * 1_000_000,
        b"NaN",
        b"Infinity",
        b"-Infinity",
        b"1e400",
        b'"\\ud800"',
        b"\r",
        b"\r\r",
        text.encode() + b"\r",
        b"\xef\xbb\xbf" + text.encode(),
    ]
    return raw


def write_run(
    tmp: Path, name: str, seed: int, options: dict[str, Any], share: int, of: int
) -> tuple[Topology, list[str]]:
    """The simulated log with its share of the hostile lines at random places, over two files."""
    scenario = build(name, seed, options)
    buf = io.StringIO()
    run_scenario(scenario, buf, seed)
    lines = buf.getvalue().splitlines()
    topo = scenario.topology
    pool = hostile_lines(lines, topo)
    rng = random.Random(seed * 1000 + share)
    order = list(range(len(pool)))
    random.Random(0).shuffle(order)
    mine = [pool[i] for k, i in enumerate(order) if k % of == share]
    out = [t.encode() for t in lines]
    for h in mine:
        out.insert(rng.randrange(len(out) + 1), h)
    out += rng.sample(out, 5)  # some lines again: duplicates, or the same reject
    cut = rng.randrange(len(out))
    (tmp / "log").mkdir()
    (tmp / "log" / "a.jsonl").write_bytes(b"\n".join(out[:cut]) + b"\n")
    (tmp / "log" / "b.jsonl").write_bytes(b"\n".join(out[cut:]))  # no final newline
    return topo, [str(tmp / "log")]


#: the runs' clock, pinned (the default as-of is the last event's time, never after the clock)
CLOCK = parse_ts("2026-11-20T00:00:00Z")
SMALL_SCALE = {"stores": 5, "sites": 2, "folders": 6, "replicas": 3, "days": 1, "changes_per_day": 8}
RUNS = {
    "worked-example-0": ("worked-example", 1, {}, 0),
    "scale-7-1": ("scale", 7, SMALL_SCALE, 1),
    "worked-example-2": ("worked-example", 1, {}, 2),
    "scale-11-3": ("scale", 11, SMALL_SCALE, 3),
}


@pytest.mark.parametrize("run", list(RUNS))
def test_hostile_run_publishes_what_the_replay_computes(spark, tmp_path: Path, run: str) -> None:  # type: ignore[no-untyped-def]
    name, seed, options, share = RUNS[run]
    topo, paths = write_run(tmp_path, name, seed, options, share, len(RUNS))
    log = read_event_log(paths, topo)
    expected = replay(topo, log, clock=CLOCK).tables
    assert log.lines_read == log.accepted + log.duplicates + len(log.rejects)
    reasons = {r.reason for r in log.rejects}
    assert len(reasons) > 10 and any(r.startswith("number out of range in field: ") for r in reasons)

    out = tmp_path / "out"
    started: dict[str, Any] = {}
    runf = start_run(out)
    with ThreadPoolExecutor(max_workers=4) as pool:
        result = compute(spark, topo, paths, run_id=runf.run_id, partitions=2, clock=CLOCK)
        write_tables(result, runf.table_path, pool, started)
    read = result.read
    # a line stamped after the clock moves the as-of no further than the clock
    assert result.as_of == min(log.last_ts() or 0, CLOCK)
    publish(
        runf,
        {
            "as_of": format_ts(result.as_of),
            "tables": sorted(result.tables),
            "seconds": 0.0,
            "summary": {
                "lines_read": read.lines_read,
                "accepted": read.accepted,
                "duplicates": read.duplicates,
                "rejected": read.lines_read - read.accepted - read.duplicates,
            },
        },
    )
    latest = read_latest(out)
    assert latest is not None

    assert (read.lines_read, read.accepted, read.duplicates) == (log.lines_read, log.accepted, log.duplicates)
    got_rejects = pq.read_table(out / latest["path"] / "rejects").to_pylist()
    assert sorted(
        (r["source"], r["line"], r["reason"], r["text"], r["conflict_source"], r["conflict_line"])
        for r in got_rejects
    ) == sorted((r.source, r.line, r.reason, r.text, r.conflict_source, r.conflict_line) for r in log.rejects)
    for table in TABLES:
        got = pq.read_table(out / latest["path"] / table, coerce_int96_timestamp_unit="us")
        # times as integers of microseconds: Python's datetime holds years 1-9999 only, the tables more
        got = pa.table(
            {
                f.name: pc.cast(pc.cast(got[f.name], pa.timestamp("us")), pa.int64())
                if pa.types.is_timestamp(f.type)
                else got[f.name]
                for f in got.schema
            }
        )
        assert got.column_names == [n for n, _ in TABLES[table]], table
        mine, theirs = ordered(table, got.to_pylist()), ordered(table, expected[table])
        assert len(mine) == len(theirs), table
        for a, b in zip(mine, theirs, strict=True):
            assert a == b, (table, a, b)
