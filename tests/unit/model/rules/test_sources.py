"""Choosing backfill sources: the Exchange 2003+ sort and walk, the Exchange 2000 search."""

from __future__ import annotations

import pytest

from pfscope.spark_jobs.model.cnset import CNSet
from pfscope.spark_jobs.model.rules.sources import (
    ALGO_2000,
    ALGO_2003,
    Candidate,
    Ranked,
    algorithm_for,
    choose_2000,
    choose_2003,
    choose_sources,
)

P = CNSet.parse
M = P("X:1-10")


def cand(
    name: str,
    holds: str = "X:1-10",
    *,
    same_site: bool = True,
    cost: int | None = 0,
    version: str = "2003",
    down: bool = False,
    unavailable: bool = False,
    preferred: bool = False,
    last: int | None = None,
    transit: int | None = None,
) -> Candidate:
    return Candidate(
        name=name,
        same_site=same_site,
        cost=cost,
        version=version,
        down=down,
        unavailable=unavailable,
        preferred=preferred,
        holds=P(holds),
        last_backfill_request_at=last,
        mean_transit_us=transit,
    )


def order(ranked: list[Ranked]) -> list[str]:
    assert [r.rank for r in ranked] == list(range(1, len(ranked) + 1))
    return [r.candidate.name for r in ranked]


def chosen(ranked: list[Ranked]) -> dict[str, str]:
    return {r.candidate.name: r.assigned.text() for r in ranked if r.chosen}


# --------------------------------------------------------------------------------------------
# Exchange 2003 and later
# --------------------------------------------------------------------------------------------
# Each test pits a store that wins on the key under test against one that wins on every later
# key (and ties on every earlier one), so the key's place in the order is what decides.


@pytest.mark.parametrize("flag", ["down", "unavailable"])
def test_2003_down_or_unavailable_last(flag: str) -> None:
    bad = cand("A", preferred=True, cost=0, version="2010", **{flag: True})
    good = cand("Z", holds="X:1-4", same_site=False, cost=None, version="2003")
    ranked = choose_2003(M, [bad, good])
    assert order(ranked) == ["Z", "A"]
    assert chosen(ranked) == {"Z": "X:1-4", "A": "X:5-10"}


def test_2003_preferred_first() -> None:
    pref = cand("Z", holds="X:1-4", same_site=False, cost=None, version="2003", preferred=True)
    other = cand("A", cost=0, version="2010")
    ranked = choose_2003(M, [other, pref])
    assert order(ranked) == ["Z", "A"]
    assert chosen(ranked) == {"Z": "X:1-4", "A": "X:5-10"}


def test_2003_lowest_cost_first() -> None:
    near = cand("Z", holds="X:1-4", same_site=False, cost=5, version="2003")
    far = cand("A", same_site=False, cost=6, version="2010")
    ranked = choose_2003(M, [far, near])
    assert order(ranked) == ["Z", "A"]


def test_2003_same_site_is_cost_zero() -> None:
    same = cand("Z", holds="X:1-4", same_site=True, cost=0, version="2003")
    far = cand("A", same_site=False, cost=1, version="2010")
    assert order(choose_2003(M, [far, same])) == ["Z", "A"]


def test_2003_no_affinity_after_every_cost() -> None:
    costly = cand("Z", holds="X:1-4", same_site=False, cost=10_000, version="5.5")
    no_affinity = cand("A", same_site=False, cost=None, version="2010")
    assert order(choose_2003(M, [no_affinity, costly])) == ["Z", "A"]


def test_2003_newest_version_first() -> None:
    new = cand("Z", holds="X:1-4", version="2010")
    mid = cand("M", holds="X:1-9", version="2007")
    old = cand("A", version="2003")
    assert order(choose_2003(M, [old, mid, new])) == ["Z", "M", "A"]


