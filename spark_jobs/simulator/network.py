"""The simulator's mail: delays by site cost, random losses and loss windows (the engine's
``Mail``; the forecast brings its own, without chance)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from pfscope.spark_jobs.model.timeutil import SECOND
from pfscope.spark_jobs.model.topology import Topology


@dataclass
class Network:
    """Mail delays and losses: minutes in a site, more across sites by cost."""

    rng: random.Random
    topo: Topology
    loss_rate: float = 0.0
    loss_windows: list[tuple[int, int, str | None, str | None]] = field(default_factory=list)

    def transit(self, src: str, dst: str) -> int:
        a, b = self.topo.stores[src].site, self.topo.stores[dst].site
        cost = self.topo.site_cost(a, b)
        if cost == 0:
            base = self.rng.uniform(0.5, 3.0)
        elif cost is None:
            base = self.rng.uniform(30.0, 90.0)  # no affinity: routed the long way
        else:
            base = self.rng.uniform(2.0, 6.0) + cost * self.rng.uniform(0.5, 1.5)
        return int(base * 60) * SECOND

    def lost(self, t: int, src: str, dst: str) -> bool:
        src_site, dst_site = self.topo.stores[src].site, self.topo.stores[dst].site
        for start, end, site_from, site_to in self.loss_windows:
            if start <= t < end and site_from in (None, src_site) and site_to in (None, dst_site):
                return True
        return self.loss_rate > 0 and self.rng.random() < self.loss_rate
