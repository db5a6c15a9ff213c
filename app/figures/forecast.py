"""The forecast in words (the published ``forecast`` table: the model's rules played forward from
the as-of): when a replica will hold what it lacks, the bound to plan with, or what blocks it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from pfscope.app.figures.outages import short_time
from pfscope.spark_jobs.model.forecast.folder import stores_are
from pfscope.spark_jobs.model.forecast.outcome import (
    CAUGHT_UP,
    LATE,
    NOT_YET,
    STILL_LACKING,
    WITHIN,
    cause_kind,
)

#: what the forecast assumes, said once wherever a forecast is shown (the glossary says more)
ASSUMES = (
    "the model's rules played forward from the as-of, assuming no new changes, no replica-list "
    "changes, no store going down or coming back, and each pair's median transit"
)
#: what the bound (``latest_in_sync_at``) assumes besides: the common failure, and slow mail
BOUND_ASSUMES = (
    "the first reply to each entry's request lost (the entry's next request, at its time-out, goes "
    "where the rules then send it), every message taking its pair's longest transit, and mail on its "
    "way at the as-of that is already older than that, to a store that is up, lost"
)


def _when(value: Any) -> str | None:
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    return short_time(value)


def forecast_text(row: Mapping[str, Any] | None) -> str:
    """``forecast: in sync by ~Fri 11-06 14:05 via PFS1, Sat 11-07 02:10 at the latest if a reply is
    lost`` or ``forecast: will not catch up within 14 days: only PFJNB02 holds …``; empty without a
    row (the replica lacks nothing, or the run has no forecast)."""
    if row is None:
        return ""
    at, latest = _when(row.get("in_sync_at")), _when(row.get("latest_in_sync_at"))
    if at is None:
        blocked = row.get("blocked_by")
        why = f": {blocked}" if isinstance(blocked, str) and blocked else ""
        waits = waits_of(row)
        back = row.get("after_back_s")
        if waits and back is not None and not pd.isna(back):
            who, verb = stores_are(waits)
            return f"forecast: not in sync until {who} {verb} back{why}"
        return f"forecast: will not catch up within 14 days{why}"
    raw_sources = row.get("sources")
    sources = [str(s) for s in raw_sources] if raw_sources is not None and len(raw_sources) else []
    via = f" via {', '.join(sources)}" if sources else ""
    if latest is None:
        bound = ", and not within 14 days if a reply is lost"
    elif latest == at:
        bound = " (a lost reply would not delay it)"
    else:
        bound = f", {latest} at the latest if a reply is lost"
    return f"forecast: in sync by ~{at}{via}{bound}"


def waits_of(row: Mapping[str, Any]) -> list[str]:
    """The stores down at the as-of whose return a replica waits for (``waits_for``; a Parquet
    list reads as an array, null as None or NaN)."""
    value = row.get("waits_for")
    if value is None or isinstance(value, float):
        return []
    return [str(v) for v in value]


def forecast_by_store(forecast: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """A folder's forecast rows by store."""
    return {str(r["store"]): r for r in forecast.to_dict("records")} if not forecast.empty else {}


def record_text(record: pd.DataFrame) -> str:
    """``forecasts of the last 7 days: 46 of 50 within their bounds (3 not yet due); the 4 that
    missed: a store went down (3), slower than its bound (1)``: how far to trust the forecast, from
    the run's ``forecast_record``."""
    if record.empty:
        return (
            "forecasts of the last 7 days: none judged yet (the record starts with the run after the first)"
        )
    outcomes = record["outcome"].value_counts()
    within = int(outcomes.get(WITHIN, 0) + outcomes.get(STILL_LACKING, 0))
    missed = record[record["outcome"].isin([LATE, CAUGHT_UP])]
    judged = within + len(missed)
    waiting = int(outcomes.get(NOT_YET, 0))
    text = f"forecasts of the last 7 days: {within} of {judged} within their bounds"
    if waiting:
        text += f" ({waiting} not yet due)"
    if len(missed):
        kinds = missed["cause"].dropna().map(cause_kind).value_counts()
        why = ", ".join(f"{kind} ({n})" for kind, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))
        text += f"; the {len(missed)} that missed: {why}"
    return text


def replica_record(record: pd.DataFrame, store: str, fid: str) -> list[dict[str, str]]:
    """One replica's earlier forecasts on record, newest first, as lines of a table: when made,
    what it said (in sync by, at the latest), when it really was, and how it came true."""
    if record.empty:
        return []
    mine = record[(record["store"] == store) & (record["fid"] == fid)].sort_values("made_at", ascending=False)
    out = []
    for r in mine.to_dict("records"):
        said = _when(r.get("in_sync_at"))
        cause = r.get("cause")
        out.append(
            {
                "made": _when(r.get("made_at")) or "",
                "said": f"~{said}" if said else "not within 14 days",
                "due": _when(r.get("due_at")) or "none",
                "actual": _when(r.get("actual_in_sync_at")) or "not yet",
                "outcome": str(r.get("outcome") or "")
                + (f": {cause}" if isinstance(cause, str) and cause else ""),
            }
        )
    return out
