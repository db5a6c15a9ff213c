"""What a plan changes in the play forward ("A plan" in the replication model's forecast): the
actions at given times. The first: a store going down or coming back (maintenance, or a store
that is down brought back); replica-list changes, decommissioning and restores follow.

A plan's play is the forecast's own (``forecast_folder``), with its actions scheduled in the
engine at their times: a plan of no actions is the baseline forecast.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class StoreStatus:
    """``store`` goes down (``up`` False) or comes back (``up`` True) at ``at`` (microseconds):
    while down it processes nothing and mail for it waits in its queue (48 h, then expires)."""

    at: int
    store: str
    up: bool


Action = StoreStatus


def down_for_maintenance(store: str, start: int, until: int | None) -> list[Action]:
    """A store down from ``start`` until ``until`` (None: for good)."""
    if until is not None and until <= start:
        raise ValueError(f"{store}'s maintenance must end after it starts")
    out: list[Action] = [StoreStatus(start, store, False)]
    if until is not None:
        out.append(StoreStatus(until, store, True))
    return out
