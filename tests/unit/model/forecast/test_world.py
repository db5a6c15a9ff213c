"""The forecast's typical transits: the pair's median, else the same-cost pairs', else all pairs'."""

from __future__ import annotations

from pfscope.spark_jobs.model.forecast.world import Transits, TypicalMail
from pfscope.spark_jobs.model.rules.transit import NO_TRANSIT_SEEN
from pfscope.spark_jobs.model.timeutil import MINUTE
from tests.logbuilder import topology

TOPO = topology(
    {"A1": ("A", "2003"), "A2": ("A", "2003"), "B1": ("B", "2003"), "C1": ("C", "2003")},
    folders={},
    costs={("A", "B"): 10},
)


def test_a_pair_seen_takes_its_own_median() -> None:
    t = Transits.from_rows(
        [{"sender": "A1", "recipient": "A2", "median_transit_s": 90.0, "longest_transit_s": 95.0}]
    )
    assert t.typical(TOPO, "A1", "A2") == 90 * 1_000_000


def test_a_pair_never_seen_takes_the_pairs_at_its_cost_then_all_pairs_then_an_hour() -> None:
    t = Transits(
        {
            ("A1", "A2"): 2 * MINUTE,
            ("A2", "A1"): 4 * MINUTE,
            ("A1", "B1"): 20 * MINUTE,
            ("B1", "A2"): 30 * MINUTE,
        }
    )
    assert t.typical(TOPO, "A2", "A2") == 2 * MINUTE  # same site (cost 0): lower median of 2 and 4
    assert t.typical(TOPO, "A2", "B1") == 20 * MINUTE  # cost 10: lower median of 20 and 30
    assert t.typical(TOPO, "A1", "C1") == 4 * MINUTE  # no affinity, no such pair: all four pairs
    assert Transits({}).typical(TOPO, "A1", "A2") == NO_TRANSIT_SEEN
    assert TypicalMail(TOPO, t).transit("A1", "A2") == 2 * MINUTE and not TypicalMail(TOPO, t).lost(
        0, "A1", "A2"
    )


def test_the_bound_takes_each_pairs_longest_transit() -> None:
    t = Transits.from_rows(
        [{"sender": "A1", "recipient": "A2", "median_transit_s": 60.0, "longest_transit_s": 600.0}]
    )
    assert t.typical(TOPO, "A1", "A2") == 60 * 1_000_000
    assert t.typical(TOPO, "A1", "A2", longest=True) == 600 * 1_000_000
    assert t.typical(TOPO, "A2", "A1", longest=True) == 600 * 1_000_000  # same cost: that pair's longest
    assert TypicalMail(TOPO, t, longest=True).transit("A1", "A2") == 600 * 1_000_000
    assert t.as_payload() == [("A1", "A2", 60 * 1_000_000, 600 * 1_000_000)]


def test_used_says_which_rule_gave_each_pairs_transit() -> None:
    """What the forecast's explanation shows: the value ``typical`` takes and the rule behind it,
    for the median and the longest; ``fallback_transit`` is the one statement of the fallback."""
    from pfscope.spark_jobs.model.forecast.world import (
        ALL_PAIRS,
        NONE_SEEN,
        OWN,
        SAME_COST,
        fallback_transit,
    )

    t = Transits(
        {("A1", "A2"): 2 * MINUTE, ("A2", "A1"): 4 * MINUTE, ("A1", "B1"): 20 * MINUTE},
        {("A1", "A2"): 3 * MINUTE, ("A2", "A1"): 9 * MINUTE, ("A1", "B1"): 25 * MINUTE},
    )
    assert t.used(TOPO, "A1", "A2") == (2 * MINUTE, OWN)
    assert t.used(TOPO, "A1", "A2", longest=True) == (3 * MINUTE, OWN)
    assert t.used(TOPO, "A2", "A2") == (2 * MINUTE, SAME_COST)
    assert t.used(TOPO, "A2", "A2", longest=True) == (3 * MINUTE, SAME_COST)
    assert t.used(TOPO, "B1", "A1") == (20 * MINUTE, SAME_COST)  # cost 10 both ways
    assert t.used(TOPO, "A1", "C1") == (4 * MINUTE, ALL_PAIRS)
    for pair in (("A1", "A2"), ("A2", "A2"), ("B1", "A1"), ("A1", "C1")):
        for longest in (False, True):
            assert t.used(TOPO, *pair, longest=longest)[0] == t.typical(TOPO, *pair, longest=longest)
    assert Transits({}).used(TOPO, "A1", "A2") == (NO_TRANSIT_SEEN, NONE_SEEN)
    assert fallback_transit({("A1", "B1"): -5}, TOPO.cost, 10) == (0, SAME_COST)  # never below zero
