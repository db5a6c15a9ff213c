"""What the forecast assumes of the world ("The forecast: the rules played forward"): no client
changes, no list changes, no store changes status; mail between two stores takes the pair's
typical transit; queued mail expires as Exchange's does; the play looks 14 days ahead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pfscope.spark_jobs.model.rules.transit import NO_TRANSIT_SEEN, median_transit
from pfscope.spark_jobs.model.timeutil import DAY, US
from pfscope.spark_jobs.model.topology import Topology

#: how far the forecast plays: a replica not in sync by then is reported as not in sync
HORIZON = 14 * DAY


#: where a pair's typical transit comes from: its own messages, else the pairs at its site cost,
#: else all pairs, else an hour (the log has no transit at all)
OWN, SAME_COST, ALL_PAIRS, NONE_SEEN = "own", "same cost", "all pairs", "none seen"
RULES = (OWN, SAME_COST, ALL_PAIRS, NONE_SEEN)


def fallback_transit(
    table: Mapping[tuple[str, str], int], cost_of: Callable[[str, str], int | None], cost: int | None
) -> tuple[int, str]:
    """The transit of a pair with none of its own, at site cost ``cost`` (None: no affinity): the
    lower median of the pairs of ``table`` at that cost (``cost_of``), else of all pairs, else
    :data:`NO_TRANSIT_SEEN`; with the rule that gave it. The one statement of the rule: the play
    and the dashboard's explanation of a forecast both call it."""
    alike = [v for (s, r), v in sorted(table.items()) if cost_of(s, r) == cost]
    if alike:
        return max(median_transit(alike), 0), SAME_COST
    if table:
        return max(median_transit(sorted(table.values())), 0), ALL_PAIRS
    return NO_TRANSIT_SEEN, NONE_SEEN


@dataclass
class Transits:
    """Each pair's typical transit (microseconds): the median of the transits of the messages the
    recipient processed from the sender (``longest``: the longest, for the bound); for a pair with
    none, the lower median of those of the pairs at the same site cost, or of all pairs, or an hour
    when the log has no transit at all."""

    medians: Mapping[tuple[str, str], int]
    longest: Mapping[tuple[str, str], int] = field(default_factory=dict)
    _by_cost: dict[tuple[bool, int | None], tuple[int, str]] = field(default_factory=dict, repr=False)

    @classmethod
    def from_rows(cls, rows: Iterable[Mapping[str, Any]]) -> Transits:
        """From the published ``transits`` rows (seconds, as the job and the replay write them)."""
        rows = list(rows)
        return cls(
            {(r["sender"], r["recipient"]): round(r["median_transit_s"] * US) for r in rows},
            {(r["sender"], r["recipient"]): round(r["longest_transit_s"] * US) for r in rows},
        )

    def as_payload(self) -> list[tuple[str, str, int, int]]:
        return [(s, r, m, self.longest.get((s, r), m)) for (s, r), m in sorted(self.medians.items())]

    def typical(self, topo: Topology, sender: str, recipient: str, *, longest: bool = False) -> int:
        table = self.longest if longest else self.medians
        known = table.get((sender, recipient))
        if known is not None:
            return max(known, 0)
        return self._fallback(topo, topo.cost(sender, recipient), longest)[0]

    def used(self, topo: Topology, sender: str, recipient: str, *, longest: bool = False) -> tuple[int, str]:
        """What :meth:`typical` takes for the pair, and by which rule (one of :data:`RULES`): the
        forecast's explanation says where each transit it used came from."""
        known = (self.longest if longest else self.medians).get((sender, recipient))
        if known is not None:
            return max(known, 0), OWN
        return self._fallback(topo, topo.cost(sender, recipient), longest)

    def _fallback(self, topo: Topology, cost: int | None, longest: bool) -> tuple[int, str]:
        if (longest, cost) not in self._by_cost:
            table = self.longest if longest else self.medians
            self._by_cost[(longest, cost)] = fallback_transit(table, topo.cost, cost)
        return self._by_cost[(longest, cost)]


@dataclass
class TypicalMail:
    """The engine's ``Mail`` of the forecast: every message takes its pair's median transit (the
    bound: its longest); none is lost on the way (the bound's lost replies are dropped by the play
    itself)."""

    topo: Topology
    transits: Transits
    longest: bool = False  # the bound's: each pair's longest transit

    def transit(self, src: str, dst: str) -> int:
        return self.transits.typical(self.topo, src, dst, longest=self.longest)

    def lost(self, t: int, src: str, dst: str) -> bool:
        return False
