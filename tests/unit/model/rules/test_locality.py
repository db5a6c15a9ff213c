"""Locality: local only when every remaining CN is covered by the union of the believed sets of
the same-site up replicas (the caller passes exactly those)."""

from __future__ import annotations

from pfscope.spark_jobs.model.cnset import CNSet
from pfscope.spark_jobs.model.rules.locality import is_local

P = CNSet.parse


def test_covered_by_the_union_of_several_stores_is_local() -> None:
    # neither store alone holds everything; together they do
    assert is_local(P("P1:1-10;P2:1-5"), [P("P1:1-10"), P("P2:1-5;P3:1")])


def test_one_cn_not_covered_is_remote() -> None:
    assert not is_local(P("P1:1-11"), [P("P1:1-5"), P("P1:6-10")])


def test_no_same_site_up_replica_is_remote() -> None:
    assert not is_local(P("P1:1"), [])


def test_single_store_holding_all_is_local() -> None:
    assert is_local(P("P1:3-4;P2:7"), [P("P1:1-10;P2:1-20")])
