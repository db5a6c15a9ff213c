"""Times are integers of microseconds since the epoch, UTC: cheap to compare, exact, and the
same unit as a Spark timestamp."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from spark_jobs.model.errors import OperatorError

US = 1_000_000
SECOND = US
MINUTE = 60 * US
HOUR = 60 * MINUTE
DAY = 24 * HOUR
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class TimeError(OperatorError, ValueError):
    """A timestamp that is not RFC 3339 with an offset."""


def parse_ts(text: object) -> int:
    """RFC 3339 with an offset (``2026-11-02T08:15:00Z``) to epoch microseconds."""
    if not isinstance(text, str):
        raise TimeError("timestamp must be a string")
    s = text.strip()
    if len(s) < 20 or s[10] not in "Tt ":
        raise TimeError(f"timestamp {text!r} is not RFC 3339")
    if s[-1] == "z":  # RFC 3339 allows a lower-case z
        s = s[:-1] + "Z"
    try:
        dt = datetime.fromisoformat(s)
    except ValueError:
        raise TimeError(f"timestamp {text!r} is not RFC 3339") from None
    if dt.tzinfo is None:
        raise TimeError(f"timestamp {text!r} has no offset")
    delta = dt - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * US + delta.microseconds


def to_datetime(us: int | None) -> datetime | None:
    if us is None:
        return None
    return _EPOCH + timedelta(microseconds=us)


def format_ts(us: int) -> str:
    """Epoch microseconds to RFC 3339 UTC text, whole seconds without a fraction."""
    dt = _EPOCH + timedelta(microseconds=us)
    if dt.microsecond:
        return dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")
