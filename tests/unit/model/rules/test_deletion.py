"""Unique CNs: owned minus the union of the believed sets of the stores still on the list."""

from __future__ import annotations

from pfscope.spark_jobs.model.cnset import CNSet
from pfscope.spark_jobs.model.rules.deletion import unique_cns

P = CNSet.parse


def test_unique_is_owned_minus_the_union_of_others() -> None:
    owned = P("P1:1-10;P2:1-5")
    assert unique_cns(owned, [P("P1:1-4"), P("P1:6-8;P2:1-5")]) == P("P1:5,9-10")


def test_nothing_unique_when_others_together_hold_everything() -> None:
    assert not unique_cns(P("P1:1-10"), [P("P1:1-5"), P("P1:6-10;P3:1")])


def test_everything_unique_when_no_one_else_is_on_the_list() -> None:
    assert unique_cns(P("P1:1-3"), []) == P("P1:1-3")


def test_nothing_owned_nothing_unique() -> None:
    assert not unique_cns(P(""), [P("P1:1")])
