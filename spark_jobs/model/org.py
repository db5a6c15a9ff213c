"""The org-wide facts every fold may read: the topology and each store's up/down timeline.

Each folder's replica list travels inside its groups' event streams instead (a list change is an
event of every observer of that folder), because it triggers work; a store going down does not.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass, field

from pfscope.spark_jobs.model.events import Event
from pfscope.spark_jobs.model.topology import Topology

AFTER_ALL = 1 << 62  # a ``seq`` above every input position: "after the events stamped t"


@dataclass
class OrgContext:
    topology: Topology
    _status_keys: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    _status_vals: dict[str, list[bool]] = field(default_factory=dict)

    @classmethod
    def build(cls, topology: Topology, status_events: Iterable[Event]) -> OrgContext:
        org = cls(topology)
        for ev in sorted(status_events, key=lambda e: (e.ts, e.seq)):
            org.add_status(ev.store, ev.ts, ev.seq, ev.status == "down")
        return org

    def add_status(self, store: str, ts: int, seq: int, down: bool) -> None:
        """Append a status change; callers add them in (ts, seq) order."""
        self._status_keys.setdefault(store, []).append((ts, seq))
        self._status_vals.setdefault(store, []).append(down)

    def is_down(self, store: str, ts: int, seq: int = AFTER_ALL) -> bool:
        """Down as of the events before ``(ts, seq)``; stores start up."""
        keys = self._status_keys.get(store)
        if not keys:
            return False
        i = bisect.bisect_left(keys, (ts, seq))
        return self._status_vals[store][i - 1] if i else False

    def down_since(self, store: str, ts: int) -> int | None:
        """When the down period ``store`` is in after the events stamped ``ts`` began (its first
        ``down`` line since it was last up); None when it is up."""
        keys = self._status_keys.get(store)
        if not keys:
            return None
        vals = self._status_vals[store]
        i = bisect.bisect_left(keys, (ts, AFTER_ALL))
        since = None
        while i > 0 and vals[i - 1]:
            i -= 1
            since = keys[i][0]
        return since

    def next_up(self, store: str, ts: int) -> int | None:
        """When ``store``, down after the events stamped ``ts``, next comes up (a time after
        ``ts``); None if it stays down."""
        keys = self._status_keys.get(store)
        if not keys:
            return None
        vals = self._status_vals[store]
        for i in range(bisect.bisect_left(keys, (ts, AFTER_ALL)), len(keys)):
            if not vals[i]:
                return keys[i][0]
        return None

    def down_periods(self) -> list[tuple[str, int, int | None]]:
        """Every period a store was down, by store and time: ``(store, down_at, up_at)``, ``up_at``
        None while it is still down. A ``down`` while down, or an ``up`` while up, changes nothing."""
        periods: list[tuple[str, int, int | None]] = []
        for store in sorted(self._status_keys):
            since: int | None = None
            for (ts, _), down in zip(self._status_keys[store], self._status_vals[store], strict=True):
                if down and since is None:
                    since = ts
                elif not down and since is not None:
                    periods.append((store, since, ts))
                    since = None
            if since is not None:
                periods.append((store, since, None))
        return periods

    def status_timeline(self, store: str) -> list[tuple[int, bool]]:
        return [
            (k[0], d)
            for k, d in zip(self._status_keys.get(store, []), self._status_vals.get(store, []), strict=True)
        ]
