"""The responder list of a status request: up to three from six groups, plus the oldest copy."""

from __future__ import annotations

from pfscope.spark_jobs.model.rules.responders import ResponderCandidate, responder_list


def rc(
    name: str,
    *,
    same_site: bool = False,
    cost: int | None = None,
    backfilled_at: int | None = None,
    heard: bool = False,
    transit: int | None = None,
    count: int = 100,
    last_message_at: int | None = 1,
) -> ResponderCandidate:
    return ResponderCandidate(
        name=name,
        same_site=same_site,
        cost=cost,
        backfilled_at=backfilled_at,
        heard=heard,
        mean_transit_us=transit,
        believed_count=count,
        last_message_at=last_message_at,
    )


def listing(others: list[ResponderCandidate]) -> list[tuple[str, int, str]]:
    return [(r.name, r.position, r.group) for r in responder_list(others)]


def test_group_1_same_site_backfilled_longest_ago_first() -> None:
    others = [
        rc("S3", same_site=True, cost=0),  # same site, never backfilled: group 3
        rc("S1", same_site=True, cost=0, backfilled_at=200),
        rc("S2", same_site=True, cost=0, backfilled_at=100),
        rc("C1", cost=1, heard=True),  # group 2
    ]
    assert listing(others)[:3] == [("S2", 1, "1"), ("S1", 2, "1"), ("C1", 3, "2")]


def test_group_2_other_sites_costed_heard_lowest_cost_before_same_site_rest() -> None:
    others = [
        rc("S1", same_site=True, cost=0),  # group 3
        rc("C9", cost=9, heard=True),
        rc("C3", cost=3, heard=True),
        rc("C1", cost=1, heard=False),  # group 4
    ]
    assert listing(others)[:3] == [("C3", 1, "2"), ("C9", 2, "2"), ("S1", 3, "3")]


def test_group_3_same_site_rest_before_costed_not_heard() -> None:
    others = [
        rc("C1", cost=1),  # group 4
        rc("SB", same_site=True, cost=0),
        rc("SA", same_site=True, cost=0),
    ]
    assert listing(others)[:3] == [("SA", 1, "3"), ("SB", 2, "3"), ("C1", 3, "4")]


def test_group_4_costed_rest_lowest_cost_before_no_cost_with_transit() -> None:
    others = [
        rc("N1", transit=1),  # group 5
        rc("C7", cost=7),
        rc("C2", cost=2),
    ]
    assert listing(others)[:3] == [("C2", 1, "4"), ("C7", 2, "4"), ("N1", 3, "5")]


def test_group_5_no_cost_known_transit_shortest_first_before_unknown() -> None:
    others = [
        rc("NA"),  # no cost, unknown transit: group 6
        rc("N9", transit=900),
        rc("N3", transit=300),
    ]
    assert listing(others)[:3] == [("N3", 1, "5"), ("N9", 2, "5"), ("NA", 3, "6")]


def test_group_6_the_rest_by_name() -> None:
    others = [rc("Z"), rc("Y"), rc("X"), rc("W")]
    assert listing(others)[:3] == [("W", 1, "6"), ("X", 2, "6"), ("Y", 3, "6")]


def test_three_at_most_then_the_oldest_copy() -> None:
    others = [rc("A"), rc("B"), rc("C"), rc("D", count=5), rc("E", count=6)]
    assert listing(others) == [("A", 1, "6"), ("B", 2, "6"), ("C", 3, "6"), ("D", 4, "oldest")]


def test_oldest_not_added_when_already_listed() -> None:
    others = [rc("A", count=1), rc("B"), rc("C"), rc("D")]
    assert listing(others) == [("A", 1, "6"), ("B", 2, "6"), ("C", 3, "6")]


def test_oldest_ties_earliest_last_message_never_first_then_name() -> None:
    base = [rc("A"), rc("B"), rc("C")]
    # same count: the earliest last message wins
    assert listing([*base, rc("E", count=0, last_message_at=50), rc("D", count=0, last_message_at=70)])[
        3
    ] == ("E", 4, "oldest")
    # never heard from sorts before any time
    assert listing([*base, rc("E", count=0, last_message_at=50), rc("F", count=0, last_message_at=None)])[
        3
    ] == ("F", 4, "oldest")
    # then the name
    assert listing([*base, rc("G", count=0, last_message_at=None), rc("F", count=0, last_message_at=None)])[
        3
    ] == ("F", 4, "oldest")
    # fewer CNs beats an earlier last message
    assert listing([*base, rc("E", count=1, last_message_at=None), rc("D", count=0, last_message_at=99)])[
        3
    ] == ("D", 4, "oldest")


def test_fewer_than_three_replicas_all_of_them() -> None:
    others = [rc("B", count=7), rc("A", same_site=True, cost=0, count=9)]
    assert listing(others) == [("A", 1, "3"), ("B", 2, "6")]


def test_no_other_replica_empty_list() -> None:
    assert responder_list([]) == []


def test_ties_inside_a_group_by_name() -> None:
    others = [
        rc("S2", same_site=True, cost=0, backfilled_at=100),
        rc("S1", same_site=True, cost=0, backfilled_at=100),
        rc("C2", cost=5, heard=True),
        rc("C1", cost=5, heard=True),
    ]
    assert listing(others) == [("S1", 1, "1"), ("S2", 2, "1"), ("C1", 3, "2")]


def test_a_store_is_taken_once_in_its_first_group() -> None:
    # group 1 takes S; groups 3 and 6 do not repeat it
    others = [rc("S", same_site=True, cost=0, backfilled_at=1), rc("T", same_site=True, cost=0)]
    assert listing(others) == [("S", 1, "1"), ("T", 2, "3")]
