"""What is so, beside what a store believes (replication-model.md, "What a store believes, and
what is so").

Every row of a state table is one store's belief, built from the messages it processed; Exchange
acts on beliefs, so the fold keeps them. pfscope reads every store's log, so it also knows what
each store really holds at the as-of: ``owned(T, F)`` for every ``T``. These rules answer the
operator's questions about risk and recovery from that; the beliefs stay the fold's
(``deletion.unique_cns``, the backfill entries).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pfscope.spark_jobs.model.cnset import EMPTY, CNSet, union_all


def really_unique(owned: CNSet, owned_by_the_others: Iterable[CNSet]) -> CNSet:
    """The CNs that would be gone if this copy were lost now: what it owns that no other store on
    the folder's list owns (for a delete-pending replica: no store still on the list)."""
    return owned.difference(union_all(owned_by_the_others))


def lacks(owned: CNSet, owned_on_the_list: Iterable[CNSet]) -> CNSet:
    """What a replica on the list does not hold of what the stores on the list hold."""
    return union_all(owned_on_the_list).difference(owned)


def not_told(lacking: CNSet, known_missing: CNSet) -> CNSet:
    """The part of what a replica lacks that it does not know it lacks (no backfill entry for it
    yet): it arrives, or the replica learns of it, with the next message from a store holding it."""
    return lacking.difference(known_missing)


def at_risk(really_unique_cns: CNSet, *, delete_pending: bool, store_down: bool) -> CNSet:
    """Content at risk: the really unique CNs of a delete-pending replica (gone when it is deleted)
    or of a replica on a store that is down (out of reach until it is back, gone if it never is).
    A CN only believed unique is not at risk."""
    return really_unique_cns if delete_pending or store_down else EMPTY


def replica_reality(
    store: str, mine: CNSet, owned_on_the_list: Mapping[str, CNSet], on_list: bool, known_missing: CNSet
) -> dict[str, Any]:
    """A replica's row of what is so (``replicas`` columns): its really unique CNs, what it lacks
    and the part it has not been told of, from ``mine`` (its owned set; empty once deleted) and the
    owned sets of the stores on the folder's list. The replay and the dashboard's replayed steps
    both call it."""
    unique = really_unique(mine, (cns for s, cns in owned_on_the_list.items() if s != store))
    lacking = lacks(mine, owned_on_the_list.values()) if on_list else EMPTY
    untold = not_told(lacking, known_missing)
    return {
        "really_unique_cnset": unique.text(),
        "really_unique_count": unique.count(),
        "lacks_cnset": lacking.text(),
        "lacks_count": lacking.count(),
        "not_told_cnset": untold.text(),
        "not_told_count": untold.count(),
    }
