"""What is so, beside what a store believes: really unique CNs, what a replica lacks (known and not
told yet) and the content at risk, from every store's owned set."""

from __future__ import annotations

from pfscope.spark_jobs.model.cnset import EMPTY, CNSet
from pfscope.spark_jobs.model.rules.reality import at_risk, lacks, not_told, really_unique

P = CNSet.parse


def test_really_unique_is_what_no_other_store_owns() -> None:
    assert really_unique(P("A:1-10"), [P("A:1-5"), P("A:7")]) == P("A:6,8-10")
    assert really_unique(P("A:1-10"), []) == P("A:1-10")  # the only replica holds all of it
    assert really_unique(P("A:1-3"), [P("A:1-3;B:1")]) == EMPTY


def test_lacks_is_the_lists_union_less_its_own() -> None:
    mine = P("A:1-5")
    assert lacks(mine, [mine, P("A:1-7;B:1-2")]) == P("A:6-7;B:1-2")
    assert lacks(mine, [mine]) == EMPTY


def test_not_told_is_what_it_lacks_without_an_entry() -> None:
    assert not_told(P("A:61,67-72"), P("A:61,67,71")) == P("A:68-70,72")
    assert not_told(P("A:1-3"), P("A:1-3")) == EMPTY


def test_content_at_risk_only_when_delete_pending_or_down() -> None:
    unique = P("A:119")
    assert at_risk(unique, delete_pending=False, store_down=False) == EMPTY
    assert at_risk(unique, delete_pending=True, store_down=False) == unique
    assert at_risk(unique, delete_pending=False, store_down=True) == unique
    assert at_risk(EMPTY, delete_pending=True, store_down=True) == EMPTY
