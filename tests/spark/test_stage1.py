"""Stage 1 in Spark (``stage1.parse_stage1``: ``parse_line`` in Python workers, fed and read
back through Arrow) equals ``parsed_row`` run here, line by line, every column.

The corpus: each kind of valid line, then every field of each deleted, nulled and replaced by
values of every JSON type and the edges of its rule (every reject reason); whole lines that are
not JSON, not objects, blank, CRLF, BOM, non-ASCII, escapes, duplicate keys, NaN, huge numbers,
deep nesting, text after the value, very long lines; all of it again in the writers' compact
form; near misses of the canonical form (leading zeros, 19 digits, unknown stores, lower-case
FIDs, days that do not exist, quoted numbers, spaces, repeated keys, escapes, line terminators);
a simulated log; and hypothesis-generated mutations.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pfscope.spark_jobs.compute.stage1 import PARSED_COLUMNS, parse_stage1, parsed_row
from pfscope.spark_jobs.model.events import R_NOT_UTF8, Reject, parse_line
from pfscope.spark_jobs.model.topology import topology_from_json
from pfscope.spark_jobs.simulator import build, run_scenario
from tests.unit.model.test_readers import TOPO

T0 = "2026-11-02T08:00:00Z"
BASES: list[dict[str, Any]] = [
    {
        "ts": T0,
        "store": "PFS1",
        "kind": "change",
        "fid": "1-123",
        "cn": 5,
        "op": "modify",
        "item": "Item 1",
        "bytes": 10,
    },
    {"ts": T0, "store": "PFS2", "kind": "change", "fid": "1-abc", "cn": 1, "derived": ["event"]},
    {
        "ts": T0,
        "store": "PFS1",
        "kind": "send",
        "msg": "m1",
        "type": "content",
        "fid": "1-123",
        "to": ["PFS2", "PFS3"],
        "cnset": "PFS1:1-3,5;PFS2:4",
        "changes": "PFS1:3",
    },
    {
        "ts": T0,
        "store": "PFS1",
        "kind": "send",
        "msg": "<m2@EX1>",
        "type": "hierarchy",
        "fid": "1-1",
        "to": ["PFS3"],
        "cnset": "PFS2:7,1-3,2-5,9-9;PFS1:1",
        "changes": "PFS1:1",
        "derived": ["cnset", "cnset"],
    },
    {
        "ts": T0,
        "store": "PFS2",
        "kind": "send",
        "msg": "m3",
        "type": "backfill_request",
        "fid": "1-123",
        "to": ["PFS1", "PFS3"],
        "cnset": "",
        "requested": "PFS1:4-6",
        "source": "PFS1",
    },
    {
        "ts": T0,
        "store": "PFS1",
        "kind": "send",
        "msg": "m4",
        "type": "backfill_response",
        "fid": "1-123",
        "to": ["PFS2"],
        "cnset": "PFS1:1-9",
        "changes": "PFS1:4-6",
    },
    {
        "ts": T0,
        "store": "PFS3",
        "kind": "send",
        "msg": "m5",
        "type": "status",
        "fid": "1-123",
        "to": ["PFS1"],
        "cnset": "PFS3:1-2",
    },
    {
        "ts": T0,
        "store": "PFS3",
        "kind": "send",
        "msg": "m6",
        "type": "status_request",
        "fid": "1-123",
        "to": ["PFS1", "PFS2"],
        "cnset": "PFS3:1",
        "responders": ["PFS2", "PFS1"],
    },
    {"ts": T0, "store": "PFS2", "kind": "receive", "msg": "m1"},
    {
        "ts": T0,
        "store": "PFS1",
        "kind": "replicas",
        "fid": "1-123",
        "replicas": ["PFS2", "PFS1"],
        "path": "IPM_SUBTREE/It's here",
    },
    {"ts": T0, "store": "PFS3", "kind": "store_status", "status": "down"},
]
FIELDS = sorted(
    {f for b in BASES for f in b}
    | {"source", "requested", "responders", "path", "op", "item", "bytes", "changes"}
)
ODD: list[Any] = [
    "",
    " ",
    "x",
    "PFS1",
    "PFS9",
    "change",
    "1-1",
    "1-123",
    "up",
    "modify",
    0,
    -1,
    1,
    7,
    1.0,
    2.5,
    True,
    False,
    [],
    ["PFS2"],
    ["PFS1", "PFS1"],
    ["PFS2", ""],
    ["PFS2", None],
    ["PFS2", 1],
    [""],
    {},
    {"PFS1": [[1, 2]]},
    "PFS1:0",
    "PFS1:3-2",
    "PFX:1",
    "PFS1:1-2;PFS1:2-9",
    "PFS1:",
    "PFS1:1,,2",
    " PFS1:1 ",
    "PFS1:+1",
    "PFS1:1_0",
    "PFS1:2-1;PFS2:0",
    "PFS2:0;PFS1:2-1",
    "PFS1:007-010",
    "PFS9:0",
    "PFS9:1;PFS1:0",
    "2026-11-02T08:00:00z",
    "2026-11-02t08:00:00+01:30",
    "2026-11-02 08:00:00.5-02:00",
    "2026-11-02T08:00:00.1234567Z",
    "2026-11-02T08:00:00+0100",
    "2026-02-30T08:00:00Z",
    "2026-11-02T24:00:00Z",
    "2026-11-02T08:00:60Z",
    "0000-01-01T00:00:00Z",
    "0001-01-01T00:00:00+01:00",
    "2026-11-02T08:00:00+05:60",
    "2026-11-02T08:00:00+24:00",
    "2026-11-02T08:00:00",
    "2026-11-02X08:00:00Z",
    " 2026-11-02T08:00:00Z ",
    "9999-12-31T23:59:59.999999-23:59",
    "2026-11-02T08:00Z",
    "2026-13-02T08:00:00Z",
    "20261102T080000Z....",
    "backfill_request",
    "hierarchy",
    "nope",
    "create",
    "delete",
]
RAW = [
    "",
    "   ",
    "\t",
    "\r",
    "\ufeff",
    "{not json",
    "[]",
    "5",
    '"x"',
    "null",
    "{}",
    "[1, 2]",
    '{"kind": "change", "kind": "receive"}',
    '{"ts": NaN}',
    '{"a": Infinity}',
    "{'a': 1}",
    '{"a": 1,}',
    '{"a": 01}',
    '{"a": .5}',
    "{} x",
    "{}{}",
    "{} }",
    "[[[[[[[[[[]]]]]]]]]]",
    "[" * 5000 + "]" * 5000,
    '{"a": "\\ud800"}',
    '{"kind": "\\u0063hange"}',
    "\ufeff" + json.dumps(BASES[0]),
    json.dumps(BASES[0]) + "\r",
    json.dumps(BASES[0]).replace(" ", "\t"),
    json.dumps(BASES[0]).replace("Item 1", "Ïtém ☃ 𝄞"),
    json.dumps(BASES[0]).replace("Item 1", "a\\nb"),
    json.dumps({**BASES[9], "path": 'It\'s "here" \\'}),
    json.dumps(BASES[0]).replace("Item 1", "x" * 200_000),
    json.dumps(BASES[0]).replace("Item 1", "\u2028"),
    "\u00a0",
    "\u3000" + json.dumps(BASES[8]),
    json.dumps({**BASES[0], "extra": {"deep": [[[[[1]]]]]}}),
    json.dumps({**BASES[0], "extra": 10**30}),
    json.dumps({**BASES[0], "cn": 10**19 - 1}),
    '{"cn": 1e400, "kind": "change"}',
    json.dumps({**BASES[0], "cn": 2**63 - 1, "bytes": 2**63 - 1}),
    json.dumps({**BASES[0], "cn": 2**63}),
    json.dumps({**BASES[0], "bytes": 2**63}),
    json.dumps({**BASES[0], "cn": 10**18, "bytes": 10**30}),
    json.dumps({**BASES[0], "item": "a{b}[c]"}),
    json.dumps({**BASES[0], "item": "[x]"}),
    " " + json.dumps(BASES[8]) + "  ",
    json.dumps({**BASES[2], "to": ["PFS2", ["PFS3"]]}),
    '{"kind": "receive"} {}',
    '{"kind": "receive"}]',
    json.dumps(BASES[0])[:-1] + ', "cn": 6}',
    json.dumps(BASES[0]).replace('"cn": 5', '"cn": 5.0'),
    json.dumps(BASES[0]).replace('"cn": 5', '"cn": 5e0'),
    json.dumps(BASES[0]).replace('"cn": 5', '"cn": -0'),
    json.dumps({**BASES[2], "cnset": {"PFS1": [[1, 3], [5, 5]], "PFS2": []}}),
    json.dumps({**BASES[2], "cnset": {"PFS1": [[3, 1]], "PFS2": [[0, 1]]}}),
    json.dumps({**BASES[2], "cnset": {"": [[1, 1]]}}),
    json.dumps({**BASES[2], "cnset": "PFS1:" + ",".join(f"{i}-{i + 1}" for i in range(1, 3000, 3))}),
]


def mutations() -> list[str]:
    """Every field of every valid line deleted, nulled, and set to each odd value."""
    out = [json.dumps(b) for b in BASES]
    for b in BASES:
        for f in FIELDS:
            if f in b:
                out.append(json.dumps({k: v for k, v in b.items() if k != f}))
            out.extend(json.dumps({**b, f: v}) for v in (None, *ODD))
    return out


def compact(record: dict[str, Any]) -> str:
    """A line as pfscope's writers print it."""
    return json.dumps(record, separators=(",", ":"))


