"""The record of how forecasts came true (the ``forecast_record`` table): every forecast the runs of
the last 7 days made, judged again by each run against what it knows happened since.

A run adds the previous run's forecast rows (made at that run's as-of) that differ from the ones
already on record for the replica (a replica whose forecast did not move between two runs is
one forecast, not one per run), drops the rows made more than 7 days before its own as-of, and
judges every row (``outcome``): the first time the replica held what it then lacked, against the
forecast's bound, and for a miss its cause.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pfscope.spark_jobs.model.cnset import CNSet
from pfscope.spark_jobs.model.forecast.outcome import (
    History,
    Period,
    actual_in_sync,
    back_at,
    came_true,
    due_by,
    first_change_after,
    miss_cause,
)
from pfscope.spark_jobs.model.timeutil import DAY

#: how far back the record keeps forecasts (by the time they were made)
RECORD_SPAN = 7 * DAY

#: a forecast's own columns the record keeps (to judge it again, and to show it)
FORECAST_COLUMNS = (
    "store",
    "fid",
    "lacks_cnset",
    "lacks_count",
    "in_sync_at",
    "latest_in_sync_at",
    "blocked_by",
    "waits_for",
    "after_back_s",
    "latest_after_back_s",
)
_SAME = ("store", "fid", "lacks_cnset", "in_sync_at", "latest_in_sync_at", "blocked_by")


@dataclass
class Happened:
    """What a later run knows of the time since the forecasts: each store's own rows of each
    folder (``owned[fid][store]``: ``(at, cnset)`` in time order, from ``state_history``), the
    stores' down periods (``store_periods``) and each folder's replica list (``folders``)."""

    owned: Mapping[str, Mapping[str, History]]
    periods: Sequence[Period] = ()
    members: Mapping[str, Sequence[str]] = field(default_factory=dict)

    @classmethod
    def from_rows(
        cls,
        self_rows: Iterable[Mapping[str, Any]],
        periods: Iterable[Mapping[str, Any]],
        folders: Iterable[Mapping[str, Any]],
    ) -> Happened:
        """From rows of ``state_history`` (the self rows: observer is subject), ``store_periods``
        and ``folders`` (times in microseconds)."""
        rows: dict[str, dict[str, list[tuple[int, str]]]] = {}
        for r in self_rows:
            rows.setdefault(r["fid"], {}).setdefault(r["observer"], []).append((r["at"], r["cnset"]))
        return cls(
            {fid: {store: History(h) for store, h in by_store.items()} for fid, by_store in rows.items()},
            [Period(p["store"], p["down_at"], p["up_at"]) for p in periods],
            {f["fid"]: list(f["replicas"] or ()) for f in folders},
        )


def carried(
    earlier: Iterable[Mapping[str, Any]],
    previous: Iterable[Mapping[str, Any]],
    made_at: int | None,
    as_of: int,
) -> list[dict[str, Any]]:
    """The forecasts on record for this run: ``earlier`` (the previous run's record) still within
    the span, and the previous run's ``forecast`` rows (made at ``made_at``) not on record yet."""
    rows = [dict(r) for r in earlier if r["made_at"] >= as_of - RECORD_SPAN]
    if made_at is not None and made_at >= as_of - RECORD_SPAN:
        latest: dict[tuple[str, str], dict[str, Any]] = {}
        for r in sorted(rows, key=lambda r: r["made_at"]):
            latest[(r["store"], r["fid"])] = r
        for f in previous:
            last = latest.get((f["store"], f["fid"]))
            if last is None or any(_same(last[k], f[k]) is False for k in _SAME):
                rows.append({"made_at": made_at, **{k: f.get(k) for k in FORECAST_COLUMNS}})
    return rows


def judged(rows: Iterable[Mapping[str, Any]], happened: Happened, as_of: int) -> list[dict[str, Any]]:
    """Every row of the record judged as of ``as_of``: ``back_at``, ``due_at`` (its bound),
    ``actual_in_sync_at``, ``outcome`` and ``cause`` (a miss's)."""
    changes: dict[tuple[str, int], int | None] = {}

    def changed(fid: str, made_at: int) -> int | None:
        if (fid, made_at) not in changes:
            changes[(fid, made_at)] = first_change_after(happened.owned.get(fid, {}), made_at)
        return changes[(fid, made_at)]

    out = []
    for row in rows:
        made_at = row["made_at"]
        mine = happened.owned.get(row["fid"], {})
        actual = actual_in_sync(CNSet.parse(row["lacks_cnset"]), mine.get(row["store"]), made_at)
        back = back_at(row.get("waits_for"), happened.periods, made_at)
        due = due_by(row, made_at, back)
        outcome = came_true(due, actual, as_of, made_at)
        cause = miss_cause(
            outcome,
            row,
            made_at,
            actual if actual is not None else as_of,
            happened.members.get(row["fid"], ()),
            happened.periods,
            changed(row["fid"], made_at),
        )
        out.append(
            {
                **row,
                "back_at": back,
                "due_at": due,
                "actual_in_sync_at": actual,
                "outcome": outcome,
                "cause": cause,
            }
        )
    return sorted(out, key=lambda r: (-r["made_at"], r["fid"], r["store"]))


def record_fids(rows: Iterable[Mapping[str, Any]]) -> set[str]:
    """The folders whose history the record needs."""
    return {r["fid"] for r in rows}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return list(a or ()) == list(b or ())
    return bool(a == b)
