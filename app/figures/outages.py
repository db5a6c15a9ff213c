"""What happened: the periods each store was down (``store_periods``), in words and as rows.

A store's status says only how it is at the as-of; an operator asking "what happened this
week?" needs the outages that are over too, long after the store came back.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from pfscope.app.figures.text import fmt_age, fmt_time

OUTAGE_COLUMNS = ["store", "down_at", "up_at", "down_for_s", "still_down", "from", "to", "down_for", "text"]


def utc_time(value: Any) -> pd.Timestamp | None:
    """A published time as a UTC timestamp; None for a null (None, NaT)."""
    if value is None:
        return None
    ts = pd.Timestamp(value)
    if pd.isna(ts):
        return None
    return ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")


def short_time(value: Any) -> str:
    """``Tue 11-03 06:00``: a time within a run's span, as an operator says it (UTC)."""
    ts = utc_time(value)
    return "" if ts is None else ts.strftime("%a %m-%d %H:%M")


def span_text(start: Any, end: Any) -> str:
    """``Tue 11-03 06:00 to Thu 11-05 08:00``; ``Sun 11-08 00:15 to 05:46`` within a day; one time
    when both are the same minute (UTC)."""
    a, b = utc_time(start), utc_time(end)
    if a is None:
        return ""
    if b is None or short_time(a) == short_time(b):
        return short_time(a)
    return f"{short_time(a)} to {b.strftime('%H:%M') if a.date() == b.date() else short_time(b)}"


def outage_duration(seconds: float | None) -> str:
    """An outage's length in hours, as operators count them: ``50 h``, ``2 h 30 min``, ``40 min``."""
    if seconds is None or pd.isna(seconds):
        return ""
    s = int(seconds)
    if s < 3600:
        return fmt_age(s)
    h, rem = divmod(s, 3600)
    m = rem // 60
    return f"{h} h" + (f" {m} min" if m else "")


def outage_text(down_at: Any, up_at: Any, as_of: Any) -> str:
    """``down 50 h, Tue 11-03 06:00 to Thu 11-05 08:00 (UTC)``, or for a store still down at the
    as-of ``down since Sat 11-07 00:00 (UTC), still down at the as-of (47 h 59 min)``."""
    start, end, ref = utc_time(down_at), utc_time(up_at), utc_time(as_of)
    if start is None:
        return ""
    if end is None:
        took = (
            f" ({outage_duration((ref - start).total_seconds())})" if ref is not None and ref >= start else ""
        )
        return f"down since {short_time(start)} (UTC), still down at the as-of{took}"
    return f"down {outage_duration((end - start).total_seconds())}, {short_time(start)} to {short_time(end)} (UTC)"


def outage_rows(periods: pd.DataFrame, as_of: Any) -> pd.DataFrame:
    """Every down period, newest first: store, times, length (to the as-of for a store still down)
    and the line :func:`outage_text` says."""
    if periods.empty:
        return pd.DataFrame(columns=OUTAGE_COLUMNS)
    ref = utc_time(as_of)
    rows = []
    for r in periods.to_dict("records"):
        start, end = utc_time(r.get("down_at")), utc_time(r.get("up_at"))
        if start is None:
            continue
        stop = end if end is not None else ref
        seconds = (stop - start).total_seconds() if stop is not None and stop >= start else None
        rows.append(
            {
                "store": str(r["store"]),
                "down_at": start,
                "up_at": end,
                "down_for_s": seconds,
                "still_down": end is None,
                "from": fmt_time(start),
                "to": fmt_time(end) if end is not None else "still down",
                "down_for": outage_duration(seconds)
                + (" so far" if end is None and seconds is not None else ""),
                "text": outage_text(start, end, ref),
            }
        )
    if not rows:
        return pd.DataFrame(columns=OUTAGE_COLUMNS)
    out = pd.DataFrame(rows, columns=OUTAGE_COLUMNS)
    return out.sort_values(["down_at", "store"], ascending=[False, True], kind="stable").reset_index(
        drop=True
    )
