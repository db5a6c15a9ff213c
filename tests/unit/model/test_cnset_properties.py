"""CN-set algebra against a naive model: a Python set of (origin, cn) pairs."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_jobs.model.cnset import EMPTY, CNSet, CNSetError, union_all

ORIGINS = ("PFS1", "PFS2", "PFS3", "PFS4")
naive_sets = st.sets(st.tuples(st.sampled_from(ORIGINS), st.integers(1, 60)), max_size=80)
settings.register_profile("pfscope", max_examples=200, deadline=None)
settings.load_profile("pfscope")


def build(pairs: set[tuple[str, int]]) -> CNSet:
    out = EMPTY
    for origin, cn in sorted(pairs, key=lambda p: (p[0], -p[1])):  # out of order on purpose
        out = out.add(origin, cn)
    return out


def pairs_of(s: CNSet) -> set[tuple[str, int]]:
    return {(o, n) for o, ranges in s.items() for lo, hi in ranges for n in range(lo, hi + 1)}


@given(naive_sets, naive_sets)
def test_algebra_matches_naive_sets(a: set, b: set) -> None:
    x, y = build(a), build(b)
    assert pairs_of(x) == a
    assert pairs_of(x | y) == a | b
    assert pairs_of(x & y) == a & b
    assert pairs_of(x - y) == a - b
    assert (x <= y) == (a <= b)
    assert (x < y) == (a < b)
    assert x.isdisjoint(y) == a.isdisjoint(b)
    assert x.count() == len(a) == len(x)
    assert bool(x) == bool(a)
    assert (x == y) == (a == b)
    if x == y:
        assert hash(x) == hash(y)


@given(naive_sets, st.sampled_from(ORIGINS), st.integers(1, 70))
def test_membership_and_max(a: set, origin: str, cn: int) -> None:
    x = build(a)
    assert ((origin, cn) in x) == ((origin, cn) in a)
    mine = [n for o, n in a if o == origin]
    assert x.max_cn(origin) == (max(mine) if mine else None)


@given(naive_sets)
def test_canonical_form(a: set) -> None:
    x = build(a)
    assert x.origins() == sorted(x.origins())
    for _origin, ranges in x.items():
        for (lo1, hi1), (lo2, _hi2) in itertools.pairwise(ranges):
            assert lo1 <= hi1 and hi1 + 1 < lo2  # sorted, disjoint, not even adjacent
    text = x.text()
    assert CNSet.parse(text) == x and CNSet.parse(text).text() == text
    assert CNSet.from_json(x.to_json()) == x
    assert CNSet.from_json(text) == x


@given(st.lists(st.tuples(st.sampled_from(ORIGINS), st.integers(1, 40), st.integers(0, 5)), max_size=12))
def test_parse_normalises_any_order_overlap_and_adjacency(items: list) -> None:
    parts = [f"{o}:{lo}-{lo + span}" for o, lo, span in items]
    expected = {(o, n) for o, lo, span in items for n in range(lo, lo + span + 1)}
    assert pairs_of(CNSet.parse(";".join(parts))) == expected


def test_seed_004_backfill_set() -> None:
    believed = CNSet.parse("PFS1:1-16;PFS2:1-28")
    owned = CNSet.parse("PFS1:1-11,17;PFS2:1-20;PFS3:1-31")
    missing = believed - owned
    assert missing.text() == "PFS1:12-16;PFS2:21-28" and missing.count() == 13
    assert union_all([believed, owned]).text() == "PFS1:1-17;PFS2:1-28;PFS3:1-31"


def test_text_forms() -> None:
    assert CNSet.parse("").text() == "" and not CNSet.parse("  ")
    assert CNSet.parse("PFS1:3-3,5-6").text() == "PFS1:3,5-6"  # a single CN without a dash
    assert CNSet.parse("PFS2:5,1-3,4;PFS1:9").text() == "PFS1:9;PFS2:1-5"
    assert CNSet.from_json({"PFS1": [[1, 16], [18, 18]]}).text() == "PFS1:1-16,18"
    assert CNSet.from_json({}).text() == ""
    assert CNSet.of("PFS1", 3, 7).to_json() == {"PFS1": [[3, 7]]}


@pytest.mark.parametrize(
    "bad",
    ["PFS1", "PFS1:", "PFS1:a-b", ":1-2", "PFS1:1-2;;", "PFS1:1-2,", "PFS1:0", "PFS1:-3", "PFS1:5-3", "PFS1:1--2"],
)
def test_bad_text_is_rejected(bad: str) -> None:
    with pytest.raises(CNSetError):
        CNSet.parse(bad)


@pytest.mark.parametrize(
    "bad",
    [[["PFS1", 1]], {"PFS1": [1, 2]}, {"PFS1": [[1]]}, {"PFS1": [[1, 2, 3]]}, {"PFS1": [[True, 2]]},
     {"PFS1": [[1.0, 2]]}, {"PFS1": [[0, 2]]}, {"PFS1": [[3, 2]]}, {"": [[1, 2]]}, {"PFS1": "1-2"}, 7],
)
def test_bad_json_is_rejected(bad: object) -> None:
    with pytest.raises(CNSetError):
        CNSet.from_json(bad)


def test_error_messages_say_why() -> None:
    with pytest.raises(CNSetError, match="below 1"):
        CNSet.parse("PFS1:0-4")
    with pytest.raises(CNSetError, match="lo > hi"):
        CNSet.from_json({"PFS1": [[9, 2]]})