REC = {"ts": "2026-11-02T08:00:00Z", "store": "PFS1", "kind": "receive", "msg": "<00000005@EX0026>"}
CHG = {
    "ts": "2026-10-01T00:00:03Z",
    "store": "PFS3",
    "kind": "change",
    "fid": "1-10198",
    "cn": 1,
    "op": "create",
    "item": "Item 1",
    "bytes": 6951,
}
#: canonical receive and change lines, as the writers print them
CANONICAL = [
    compact(REC),
    compact(CHG),
    compact({**REC, "msg": "x"}),
    compact({**REC, "msg": " !#$%&()*+,-./09:;<=>?@AZ[]^_`az{|}~ "}),
    compact({**CHG, "item": ""}),
    compact({**CHG, "item": "a{b}[c] : ,"}),
    compact({**CHG, "bytes": 0}),
    compact({k: v for k, v in CHG.items() if k != "op"}),
    compact({k: v for k, v in CHG.items() if k != "item"}),
    compact({k: v for k, v in CHG.items() if k != "bytes"}),
    compact({k: v for k, v in CHG.items() if k not in ("op", "item", "bytes")}),
    *[compact({**CHG, "op": op}) for op in ("create", "modify", "delete")],
    compact({**CHG, "cn": 10**18 - 1, "bytes": 10**18 - 1}),
    compact({**CHG, "fid": "FFFFFFFFFFFFFFFF-0123456789ABCDEF"}),
    *[
        compact({**REC, "ts": ts})
        for ts in (
            "2028-02-29T23:59:59Z",
            "2000-02-29T00:00:00Z",
            "2400-02-29T12:00:00Z",
            "0001-01-01T00:00:00Z",
            "9999-12-31T23:59:59Z",
            "1969-12-31T23:59:59Z",
            "1970-01-01T00:00:00Z",
            "1900-03-01T00:00:00Z",
            "2026-12-31T23:59:59Z",
            "2026-01-31T00:00:00Z",
            "2026-04-30T00:00:00Z",
            "1582-10-10T10:10:10Z",
        )
    ],
    *[
        compact({**REC, "ts": f"2025-{m:02d}-{d:02d}T{m + 8:02d}:{d + 30}:5{m % 6}Z"})
        for m in range(1, 13)
        for d in (1, 28)
    ],
    *[compact({**CHG, "store": s}) for s in ("PFS1", "PFS2")],
]
#: lines that look canonical but are not (most rejected, some valid in another spelling)
NEAR_MISS = [
    compact({**CHG, "cn": 0}),
    compact({**CHG, "cn": -1}),
    compact(CHG).replace('"cn":1', '"cn":01'),
    compact(CHG).replace('"cn":1', '"cn":"1"'),
    compact(CHG).replace('"bytes":6951', '"bytes":06951'),
    compact({**CHG, "cn": 10**18}),
    compact({**CHG, "cn": 2**63 - 1}),
    compact({**CHG, "cn": 2**63}),
    compact({**CHG, "bytes": 10**18}),
    compact({**CHG, "bytes": -1}),
    compact({**CHG, "cn": 1.0}),
    compact(CHG).replace('"cn":1', '"cn":1e0'),
    compact({**CHG, "cn": True}),
    compact({**CHG, "store": "PFS9"}),
    compact({**CHG, "store": "pfs1"}),
    compact({**REC, "store": "PFS1 "}),
    compact({**CHG, "fid": "1-abc"}),
    compact({**CHG, "fid": "1-1019g"}),
    compact({**CHG, "fid": "11111111111111111-1"}),
    *[
        compact({**REC, "ts": ts})
        for ts in (
            "2027-02-29T00:00:00Z",
            "1900-02-29T00:00:00Z",
            "2100-02-29T00:00:00Z",
            "2026-02-30T00:00:00Z",
            "2026-04-31T00:00:00Z",
            "2026-11-31T00:00:00Z",
            "0000-01-01T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-00-01T00:00:00Z",
            "2026-01-00T00:00:00Z",
            "2026-01-32T00:00:00Z",
            "2026-01-01T24:00:00Z",
            "2026-01-01T00:60:00Z",
            "2026-01-01T00:00:60Z",
            "2026-01-01t00:00:00Z",
            "2026-01-01T00:00:00z",
            "2026-01-01 00:00:00Z",
            "2026-01-01T00:00:00.5Z",
            "2026-01-01T00:00:00+00:00",
            "2026-01-01T00:00:00",
            "2026-1-01T00:00:00Z",
            "+2026-01-01T00:00:00Z",
            "2026-01-01T00:00:00Z ",
            "２026-01-01T00:00:00Z",
        )
    ],
    compact(REC).replace('"ts":"2', '"ts":"\\u0032'),
    compact(CHG).replace(",", ", ", 1),
    compact(CHG) + " ",
    " " + compact(CHG),
    compact(CHG).replace(":", ": ", 1),
    compact(CHG)[:-1] + ',"cn":2}',
    compact(REC)[:-1] + ',"msg":"y"}',
    compact(REC)[:-1] + ',"kind":"receive"}',
    compact({**CHG, "item": "It's"}),
    compact({**CHG, "item": 'say "hi"'}),
    compact({**CHG, "item": "a\\b"}),
    compact({**CHG, "item": "tab\there"}),
    compact(CHG).replace("Item 1", "Item\\u00201"),
    compact(CHG).replace("Item 1", "Item\\/1"),
    compact({**CHG, "item": "Ïtém"}),
    json.dumps({**CHG, "item": "Ïtém"}, ensure_ascii=False, separators=(",", ":")),
    compact({**CHG, "item": "\x7f"}),
    compact(CHG).replace("Item 1", "Item\\t1"),
    compact(CHG).replace("Item 1", "Item\x7f1"),
    compact(CHG).replace("Item 1", "Item\t1"),
    compact(CHG).replace("Item 1", "Item\x001"),
    compact(CHG) + "\u2028",
    compact(CHG) + "\u0085",
    compact(CHG) + "\x0b",
    compact(REC) + "\u2029",
    compact(REC) + "\r",
    compact(REC) + "\x00",
    "\ufeff" + compact(REC),
    compact({**REC, "msg": ""}),
    compact({**REC, "msg": None}),
    compact({**REC, "msg": 5}),
    compact({**REC, "msg": ["m"]}),
    compact({**CHG, "op": "rename"}),
    compact({**CHG, "op": "Create"}),
    compact({**CHG, "op": None}),
    compact({**CHG, "item": None}),
    compact({**CHG, "bytes": None}),
    compact({**CHG, "derived": ["event"]}),
    compact({**CHG, "derived": []}),
    compact({**REC, "derived": ["x"]}),
    compact({**REC, "extra": 1}),
    compact({"store": CHG["store"], "ts": CHG["ts"], **CHG}),
    compact({k: CHG[k] for k in ("ts", "store", "kind", "fid", "cn", "item", "op", "bytes")}),
    compact({k: CHG[k] for k in ("ts", "store", "kind", "fid", "cn", "op", "bytes", "item")}),
    compact({k: REC[k] for k in ("ts", "store", "msg", "kind")}),
    compact({**REC, "kind": "Receive"}),
    compact({**REC, "kind": "change"}),
    compact({**CHG, "kind": "receive"}),
    compact({"ts": T0, "store": "PFS1", "kind": "store_status", "status": "up"}),
    compact(REC).replace('"msg"', '"ms\\u0067"'),
    compact(REC).replace("{", "{ ", 1),
    compact(REC) + "}",
    compact(REC) + "{}",
    "[" + compact(REC) + "]",
]