def test_2003_most_cns_of_m_first() -> None:
    many = cand("Z", holds="X:1-10")
    few = cand("A", holds="X:1-9")
    ranked = choose_2003(M, [few, many])
    assert order(ranked) == ["Z", "A"]
    assert chosen(ranked) == {"Z": "X:1-10"}


def test_2003_name_is_the_final_tie_break() -> None:
    ranked = choose_2003(M, [cand("P3"), cand("P1"), cand("P2")])
    assert order(ranked) == ["P1", "P2", "P3"]
    assert chosen(ranked) == {"P1": "X:1-10"}


def test_2003_walk_asks_each_for_the_still_unrequested_part_it_holds() -> None:
    m = P("X:1-20;Y:1-3")
    a = cand("A", holds="X:1-10", cost=0)
    b = cand("B", holds="X:5-15", same_site=False, cost=1)
    c = cand("C", holds="X:12-20;Y:1-3", same_site=False, cost=2)
    d = cand("D", holds="X:1-5", same_site=False, cost=3)  # nothing left for it
    ranked = choose_2003(m, [d, c, b, a])
    assert order(ranked) == ["A", "B", "C", "D"]
    assert chosen(ranked) == {"A": "X:1-10", "B": "X:11-15", "C": "X:16-20;Y:1-3"}
    assert not ranked[3].chosen and not ranked[3].assigned
    assert all(r.group is None for r in ranked)


def test_2003_stops_when_nothing_is_left() -> None:
    ranked = choose_2003(M, [cand("A"), cand("B")])
    assert chosen(ranked) == {"A": "X:1-10"}
    assert not ranked[1].chosen


def test_stores_holding_none_of_m_are_not_candidates() -> None:
    for version in ("2003", "2000"):
        ranked = choose_sources(version, M, [cand("A", holds=""), cand("B", holds="X:3")])
        assert order(ranked) == ["B"]
        assert chosen(ranked) == {"B": "X:3"}


def test_no_candidates_no_sources() -> None:
    assert choose_sources("2003", M, []) == []
    assert choose_sources("2000", M, [cand("A", holds="")]) == []


# --------------------------------------------------------------------------------------------
# Exchange 2000 and earlier
# --------------------------------------------------------------------------------------------
def test_2000_searches_the_six_groups_in_order() -> None:
    given = [
        cand("G6", same_site=False, cost=None, transit=1, version="5.5"),
        cand("G5", same_site=False, cost=1, version="5.5"),
        cand("G4", same_site=True, cost=0, version="5.5"),
        cand("G3", same_site=False, cost=None, transit=1, version="2010"),
        cand("G2", same_site=False, cost=1, version="2000"),
        cand("G1", same_site=True, cost=0, version="2000"),
    ]
    ranked = choose_2000(M, given)
    assert order(ranked) == ["G1", "G2", "G3", "G4", "G5", "G6"]
    assert [r.group for r in ranked] == [1, 2, 3, 4, 5, 6]
    assert chosen(ranked) == {"G1": "X:1-10"}


@pytest.mark.parametrize(("version", "group"), [("2003", 1), ("5.5", 4)])
def test_2000_same_site_oldest_last_backfill_request_first_never_oldest(version: str, group: int) -> None:
    given = [
        cand("A", last=300, version=version),
        cand("B", last=100, version=version),
        cand("C", last=None, version=version),
        cand("D", last=200, version=version),
    ]
    ranked = choose_2000(M, given)
    assert order(ranked) == ["C", "B", "D", "A"]
    assert {r.group for r in ranked} == {group}
    assert chosen(ranked) == {"C": "X:1-10"}


@pytest.mark.parametrize(("version", "group"), [("2000", 2), ("5.5", 5)])
def test_2000_other_sites_with_a_cost_lowest_first(version: str, group: int) -> None:
    given = [
        cand("A", same_site=False, cost=30, version=version, last=None),
        cand("B", same_site=False, cost=10, version=version, last=5),
        cand("C", same_site=False, cost=20, version=version),
    ]
    ranked = choose_2000(M, given)
    assert order(ranked) == ["B", "C", "A"]
    assert {r.group for r in ranked} == {group}


