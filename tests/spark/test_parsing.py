"""Stage 1 in the JVM (``spark_jobs.parsing``) equals ``parse_line``, line by line, every column.

The corpus: each kind of valid line, then every field of each deleted, nulled and replaced by
values of every JSON type and the edges of its rule (every reject reason, in the order the rules
are checked); whole lines that are not JSON, not objects, blank, CRLF, BOM, non-ASCII, escapes,
duplicate keys, NaN, huge numbers, deep nesting, text after the value, very long lines; and
hypothesis-generated mutations of valid lines.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spark_jobs.model.events import R_NOT_UTF8
from spark_jobs.model.topology import topology_from_json
from spark_jobs.parsing import PARSED_COLUMNS, TO_PYTHON, VERDICT_COLUMNS, judged, parse_lines, verdict_row
from tests.unit.model.test_readers import TOPO

T0 = "2026-11-02T08:00:00Z"
BASES: list[dict[str, Any]] = [
    {"ts": T0, "store": "PFS1", "kind": "change", "fid": "1-123", "cn": 5, "op": "modify", "item": "Item 1",
     "bytes": 10},
    {"ts": T0, "store": "PFS2", "kind": "change", "fid": "1-abc", "cn": 1, "derived": ["event"]},
    {"ts": T0, "store": "PFS1", "kind": "send", "msg": "m1", "type": "content", "fid": "1-123",
     "to": ["PFS2", "PFS3"], "cnset": "PFS1:1-3,5;PFS2:4", "changes": "PFS1:3"},
    {"ts": T0, "store": "PFS1", "kind": "send", "msg": "<m2@EX1>", "type": "hierarchy", "fid": "1-1",
     "to": ["PFS3"], "cnset": "PFS2:7,1-3,2-5,9-9;PFS1:1", "changes": "PFS1:1", "derived": ["cnset", "cnset"]},
    {"ts": T0, "store": "PFS2", "kind": "send", "msg": "m3", "type": "backfill_request", "fid": "1-123",
     "to": ["PFS1", "PFS3"], "cnset": "", "requested": "PFS1:4-6", "source": "PFS1"},
    {"ts": T0, "store": "PFS1", "kind": "send", "msg": "m4", "type": "backfill_response", "fid": "1-123",
     "to": ["PFS2"], "cnset": "PFS1:1-9", "changes": "PFS1:4-6"},
    {"ts": T0, "store": "PFS3", "kind": "send", "msg": "m5", "type": "status", "fid": "1-123", "to": ["PFS1"],
     "cnset": "PFS3:1-2"},
    {"ts": T0, "store": "PFS3", "kind": "send", "msg": "m6", "type": "status_request", "fid": "1-123",
     "to": ["PFS1", "PFS2"], "cnset": "PFS3:1", "responders": ["PFS2", "PFS1"]},
    {"ts": T0, "store": "PFS2", "kind": "receive", "msg": "m1"},
    {"ts": T0, "store": "PFS1", "kind": "replicas", "fid": "1-123", "replicas": ["PFS2", "PFS1"],
     "path": "IPM_SUBTREE/It's here"},
    {"ts": T0, "store": "PFS3", "kind": "store_status", "status": "down"},
]
FIELDS = sorted({f for b in BASES for f in b} | {"source", "requested", "responders", "path", "op", "item",
                                                  "bytes", "changes"})
ODD: list[Any] = [
    "", " ", "x", "PFS1", "PFS9", "change", "1-1", "1-123", "up", "modify", 0, -1, 1, 7, 1.0, 2.5, True, False,
    [], ["PFS2"], ["PFS1", "PFS1"], ["PFS2", ""], ["PFS2", None], ["PFS2", 1], [""], {}, {"PFS1": [[1, 2]]},
    "PFS1:0", "PFS1:3-2", "PFX:1", "PFS1:1-2;PFS1:2-9", "PFS1:", "PFS1:1,,2", " PFS1:1 ", "PFS1:+1", "PFS1:1_0",
    "PFS1:2-1;PFS2:0", "PFS2:0;PFS1:2-1", "PFS1:007-010", "PFS9:0", "PFS9:1;PFS1:0",
    "2026-11-02T08:00:00z", "2026-11-02t08:00:00+01:30", "2026-11-02 08:00:00.5-02:00",
    "2026-11-02T08:00:00.1234567Z", "2026-11-02T08:00:00+0100", "2026-02-30T08:00:00Z", "2026-11-02T24:00:00Z",
    "2026-11-02T08:00:60Z", "0000-01-01T00:00:00Z", "0001-01-01T00:00:00+01:00", "2026-11-02T08:00:00+05:60",
    "2026-11-02T08:00:00+24:00", "2026-11-02T08:00:00", "2026-11-02X08:00:00Z", " 2026-11-02T08:00:00Z ",
    "9999-12-31T23:59:59.999999-23:59", "2026-11-02T08:00Z", "2026-13-02T08:00:00Z", "20261102T080000Z....",
    "backfill_request", "hierarchy", "nope", "create", "delete",
]
RAW = [
    "", "   ", "\t", "\r", "\ufeff", "{not json", "[]", "5", '"x"', "null", "{}", "[1, 2]",
    '{"kind": "change", "kind": "receive"}', '{"ts": NaN}', '{"a": Infinity}', "{'a': 1}", '{"a": 1,}',
    '{"a": 01}', '{"a": .5}', "{} x", "{}{}", "{} }", "[[[[[[[[[[]]]]]]]]]]", "[" * 5000 + "]" * 5000,
    '{"a": "\\ud800"}', '{"kind": "\\u0063hange"}', "\ufeff" + json.dumps(BASES[0]), json.dumps(BASES[0]) + "\r",
    json.dumps(BASES[0]).replace(" ", "\t"), json.dumps(BASES[0]).replace("Item 1", "Ïtém ☃ 𝄞"),
    json.dumps(BASES[0]).replace("Item 1", "a\\nb"), json.dumps({**BASES[9], "path": "It's \"here\" \\"}), json.dumps(BASES[0]).replace("Item 1", "x" * 200_000),
    json.dumps(BASES[0]).replace("Item 1", "\u2028"), "\u00a0", "\u3000" + json.dumps(BASES[8]),
    json.dumps({**BASES[0], "extra": {"deep": [[[[[1]]]]]}}), json.dumps({**BASES[0], "extra": 10**30}),
    json.dumps({**BASES[0], "cn": 10**19 - 1}), '{"cn": 1e400, "kind": "change"}',
    json.dumps({**BASES[0], "cn": 2**63 - 1, "bytes": 2**63 - 1}), json.dumps({**BASES[0], "cn": 2**63}),
    json.dumps({**BASES[0], "bytes": 2**63}), json.dumps({**BASES[0], "cn": 10**18, "bytes": 10**30}),
    json.dumps({**BASES[0], "item": "a{b}[c]"}), json.dumps({**BASES[0], "item": "[x]"}), " " + json.dumps(BASES[8]) + "  ",
    json.dumps({**BASES[2], "to": ["PFS2", ["PFS3"]]}), '{"kind": "receive"} {}', '{"kind": "receive"}]',
    json.dumps(BASES[0])[:-1] + ', "cn": 6}', json.dumps(BASES[0]).replace('"cn": 5', '"cn": 5.0'),
    json.dumps(BASES[0]).replace('"cn": 5', '"cn": 5e0'), json.dumps(BASES[0]).replace('"cn": 5', '"cn": -0'),
    json.dumps({**BASES[2], "cnset": {"PFS1": [[1, 3], [5, 5]], "PFS2": []}}),
    json.dumps({**BASES[2], "cnset": {"PFS1": [[3, 1]], "PFS2": [[0, 1]]}}),
    json.dumps({**BASES[2], "cnset": {"": [[1, 1]]}}), json.dumps({**BASES[2], "cnset": "PFS1:" + ",".join(
        f"{i}-{i + 1}" for i in range(1, 3000, 3))}),
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


@pytest.fixture(scope="module")
def topo():  # type: ignore[no-untyped-def]
    return topology_from_json(TOPO)


def numbered(spark, texts: list[str | None]):  # type: ignore[no-untyped-def]
    rows = [("file:/log.jsonl", 0, i + 1, i + 1, t) for i, t in enumerate(texts)]
    return spark.createDataFrame(rows, "source_uri string, file_index int, line long, seq long, text string")


def expected(text: str | None, topo) -> tuple[Any, ...]:  # type: ignore[no-untyped-def]
    if text is None:
        return ("", R_NOT_UTF8, *(None,) * (len(VERDICT_COLUMNS) - 1))
    return (text, *verdict_row(text, topo))


def assert_same(spark, texts: list[str | None], topo) -> None:  # type: ignore[no-untyped-def]
    got = parse_lines(numbered(spark, texts), topo, ["/log.jsonl"]).collect()
    assert [r.seq for r in got] == list(range(1, len(texts) + 1))
    for r, text in zip(got, texts, strict=True):
        assert r.source == "/log.jsonl" and r.line == r.seq
        want = expected(text, topo)
        have = tuple(r[c] for c in ("text", *VERDICT_COLUMNS))
        if have != want:
            diff = {c: (h, w) for c, h, w in zip(("text", *VERDICT_COLUMNS), have, want, strict=True) if h != w}
            raise AssertionError(f"line {r.seq} {text[:300] if text else text!r}: {diff}")


def test_columns_are_the_parsed_ddl(spark, topo) -> None:  # type: ignore[no-untyped-def]
    df = parse_lines(numbered(spark, ["{}"]), topo)
    assert df.columns == list(PARSED_COLUMNS)
    assert [r.source for r in df.collect()] == ["file:/log.jsonl"]  # no file list: Spark's URI


def test_every_mutation_and_raw_line_equals_parse_line(spark, topo) -> None:  # type: ignore[no-untyped-def]
    corpus = [*mutations(), *RAW, None]
    reasons = {verdict_row(t, topo)[0] for t in corpus if t is not None}
    assert len(reasons) >= 30  # the corpus meets nearly every stage-1 reason
    assert_same(spark, corpus, topo)


def test_common_lines_stay_in_the_jvm(spark, topo) -> None:  # type: ignore[no-untyped-def]
    """Valid lines and ordinary rejects never reach Python; the unusual ones do."""
    common = [json.dumps(b) for b in BASES] + [json.dumps({**BASES[0], "cn": 0}), json.dumps({**BASES[2], "to": []}),
                                                "", "  ", json.dumps({**BASES[2], "cnset": "PFS1:0"})]
    unusual = ["{not json", "\ufeff{}", '{"a": 1, "a": 2}', json.dumps({**BASES[0], "ts": "2026-11-02T08:00:00+0100"}),
               json.dumps({**BASES[2], "cnset": {"PFS1": [[1, 2]]}}), "[]", "{} x", json.dumps({**BASES[0], "item": "{x}"}),
               json.dumps({**BASES[2], "to": [["PFS2"]]}), json.dumps({**BASES[0], "cn": 10**19})]
    df = judged(numbered(spark, common + unusual), topo)
    routed = {r.seq for r in df.filter(df["_reason"] == TO_PYTHON).select("seq").collect()}
    assert routed == set(range(len(common) + 1, len(common) + len(unusual) + 1))


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True)
    | st.sampled_from(ODD) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["PFS1", "PFS2", "x", ""]), inner,
                                                                 max_size=3),
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
    text = json.dumps(base, ensure_ascii=draw(st.booleans()))
    if draw(st.integers(0, 3)) == 0:  # damage the text itself
        i = draw(st.integers(0, len(text)))
        text = text[:i] + draw(st.sampled_from(["", " ", ",", '"', "}", "{", "\\", "0", "\r", "é"])) + text[i + 1:]
    return text


@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(mutated_line(), min_size=200, max_size=200))
def test_mutated_lines_equal_parse_line(spark, topo, lines: list[str]) -> None:  # type: ignore[no-untyped-def]
    assert_same(spark, lines, topo)