@pytest.fixture(scope="module")
def topo():  # type: ignore[no-untyped-def]
    return topology_from_json(TOPO)


def assert_same(spark, texts: list[str | None], topo) -> None:  # type: ignore[no-untyped-def]
    """Spark's stage-1 frame equals ``parsed_row`` line by line."""
    lines = spark.createDataFrame([(i + 1, t) for i, t in enumerate(texts)], "seq long, text string")
    got = sorted(parse_stage1(lines, topo).collect(), key=lambda r: r.seq)
    assert [r.seq for r in got] == list(range(1, len(texts) + 1))
    for row, text in zip(got, texts, strict=True):
        want = parsed_row(topo, row.seq, text)
        if tuple(row) != want:
            diff = {c: (h, w) for c, h, w in zip(PARSED_COLUMNS, tuple(row), want, strict=True) if h != w}
            raise AssertionError(f"line {row.seq} {text[:300] if text else text!r}: {diff}")


def test_canonical_lines_and_near_misses(spark, topo) -> None:  # type: ignore[no-untyped-def]
    assert_same(spark, [*CANONICAL, *NEAR_MISS], topo)


def _is_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except (ValueError, RecursionError):
        return False


def test_every_mutation_and_raw_line_in_both_forms(spark, topo) -> None:  # type: ignore[no-untyped-def]
    verbose = [*mutations(), *RAW]
    writers = [compact(json.loads(t)) for t in verbose if _is_object(t)]
    corpus: list[str | None] = [*verbose, *writers, None]
    reasons = set()
    for t in corpus:
        if t is not None:
            try:
                parse_line(t, topo, 1)
            except Reject as e:
                reasons.add(e.reason)
    assert len(reasons) >= 30 and R_NOT_UTF8 not in reasons  # nearly every stage-1 reason
    assert_same(spark, corpus, topo)


