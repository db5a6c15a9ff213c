"""Choosing backfill sources: the Exchange 2003+ multi-source sort (seeds 000, 002) and the
Exchange 2000 one-server search (seed 001).

Both take the candidates (other replicas believed to hold some of the remaining set ``M``) with
every fact a sort key needs, and return the candidates in the order considered, each with its
rank, whether it was chosen and what it was asked for. The rows are the explanation an operator
reads; the chosen ones are the requests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pfscope.spark_jobs.model.cnset import EMPTY, CNSet
from pfscope.spark_jobs.model.topology import is_2000_or_later, is_2003_or_later, version_rank

ALGO_2003 = "2003+"
ALGO_2000 = "2000"


@dataclass(frozen=True, slots=True)
class Candidate:
    """One other replica at one request, with what the requester knows of it."""

    name: str
    same_site: bool
    cost: int | None  # transport cost from the requester's site; 0 in-site, None: no affinity
    version: str
    down: bool
    unavailable: bool
    preferred: bool
    holds: CNSet  # believed(R, F, T) ∩ M
    last_backfill_request_at: int | None  # when R last asked it (None: never)
    mean_transit_us: int | None  # mean transit of its messages to R (None: unknown)

    @property
    def holds_count(self) -> int:
        return self.holds.count()


@dataclass(frozen=True, slots=True)
class Ranked:
    candidate: Candidate
    rank: int  # 1-based position in the order considered
    group: int | None  # the Exchange 2000 search group (1-6); None for 2003+
    chosen: bool
    assigned: CNSet  # what it is asked for; empty when not chosen


def algorithm_for(requester_version: str) -> str:
    return ALGO_2003 if is_2003_or_later(requester_version) else ALGO_2000


def choose_sources(requester_version: str, missing: CNSet, candidates: Sequence[Candidate]) -> list[Ranked]:
    held = [c for c in candidates if c.holds]  # stores holding none of M are not candidates
    if algorithm_for(requester_version) == ALGO_2003:
        return choose_2003(missing, held)
    return choose_2000(missing, held)


def sort_key_2003(c: Candidate) -> tuple[bool, bool, bool, int, int, int, str]:
    """Status, preferred, cost (no affinity after every cost), newest version, most CNs, name."""
    no_affinity = c.cost is None
    return (
        c.down or c.unavailable,
        not c.preferred,
        no_affinity,
        c.cost if c.cost is not None else 0,
        -version_rank(c.version),
        -c.holds_count,
        c.name,
    )


def choose_2003(missing: CNSet, candidates: Sequence[Candidate]) -> list[Ranked]:
    """Walk the sorted list; each store is asked for what is still unrequested that it holds."""
    out: list[Ranked] = []
    unrequested = missing
    for rank, c in enumerate(sorted(candidates, key=sort_key_2003), start=1):
        part = c.holds.intersection(unrequested) if unrequested else EMPTY
        if part:
            unrequested = unrequested.difference(part)
        out.append(Ranked(c, rank, None, bool(part), part))
    return out


def group_2000(c: Candidate) -> int:
    """Search groups 1-3 for 2000+ stores (same site; other sites with a cost; no cost), 4-6 the
    same for 5.5 stores."""
    base = 0 if is_2000_or_later(c.version) else 3
    if c.same_site:
        return base + 1
    return base + (2 if c.cost is not None else 3)


def sort_key_2000(c: Candidate) -> tuple[object, ...]:
    g = group_2000(c)
    if g in (1, 4):  # oldest last backfill request first, never = oldest
        within: tuple[object, ...] = (
            c.last_backfill_request_at is not None,
            c.last_backfill_request_at or 0,
        )
    elif g in (2, 5):  # lowest cost first
        within = (c.cost,)
    else:  # shortest mean transit time first, unknown last
        within = (c.mean_transit_us is None, c.mean_transit_us or 0)
    return (g, *within, c.name)


def choose_2000(missing: CNSet, candidates: Sequence[Candidate]) -> list[Ranked]:
    """The first store in search order that holds all of M; else the one holding the most
    (ties: earlier in the order), asked for what it holds. Knows nothing of down, unavailable or
    preferred stores."""
    ordered = sorted(candidates, key=sort_key_2000)
    pick: int | None = None
    for i, c in enumerate(ordered):
        if missing.issubset(c.holds):
            pick = i
            break
    if pick is None and ordered:
        best = max(c.holds_count for c in ordered)
        pick = next(i for i, c in enumerate(ordered) if c.holds_count == best)
    out = []
    for i, c in enumerate(ordered):
        chosen = i == pick
        out.append(Ranked(c, i + 1, group_2000(c), chosen, c.holds if chosen else EMPTY))
    return out
