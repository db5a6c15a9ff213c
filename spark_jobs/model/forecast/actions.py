"""What a plan changes in the play forward ("A plan" in the replication model's forecast): the
actions at given times. A store goes down or comes back (maintenance, or a store that is down
brought back); a replica is added to or removed from a folder's list; a store is restored from a
backup; a store is decommissioned (removed from every list, then down: the planner expands it,
``forecast.planner``).

A plan's play is the forecast's own (``forecast_folder``), with its actions scheduled in the
engine at their times: a plan of no actions is the baseline forecast.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from pfscope.spark_jobs.model.cnset import EMPTY, CNSet


@dataclass(frozen=True)
class StoreStatus:
    """``store`` goes down (``up`` False) or comes back (``up`` True) at ``at`` (microseconds):
    while down it processes nothing and mail for it waits in its queue (48 h, then expires)."""

    at: int
    store: str
    up: bool


@dataclass(frozen=True)
class ReplicaChange:
    """``store`` is added to (``added``) or removed from folder ``fid``'s replica list at ``at``: an
    added replica asks for the folder's status and backfills it all; a removed one follows
    "Deleting a replica" (it sends what only it holds, then is deleted)."""

    at: int
    store: str
    fid: str
    added: bool


@dataclass(frozen=True)
class Backup:
    """One folder of a backup: what the store owned, and what its state table said each other store
    held, when the backup was taken (``state_history`` at that time)."""

    owned: CNSet = EMPTY
    believed: Mapping[str, CNSet] = field(default_factory=dict)


@dataclass(frozen=True)
class Restore:
    """``store`` is restored at ``at`` from a backup taken at ``taken_at``: each folder's owned set
    and state table go back to ``backups[fid]`` (a folder it did not hold then: empty), and it asks
    every folder's status, as Exchange does right after a restore."""

    at: int
    store: str
    taken_at: int
    backups: Mapping[str, Backup] = field(default_factory=dict)

    def backup(self, fid: str) -> Backup:
        return self.backups.get(fid, Backup())


@dataclass(frozen=True)
class Decommission:
    """``store`` leaves for good at ``at``: removed from every list it is on, then down once nothing
    of it is at risk (``at_once``: down at ``at``)."""

    at: int
    store: str
    at_once: bool = False


Action = StoreStatus | ReplicaChange | Restore | Decommission

#: actions at the same time, in this order: lists first, then restores, then status changes
_ORDER = {ReplicaChange: 0, Restore: 1, Decommission: 2, StoreStatus: 3}


def in_order(actions: Iterable[Action]) -> list[Action]:
    """The actions in the order the play takes them: by time, then kind, then store, then folder."""
    return sorted(actions, key=lambda a: (a.at, _ORDER[type(a)], a.store, getattr(a, "fid", "")))


class ByFolder:
    """What of a plan each folder's play takes: its own list changes, and each restore with that
    folder's backup alone (a plan over thousands of folders hands each play a small plan),
    indexed once for the whole plan."""

    def __init__(self, actions: Iterable[Action]):
        self.common: list[Action] = []
        self.lists: dict[str, list[Action]] = {}
        for a in actions:
            if isinstance(a, ReplicaChange):
                self.lists.setdefault(a.fid, []).append(a)
            else:
                self.common.append(a)

    def of(self, fid: str) -> list[Action]:
        mine = [
            replace(a, backups={fid: a.backup(fid)}) if isinstance(a, Restore) else a for a in self.common
        ]
        return mine + self.lists.get(fid, [])


def down_for_maintenance(store: str, start: int, until: int | None) -> list[Action]:
    """A store down from ``start`` until ``until`` (None: for good)."""
    if until is not None and until <= start:
        raise ValueError(f"{store}'s maintenance must end after it starts")
    out: list[Action] = [StoreStatus(start, store, False)]
    if until is not None:
        out.append(StoreStatus(until, store, True))
    return out


def whole_stores(actions: Iterable[Action]) -> set[str]:
    """The stores a plan acts on as a whole (down, up, restored, decommissioned): every folder
    they hold is touched, where a list change touches its own folder only."""
    return {a.store for a in actions if not isinstance(a, ReplicaChange)}