def test_a_simulated_log(spark) -> None:  # type: ignore[no-untyped-def]
    """The writers' own lines."""
    scenario = build(
        "scale", 3, {"stores": 5, "sites": 2, "folders": 6, "replicas": 3, "days": 1, "changes_per_day": 8}
    )
    buf = io.StringIO()
    run_scenario(scenario, buf, 3)
    lines = buf.getvalue().splitlines()
    assert len(lines) > 50
    assert_same(spark, lines, scenario.topology)


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True)
    | st.sampled_from(ODD)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["PFS1", "PFS2", "x", ""]), inner, max_size=3)
    ),
    max_leaves=6,
)


@st.composite
def mutated_line(draw) -> str:  # type: ignore[no-untyped-def]
    base = dict(draw(st.sampled_from(BASES)))
    for f in draw(st.lists(st.sampled_from(FIELDS), max_size=3)):
        if draw(st.booleans()):
            base.pop(f, None)
        else:
            base[f] = draw(JSON_VALUES)
    separators = (",", ":") if draw(st.booleans()) else None  # the writers' form, or spaced
    text = json.dumps(base, ensure_ascii=draw(st.booleans()), separators=separators)
    if draw(st.integers(0, 3)) == 0:  # damage the text itself
        i = draw(st.integers(0, len(text)))
        text = (
            text[:i]
            + draw(st.sampled_from(["", " ", ",", '"', "}", "{", "\\", "0", "\r", "é"]))
            + text[i + 1 :]
        )
    return text


@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(mutated_line(), min_size=200, max_size=200))
def test_mutated_lines(spark, topo, lines: list[str]) -> None:  # type: ignore[no-untyped-def]
    assert_same(spark, lines, topo)
