"""Data as an operator reads it: times, durations, counts, flags, folder names and health in words."""

from __future__ import annotations

from typing import Any

import pandas as pd

from pfscope.spark_jobs.model.timeutil import format_ts
from pfscope.spark_jobs.model.topology import HIERARCHY_FID

HIERARCHY_NAME = "public folder hierarchy"


def fmt_time(value: Any) -> str:
    """A UTC time as ``2026-11-02 08:15:00Z``; empty for a missing one."""
    if value is None or (isinstance(value, float) and pd.isna(value)) or value is pd.NaT:
        return ""
    ts = pd.Timestamp(value)
    if pd.isna(ts):
        return ""
    if ts.tzinfo is None:
        ts = ts.tz_localize("UTC")
    return ts.tz_convert("UTC").strftime("%Y-%m-%d %H:%M:%SZ")


def ts_text(value: Any) -> str:
    """A time as a URL's ``?at=`` and a report's ``--at`` write it (RFC 3339, UTC)."""
    return format_ts(int(pd.Timestamp(value).value // 1000))


def esc(value: Any) -> str:
    """Text from data for plotly's hover and labels, which read tags and entities: ``<b>`` stays text."""
    import html

    return html.escape("" if value is None else str(value), quote=False)


def plural(n: Any, singular: str, many: str | None = None) -> str:
    """``1 CN``, ``2 CNs``, ``1,234 duplicates``: a count with its noun agreeing."""
    count = int(n or 0) if not (isinstance(n, float) and pd.isna(n)) else 0
    word = singular if count == 1 else (many or singular + "s")
    return f"{count:,} {word}"


def yes_no(value: Any) -> str:
    """A flag as an operator reads it; empty for a missing one (never ``false``/``NaN``)."""
    if value is None or (pd.api.types.is_scalar(value) and pd.isna(value)):
        return ""
    return "yes" if bool(value) else "no"


def folder_label(fid: Any, path: Any) -> str:
    """A folder's path, or what the folder is when it has none (the hierarchy ``1-1``)."""
    if isinstance(path, str) and path:
        return path
    return HIERARCHY_NAME if str(fid) == HIERARCHY_FID else ""


def natural_key(value: Any) -> tuple[Any, ...]:
    """Sort key that reads numbers as numbers: ``PFS1/1-2/2`` before ``PFS1/1-2/10``."""
    import re

    parts = re.split(r"(\d+)", "" if value is None else str(value))
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts if p != "")


def fmt_age(seconds: float | None) -> str:
    """A duration the way an operator reads it: ``3 d 4 h``, ``2 h 5 min``, ``40 s``."""
    if seconds is None or pd.isna(seconds):
        return ""
    s = int(abs(seconds))
    sign = "-" if seconds < 0 else ""
    d, rem = divmod(s, 86_400)
    h, rem = divmod(rem, 3600)
    m, sec = divmod(rem, 60)
    if d:
        return f"{sign}{d} d {h} h"
    if h:
        return f"{sign}{h} h {m} min"
    if m:
        return f"{sign}{m} min"
    return f"{sign}{sec} s"


def health_text(health: Any, store_down: bool = False) -> str:
    """A replica's health in words; on a down store, marked as the last known state."""
    h = str(health or "").replace("_", " ")
    if store_down and str(health) not in ("deleted", "delete_pending"):
        return f"{h} (store down)"
    return h


def down_text(down_since: Any, as_of: Any) -> str:
    """``since 2026-11-07 00:00:00Z (1 d 23 h)``: when a down store went down, and for how long
    as of the run; empty for a store that is up (or a run published before ``down_since``)."""
    since = fmt_time(down_since)
    if not since:
        return ""
    ref = pd.Timestamp(as_of) if as_of is not None and not pd.isna(as_of) else None
    took = fmt_age((ref - pd.Timestamp(down_since)).total_seconds()) if ref is not None else ""
    return f"since {since}" + (f" ({took})" if took else "")
