"""CN sets (spark_jobs.model.cnset) checked against a naive model: a Python set of (origin, cn) pairs.

Random sets use a few origins and CNs 1..60 so that overlapping and adjacent ranges are common. Every
random set is built through one of several construction paths (constructor, canonical text, shuffled
non-canonical text, JSON, union of single ranges, CN-by-CN adds) so the algebra is exercised on sets
whatever way they were made.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pfscope.spark_jobs.model.cnset import EMPTY, CNSet, CNSetError, decimal_int, union_all

ORIGINS = ("PFS1", "PFS2", "PFS3", "PFS4")
MAX_CN = 60
SETTINGS = settings(max_examples=200, deadline=None)

Pairs = set[tuple[str, int]]
Raw = list[tuple[str, int, int]]

CANONICAL_TEXT = re.compile(r"^([^:;,]+:(\d+(-\d+)?)(,\d+(-\d+)?)*)(;[^:;,]+:(\d+(-\d+)?)(,\d+(-\d+)?)*)*$")


# -- the model ---------------------------------------------------------------------------------------


def expand(raw: Raw) -> Pairs:
    return {(o, n) for o, lo, hi in raw for n in range(lo, hi + 1)}


def pairs_of(s: CNSet) -> Pairs:
    return {(o, n) for o, ranges in s.items() for lo, hi in ranges for n in range(lo, hi + 1)}


def model_runs(pairs: Pairs, origin: str) -> list[tuple[int, int]]:
    """Maximal runs of consecutive CNs of one origin, worked out without the code under test."""
    runs: list[list[int]] = []
    for n in sorted(n for o, n in pairs if o == origin):
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return [(lo, hi) for lo, hi in runs]


def model_text(pairs: Pairs) -> str:
    parts = []
    for origin in sorted({o for o, _ in pairs}):
        body = ",".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in model_runs(pairs, origin))
        parts.append(f"{origin}:{body}")
    return ";".join(parts)


def model_json(pairs: Pairs) -> dict[str, list[list[int]]]:
    return {o: [[lo, hi] for lo, hi in model_runs(pairs, o)] for o in sorted({o for o, _ in pairs})}


def assert_canonical(s: CNSet) -> None:
    origins = s.origins()
    assert origins == sorted(origins)
    assert [o for o, _ in s.items()] == origins
    assert list(s.to_json()) == origins
    for origin, ranges in s.items():
        assert isinstance(ranges, tuple)
        assert ranges, f"origin {origin} kept with no ranges"
        assert ranges == s.ranges(origin)
        for lo, hi in ranges:
            assert type(lo) is int and type(hi) is int
            assert 1 <= lo <= hi
        for (_, hi), (lo, _) in pairwise(ranges):
            assert lo > hi + 1, f"ranges of {origin} overlap or touch: {ranges}"
    text = s.text()
    if origins:
        assert CANONICAL_TEXT.match(text), text
    else:
        assert text == ""


def assert_is(s: CNSet, pairs: Pairs) -> None:
    """`s` holds exactly `pairs`, in canonical form."""
    assert_canonical(s)
    assert pairs_of(s) == pairs
    assert s.text() == model_text(pairs)


# -- strategies --------------------------------------------------------------------------------------

raw_ranges: st.SearchStrategy[Raw] = st.lists(
    st.tuples(st.sampled_from(ORIGINS), st.integers(1, MAX_CN), st.integers(0, 12)).map(
        lambda t: (t[0], t[1], min(MAX_CN, t[1] + t[2]))
    ),
    max_size=10,
)


def by_constructor(raw: Raw, rnd) -> CNSet:  # type: ignore[no-untyped-def]
    acc: dict[str, list[tuple[int, int]]] = {}
    for o, lo, hi in raw:
        acc.setdefault(o, []).append((lo, hi))
    return CNSet(acc)


def by_canonical_text(raw: Raw, rnd) -> CNSet:  # type: ignore[no-untyped-def]
    return CNSet.parse(model_text(expand(raw)))


def by_messy_text(raw: Raw, rnd) -> CNSet:  # type: ignore[no-untyped-def]
    return CNSet.parse(messy_text(raw, rnd))


def by_json(raw: Raw, rnd) -> CNSet:  # type: ignore[no-untyped-def]
    acc: dict[str, list[list[int]]] = {}
    for o, lo, hi in raw:
        acc.setdefault(o, []).append([lo, hi])
    return CNSet.from_json(json.loads(json.dumps(acc)))


def by_union_of_ranges(raw: Raw, rnd) -> CNSet:  # type: ignore[no-untyped-def]
    return union_all(CNSet.of(o, lo, hi) for o, lo, hi in raw)


def by_ascending_adds(raw: Raw, rnd) -> CNSet:  # type: ignore[no-untyped-def]
    s = EMPTY
    for o, n in sorted(expand(raw)):
        s = s.add(o, n)
    return s


def by_shuffled_adds(raw: Raw, rnd) -> CNSet:  # type: ignore[no-untyped-def]
    pairs = sorted(expand(raw))
    rnd.shuffle(pairs)
    s = EMPTY
    for o, n in pairs:
        s = s.add(o, n)
    return s


BUILDERS: list[Callable] = [
    by_constructor,
    by_canonical_text,
    by_messy_text,
    by_json,
    by_union_of_ranges,
    by_ascending_adds,
    by_shuffled_adds,
]


def messy_text(raw: Raw, rnd) -> str:  # type: ignore[no-untyped-def]
    """The same CNs as text in any order, overlapping, adjacent, an origin split over sections."""
    items = list(raw)
    rnd.shuffle(items)

    def fmt(lo: int, hi: int) -> str:
        if lo == hi and rnd.random() < 0.5:
            return f"{lo}"
        sp = " " if rnd.random() < 0.2 else ""
        return f"{lo}{sp}-{sp}{hi}"

    sections: list[str] = []
    for o, lo, hi in items:
        if sections and sections[-1].startswith(o + ":") and rnd.random() < 0.5:
            sections[-1] += "," + fmt(lo, hi)
        else:
            sections.append(f"{o}:{fmt(lo, hi)}")
    sep = " ; " if rnd.random() < 0.2 else ";"
    return sep.join(sections)


@st.composite
def cnsets(draw) -> tuple[CNSet, Pairs]:  # type: ignore[no-untyped-def]
    raw = draw(raw_ranges)
    builder = draw(st.sampled_from(BUILDERS))
    rnd = draw(st.randoms(use_true_random=False))
    return builder(raw, rnd), expand(raw)


# -- construction ------------------------------------------------------------------------------------


@SETTINGS
@given(raw_ranges, st.randoms(use_true_random=False))
def test_every_construction_path_gives_the_same_canonical_set(raw: Raw, rnd) -> None:  # type: ignore[no-untyped-def]
    pairs = expand(raw)
    built = [b(raw, rnd) for b in BUILDERS]
    for s in built:
        assert_is(s, pairs)
    assert all(s == built[0] for s in built)
    assert len({hash(s) for s in built}) == 1

    # parse and from_json take unsorted, overlapping, adjacent input and normalise it
    messy = messy_text(raw, rnd)
    assert_is(CNSet.parse(messy), pairs)
    items = list(raw)
    rnd.shuffle(items)
    value: dict[str, list[list[int]]] = {}
    for o, lo, hi in items:
        value.setdefault(o, []).append([lo, hi])
    from_value = CNSet.from_json(value)
    assert_is(from_value, pairs)
    assert from_value.to_json() == model_json(pairs)


# -- round trips -------------------------------------------------------------------------------------


@SETTINGS
@given(cnsets())
def test_text_and_json_round_trips(sp: tuple[CNSet, Pairs]) -> None:
    s, pairs = sp
    text = s.text()
    assert text == model_text(pairs)
    back = CNSet.parse(text)
    assert back == s
    assert back.text() == text
    assert str(s) == text
    assert repr(s) == f"CNSet({text!r})"
    assert CNSet.from_json(text) == s  # from_json takes the text form as well

    value = s.to_json()
    assert value == model_json(pairs)
    assert list(value) == sorted(value)
    assert CNSet.from_json(value) == s
    through_wire = CNSet.from_json(json.loads(json.dumps(value)))
    assert through_wire == s
    assert through_wire.text() == text


# -- algebra against the model -----------------------------------------------------------------------


@SETTINGS
@given(cnsets(), cnsets())
def test_union_intersection_difference(a: tuple[CNSet, Pairs], b: tuple[CNSet, Pairs]) -> None:
    (x, xa), (y, yb) = a, b
    assert_is(x.union(y), xa | yb)
    assert x | y == x.union(y) == y.union(x)
    assert_is(x.intersection(y), xa & yb)
    assert x & y == x.intersection(y) == y.intersection(x)
    assert_is(x.difference(y), xa - yb)
    assert_is(y.difference(x), yb - xa)
    assert x - y == x.difference(y)
    assert_is(x - x, set())
    assert_is(x | x, xa)
    assert_is(x & x, xa)
    assert pairs_of(x) == xa and pairs_of(y) == yb  # operands untouched


@SETTINGS
@given(cnsets(), cnsets())
def test_subset_strict_subset_disjoint(a: tuple[CNSet, Pairs], b: tuple[CNSet, Pairs]) -> None:
    (x, xa), (y, yb) = a, b
    assert x.issubset(y) == (xa <= yb)
    assert y.issubset(x) == (yb <= xa)
    assert (x <= y) == (xa <= yb)
    assert x.is_strict_subset(y) == (xa < yb)
    assert y.is_strict_subset(x) == (yb < xa)
    assert (x < y) == (xa < yb)
    assert (x >= y) == (xa >= yb)  # reflected __le__
    assert (x > y) == (xa > yb)  # reflected __lt__
    assert x.isdisjoint(y) == xa.isdisjoint(yb) == y.isdisjoint(x)

    # related pairs, so the True answers are exercised too (random pairs are mostly unrelated)
    u, i, d = x | y, x & y, x - y
    for small, big in ((x, u), (y, u), (i, x), (i, y), (d, x), (i, u)):
        ps, pb = pairs_of(small), pairs_of(big)
        assert ps <= pb
        assert small.issubset(big)
        assert small.is_strict_subset(big) == (ps < pb)
        assert big.issubset(small) == (pb <= ps)
    assert x.issubset(x) and not x.is_strict_subset(x)
    assert d.isdisjoint(y) and d.isdisjoint(i)
    assert d | i == x
    assert x.isdisjoint(x) == (not xa)


@SETTINGS
@given(cnsets(), st.data())
def test_count_contains_max_cn(sp: tuple[CNSet, Pairs], data: st.DataObject) -> None:
    s, pairs = sp
    assert s.count() == len(pairs)
    assert len(s) == len(pairs)
    assert bool(s) == bool(pairs)
    assert (s == EMPTY) == (not pairs)
    for origin in (*ORIGINS, "PFS9"):
        for n in range(1, MAX_CN + 3):
            assert ((origin, n) in s) == ((origin, n) in pairs), (origin, n)
        mine = [n for o, n in pairs if o == origin]
        assert s.max_cn(origin) == (max(mine) if mine else None)
    probe = data.draw(st.tuples(st.sampled_from(ORIGINS), st.integers(1, MAX_CN)))
    assert (probe in s) == (probe in pairs)


@SETTINGS
@given(cnsets(), st.sampled_from(ORIGINS), st.integers(1, MAX_CN + 2))
def test_add(sp: tuple[CNSet, Pairs], origin: str, n: int) -> None:
    s, pairs = sp
    text_before = s.text()
    t = s.add(origin, n)
    assert_is(t, pairs | {(origin, n)})
    assert (origin, n) in t
    assert t.max_cn(origin) == max(n, s.max_cn(origin) or 0)
    assert s.text() == text_before and pairs_of(s) == pairs  # immutable

    # the fast path: the CN just after an origin's last range extends that range
    for o in ORIGINS:
        top = s.max_cn(o)
        if top is None:
            continue
        t = s.add(o, top + 1)
        assert_is(t, pairs | {(o, top + 1)})
        assert t.max_cn(o) == top + 1
        assert t.ranges(o)[-1] == (s.ranges(o)[-1][0], top + 1)
        assert len(t.ranges(o)) == len(s.ranges(o))
        assert t.count() == s.count() + 1
        assert pairs_of(s) == pairs


@SETTINGS
@given(cnsets(), cnsets())
def test_equality_and_hash(a: tuple[CNSet, Pairs], b: tuple[CNSet, Pairs]) -> None:
    (x, xa), (y, yb) = a, b
    assert (x == y) == (xa == yb)
    assert (x != y) == (xa != yb)
    if x == y:
        assert hash(x) == hash(y)
    # a copy made another way is equal, hashes equal and finds the same dict slot
    copy = CNSet.from_json(x.to_json())
    assert copy == x and hash(copy) == hash(x)
    assert {x: "v"}[copy] == "v"
    assert len({x, y, copy}) == (1 if xa == yb else 2)
    assert x != x.text()  # not equal to its text
    assert (x == CNSet.parse(model_text(xa))) is True


# -- examples ----------------------------------------------------------------------------------------


def test_seed_example_difference() -> None:
    have = CNSet.parse("PFS1:1-16;PFS2:1-28")
    other = CNSet.parse("PFS1:1-11,17;PFS2:1-20;PFS3:1-31")
    missing = have - other
    assert missing.text() == "PFS1:12-16;PFS2:21-28"
    assert missing.count() == 13
    assert missing.to_json() == {"PFS1": [[12, 16]], "PFS2": [[21, 28]]}
    assert other - have == CNSet.parse("PFS1:17;PFS3:1-31")
    assert (have | other).text() == "PFS1:1-17;PFS2:1-28;PFS3:1-31"
    assert (have & other).text() == "PFS1:1-11;PFS2:1-20"
    assert not have.issubset(other) and not other.issubset(have)
    assert not have.isdisjoint(other)


def test_canonical_text_example() -> None:
    s = CNSet.parse("PFS3:1-31;PFS1:17,1-11;PFS2:1-20")
    assert s.text() == "PFS1:1-11,17;PFS2:1-20;PFS3:1-31"
    assert s.origins() == ["PFS1", "PFS2", "PFS3"]
    assert s.ranges("PFS1") == ((1, 11), (17, 17))
    assert s.ranges("PFS9") == ()
    assert s.count() == 11 + 1 + 20 + 31
    assert s.max_cn("PFS1") == 17 and s.max_cn("PFS9") is None
    assert ("PFS1", 17) in s and ("PFS1", 16) not in s and ("PFS4", 1) not in s


def test_json_example() -> None:
    s = CNSet.from_json({"PFS1": [[18, 18], [1, 16]]})
    assert s.to_json() == {"PFS1": [[1, 16], [18, 18]]}
    assert s.text() == "PFS1:1-16,18"
    assert CNSet.from_json({"PFS1": [[1, 16], [17, 17]]}).text() == "PFS1:1-17"  # adjacent joins
    assert CNSet.from_json({"PFS1": []}) == EMPTY  # an origin with no ranges is no origin
    assert CNSet.from_json({"PFS1": []}).origins() == []
    assert CNSet.from_json({}) == EMPTY


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("PFS1:1-5,6-10", "PFS1:1-10"),  # adjacent
        ("PFS1:1-5,3-8", "PFS1:1-8"),  # overlapping
        ("PFS1:3,1,2", "PFS1:1-3"),  # unsorted singles
        ("PFS1:2-9,4-5", "PFS1:2-9"),  # contained
        ("PFS1:7-7", "PFS1:7"),  # single CN has no dash
        ("PFS1:1-3;PFS1:4", "PFS1:1-4"),  # origin in two sections
        ("PFS2:5;PFS1:9", "PFS1:9;PFS2:5"),  # origins sorted
        ("PFS1:1-2,4-5", "PFS1:1-2,4-5"),  # a gap of one CN stays
        ("  PFS1 : 1 - 3 , 5 ;  PFS2:4  ", "PFS1:1-3,5;PFS2:4"),  # spaces around tokens
        ("", ""),
        ("   ", ""),
    ],
)
def test_parse_examples(text: str, canonical: str) -> None:
    s = CNSet.parse(text)
    assert s.text() == canonical
    # the job's reader of canonical text gives the same set, and its text, from any text
    fast = CNSet.parse_canonical(text)
    assert fast == s
    assert fast.text() == canonical
    assert fast.count() == s.count()


@SETTINGS
@given(cnsets(), st.integers(min_value=0, max_value=5))
def test_parse_canonical_equals_parse(sp: tuple[CNSet, Pairs], bend: int) -> None:
    """Canonical text is read as is; a text bent out of canonical form (spaces, leading zeros,
    a dash on a single CN, origins or ranges out of order) is read as ``parse`` reads it."""
    s, _ = sp
    text = s.text()
    if text and bend:
        sections = text.split(";")
        text = {
            1: lambda: text.replace(":", ": "),
            2: lambda: text.replace(":", ":0"),
            3: lambda: ";".join(reversed(sections)),
            4: lambda: ";".join(f"{x},{x.split(':')[1].split(',')[0]}" for x in sections),
            5: lambda: text + ";" + sections[0],
        }[bend]()
    fast = CNSet.parse_canonical(text)
    assert fast == CNSet.parse(text) == s
    assert fast.text() == s.text()
    assert fast.count() == s.count()
    assert_canonical(s)


def test_empty() -> None:
    assert CNSet.parse("") is EMPTY
    assert CNSet.empty() is EMPTY
    assert CNSet() == EMPTY and hash(CNSet()) == hash(EMPTY)
    assert EMPTY.text() == "" and EMPTY.to_json() == {}
    assert EMPTY.count() == 0 and not EMPTY
    assert EMPTY.issubset(CNSet.single("PFS1", 1)) and EMPTY.is_strict_subset(CNSet.single("PFS1", 1))
    assert EMPTY.issubset(EMPTY) and not EMPTY.is_strict_subset(EMPTY)
    assert EMPTY.isdisjoint(EMPTY)
    s = CNSet.of("PFS1", 1, 5)
    assert s | EMPTY == s and EMPTY | s == s
    assert s - EMPTY == s and EMPTY - s == EMPTY
    assert (s & EMPTY) == EMPTY and (s - s) == EMPTY
    assert (s - s).text() == ""


def test_single_of_and_union_all() -> None:
    assert CNSet.single("PFS1", 5).text() == "PFS1:5"
    assert CNSet.of("PFS1", 5, 5) == CNSet.single("PFS1", 5)
    assert CNSet.of("PFS1", 2, 9).text() == "PFS1:2-9"
    assert union_all([]) == EMPTY
    assert union_all([CNSet.of("PFS1", 1, 3), CNSet.single("PFS1", 4), CNSet.single("PFS2", 1)]).text() == (
        "PFS1:1-4;PFS2:1"
    )


def test_add_examples() -> None:
    s = CNSet.parse("PFS1:1-3,5")
    assert s.add("PFS1", 4).text() == "PFS1:1-5"  # fills the gap, ranges join
    assert s.add("PFS1", 6).text() == "PFS1:1-3,5-6"  # fast path
    assert s.add("PFS1", 2) == s  # already there
    assert s.add("PFS1", 9).text() == "PFS1:1-3,5,9"
    assert s.add("PFS0", 1).text() == "PFS0:1;PFS1:1-3,5"
    assert s.text() == "PFS1:1-3,5"
    big = EMPTY
    for n in range(1, 1001):
        big = big.add("PFS1", n)
    assert big.text() == "PFS1:1-1000" and big.count() == 1000


def test_large_cns() -> None:
    hi = 2**47
    s = CNSet.of("PFS1", hi - 5, hi)
    assert s.text() == f"PFS1:{hi - 5}-{hi}"
    assert CNSet.parse(s.text()) == s
    assert s.count() == 6
    assert s.add("PFS1", hi + 1).max_cn("PFS1") == hi + 1


# -- errors ------------------------------------------------------------------------------------------


def test_error_is_a_value_error() -> None:
    assert issubclass(CNSetError, ValueError)
    with pytest.raises(ValueError):
        CNSet.parse("PFS1:0")


@pytest.mark.parametrize(
    "make",
    [
        lambda: CNSet.of("PFS1", 5, 3),  # lo > hi
        lambda: CNSet.of("PFS1", 0, 3),  # CN 0
        lambda: CNSet.of("PFS1", -2, 3),  # negative CN
        lambda: CNSet.single("PFS1", 0),
        lambda: CNSet.single("PFS1", -1),
        lambda: EMPTY.add("PFS1", 0),
        lambda: CNSet.of("PFS1", 1, 3).add("PFS1", -4),
        lambda: CNSet({"PFS1": [(5, 3)]}),
        lambda: CNSet({"PFS1": [(0, 3)]}),
        lambda: CNSet({"PFS1": [(1, 2), (-1, -1)]}),
        lambda: CNSet.of("PFS1", 1.0, 2),  # not integers
        lambda: CNSet.single("PFS1", "3"),
    ],
    ids=[
        "of-lo>hi",
        "of-zero",
        "of-negative",
        "single-zero",
        "single-negative",
        "add-zero",
        "add-negative",
        "ctor-lo>hi",
        "ctor-zero",
        "ctor-negative",
        "of-float",
        "single-str",
    ],
)
def test_bad_ranges_in_code_raise(make: Callable[[], CNSet]) -> None:
    with pytest.raises(CNSetError):
        make()


@pytest.mark.parametrize(
    "make",
    [
        lambda: CNSet.single("PFS1", True),
        lambda: CNSet.of("PFS1", True, 3),
        lambda: CNSet.of("PFS1", 1, True),
        lambda: EMPTY.add("PFS1", True),
        lambda: CNSet({"PFS1": [(True, True)]}),
    ],
    ids=["single", "of-lo", "of-hi", "add", "ctor"],
)
def test_bools_are_not_cns_in_code(make: Callable[[], CNSet]) -> None:
    # from_json rejects bools as CNs (see test_bad_json_raises); the in-code constructors must agree,
    # or CNSet.single("PFS1", True) == CNSet.single("PFS1", 1) with text "PFS1:True" and another hash.
    with pytest.raises(CNSetError):
        make()


@pytest.mark.parametrize(
    "text",
    [
        "PFS1",  # no colon
        "PFS1:",  # no ranges
        "PFS1:a-b",
        "PFS1:a",
        ":1-2",  # no origin
        "  :1-2",
        "PFS1:1-2;;",
        "PFS1:1-2;",
        ";PFS1:1-2",
        "PFS1:1-2;;PFS2:3",
        "PFS1:1,,2",
        "PFS1:1,",
        "PFS1:,1",
        "PFS1:1-",
        "PFS1:-5",
        "PFS1:1-2-3",
        "PFS1:1.5",
        "PFS1:5-3",  # lo > hi
        "PFS1:0",  # CN 0
        "PFS1:0-4",
        "PFS1:-1",  # negative
        "PFS1:-3-5",
        "PFS1:1-2;PFS2",
    ],
)
def test_bad_text_raises(text: str) -> None:
    with pytest.raises(CNSetError):
        CNSet.parse(text)
    with pytest.raises(CNSetError):
        CNSet.from_json(text)


@pytest.mark.parametrize("value", [None, 5, b"PFS1:1", ["PFS1:1"]])
def test_parse_rejects_non_strings(value: object) -> None:
    with pytest.raises(CNSetError):
        CNSet.parse(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "value",
    [
        None,
        5,
        ["PFS1", [[1, 2]]],
        {"PFS1": "1-2"},  # ranges not a list
        {"PFS1": [1, 2]},  # range not a list
        {"PFS1": ((1, 2),)},  # tuple, not list
        {"PFS1": [(1, 2)]},
        {"PFS1": [{"lo": 1, "hi": 2}]},
        {"PFS1": None},
        {"PFS1": [[True, 2]]},  # bools are not integers
        {"PFS1": [[1, True]]},
        {"PFS1": [[False, False]]},
        {"PFS1": [[1]]},  # wrong arity
        {"PFS1": [[1, 2, 3]]},
        {"PFS1": [[]]},
        {"PFS1": [[1.0, 2]]},  # not integers
        {"PFS1": [["1", "2"]]},
        {"PFS1": [[1, None]]},
        {"PFS1": [[5, 3]]},  # lo > hi
        {"PFS1": [[0, 3]]},  # CN 0
        {"PFS1": [[-2, 3]]},  # negative
        {"PFS1": [[1, 2]], "PFS2": [[3, 2]]},
        {"": [[1, 2]]},  # empty origin
        {1: [[1, 2]]},  # origin not a string
    ],
)
def test_bad_json_raises(value: object) -> None:
    with pytest.raises(CNSetError):
        CNSet.from_json(value)


def test_union_grows_an_adjacent_range_and_a_disjoint_union_adds_counts() -> None:
    a = CNSet.parse("A:1-5,8-10")
    later = CNSet.parse("A:11-12,20")
    assert a.union(later).text() == later.union(a).text() == "A:1-5,8-12,20"
    assert CNSet.parse("A:3-4").union(CNSet.parse("A:1-2")).text() == "A:1-4"
    b = a.union_disjoint(CNSet.parse("A:11;B:1-3"))
    assert b.text() == "A:1-5,8-11;B:1-3"
    assert b.count() == a.count() + 4 == CNSet.parse(b.text()).count() == 12


def test_numbers_of_more_digits_than_int_converts_are_read_as_huge() -> None:
    """Python's ``int`` refuses more than 4300 digits by default: such a CN is read (beyond every
    bound, in order), never an error about the text's shape."""
    sevens = "7" * 5000
    assert decimal_int(sevens) > 2**64 and decimal_int("-" + sevens) < -(2**64)
    assert decimal_int("6" * 5000) < decimal_int(sevens) < decimal_int("1" + "0" * 5000)
    assert decimal_int("0" * 5000 + "5") == 5 and decimal_int(" 12 ") == 12
    with pytest.raises(ValueError):
        decimal_int("7" * 4999 + "x")
    assert CNSet.parse(f"PFS1:1-{sevens}").max_cn("PFS1") == decimal_int(sevens)
    with pytest.raises(CNSetError, match="lo > hi"):
        CNSet.parse(f"PFS1:{sevens}-1")
