"""An exported time (ISO 8601 or a CSV export's local format) to epoch microseconds."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, tzinfo

from pfscope.spark_jobs.model.timeutil import US

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_LOCAL_FORMATS = (
    "%m/%d/%Y %I:%M:%S %p",
    "%m/%d/%Y %I:%M %p",
    "%m/%d/%Y %H:%M:%S",
    "%d/%m/%Y %H:%M:%S",
    "%d.%m.%Y %H:%M:%S",
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%dT%H:%M:%S",
)
_FRACTION_RE = re.compile(r"(\.\d{1,6})\d*")
# Windows times start at 1601 (FILETIME 0); pfscope writes RFC 3339 with four-digit years, and
# derives times a little after those printed: a time outside these years is no event's
_FIRST = datetime(1601, 1, 1, tzinfo=UTC)
_END = datetime(9999, 1, 1, tzinfo=UTC)


class TimeTextError(ValueError):
    pass


def parse_event_time(text: str, default_offset_min: int = 0, zone: tzinfo | None = None) -> tuple[int, bool]:
    """An exported time to epoch microseconds, and whether it carried its own offset.

    ISO 8601 with ``Z`` or an offset (XML's SystemTime, 7 fraction digits) is exact; local
    formats of CSV exports (``11/2/2026 8:15:00 AM``) take ``zone`` (a time zone with its
    daylight-saving rules) if given, else ``default_offset_min``."""
    s = text.strip().replace("\u200e", "").replace("\u200f", "")
    if not s:
        raise TimeTextError("no time")
    iso = _FRACTION_RE.sub(r"\1", s)
    if iso.endswith(("Z", "z")):
        iso = iso[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(iso)
    except ValueError:
        dt = _local_time(s)
    own = dt.tzinfo is not None
    try:
        if not own:
            if zone is not None:
                dt = dt.replace(tzinfo=zone)
            else:
                dt = dt.replace(tzinfo=UTC) - timedelta(minutes=default_offset_min)
        in_range = _FIRST <= dt < _END
    except OverflowError:  # before year 1 or after 9999 once read in UTC
        in_range = False
    if not in_range:
        raise TimeTextError(f"time {s[:40]!r} is out of range (years 1601 to 9998)")
    delta = dt - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * US + delta.microseconds, own


def _local_time(s: str) -> datetime:
    """A CSV export's local time, in the first of ``_LOCAL_FORMATS`` that reads it."""
    for f in _LOCAL_FORMATS:
        try:
            return datetime.strptime(s, f)
        except ValueError:
            continue
    raise TimeTextError(f"time {s[:40]!r} is in no known format") from None
