"""Whether a backfill entry is local: can its CNs be had from an up replica in the same site?"""

from __future__ import annotations

from collections.abc import Iterable

from pfscope.spark_jobs.model.cnset import CNSet, union_all


def is_local(remaining: CNSet, same_site_up_believed: Iterable[CNSet]) -> bool:
    """Local when every remaining CN is believed held by some store on the replica list, in the
    requester's site, that is up. The caller passes those stores' believed sets."""
    return remaining.issubset(union_all(same_site_up_believed))