@pytest.mark.parametrize(("version", "group"), [("2007", 3), ("5.5", 6)])
def test_2000_other_sites_no_cost_shortest_transit_first_unknown_last(version: str, group: int) -> None:
    given = [
        cand("A", same_site=False, cost=None, version=version, transit=None),
        cand("B", same_site=False, cost=None, version=version, transit=500),
        cand("C", same_site=False, cost=None, version=version, transit=100),
    ]
    ranked = choose_2000(M, given)
    assert order(ranked) == ["C", "B", "A"]
    assert {r.group for r in ranked} == {group}


def test_2000_first_store_holding_all_wins_over_earlier_partial_ones() -> None:
    given = [
        cand("G1", holds="X:1-9", same_site=True),  # earliest, holds most but not all
        cand("G3", holds="X:1-10", same_site=False, cost=None, transit=1),
        cand("G2", holds="X:1-10", same_site=False, cost=50),
    ]
    ranked = choose_2000(M, given)
    assert order(ranked) == ["G1", "G2", "G3"]
    assert chosen(ranked) == {"G2": "X:1-10"}


def test_2000_one_server_even_when_a_later_one_holds_more_of_other_origins() -> None:
    # the first holding all of M is taken; nothing else is asked
    m = P("X:1-10;Y:1-2")
    given = [cand("A", holds="X:1-10;Y:1-2"), cand("B", holds="X:1-10;Y:1-2", same_site=False, cost=1)]
    ranked = choose_2000(m, given)
    assert chosen(ranked) == {"A": "X:1-10;Y:1-2"}


def test_2000_none_holds_all_the_one_holding_most_asked_for_what_it_holds() -> None:
    given = [
        cand("G1", holds="X:1-3", same_site=True),
        cand("G2", holds="X:1-7", same_site=False, cost=5),
        cand("G4", holds="X:4-10", same_site=True, version="5.5"),  # 7 too, but later
        cand("G3", holds="X:2-6", same_site=False, cost=None),
    ]
    ranked = choose_2000(M, given)
    assert order(ranked) == ["G1", "G2", "G3", "G4"]
    assert chosen(ranked) == {"G2": "X:1-7"}


def test_2000_ignores_down_unavailable_and_preferred() -> None:
    given = [
        cand("A", down=True, unavailable=True),
        cand("B", preferred=True, same_site=False, cost=1, version="2010"),
    ]
    ranked = choose_2000(M, given)
    assert order(ranked) == ["A", "B"]
    assert chosen(ranked) == {"A": "X:1-10"}


def test_2000_ignores_down_unavailable_and_preferred_even_with_partial_holders() -> None:
    given = [
        cand("A", holds="X:1-6", down=True),
        cand("B", holds="X:1-6", preferred=True, same_site=False, cost=1),
    ]
    ranked = choose_2000(M, given)
    assert chosen(ranked) == {"A": "X:1-6"}


@pytest.mark.parametrize(
    ("version", "algorithm"),
    [("5.5", ALGO_2000), ("2000", ALGO_2000), ("2003", ALGO_2003), ("2007", ALGO_2003), ("2010", ALGO_2003)],
)
def test_algorithm_for_the_requester_version(version: str, algorithm: str) -> None:
    assert algorithm_for(version) == algorithm


def test_choose_sources_dispatches_on_the_requester_version() -> None:
    # 2003+: the down store sorts last; 2000: it is searched first
    given = [cand("A", down=True), cand("B", same_site=False, cost=1)]
    assert chosen(choose_sources("2003", M, given)) == {"B": "X:1-10"}
    assert chosen(choose_sources("2000", M, given)) == {"A": "X:1-10"}
    assert chosen(choose_sources("5.5", M, given)) == {"A": "X:1-10"}
