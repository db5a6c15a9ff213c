"""Times are integers of microseconds since the epoch, UTC: cheap to compare, exact, and the
same unit as a Spark timestamp."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import lru_cache

from pfscope.spark_jobs.model.errors import OperatorError

US = 1_000_000
SECOND = US
MINUTE = 60 * US
HOUR = 60 * MINUTE
DAY = 24 * HOUR
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


#: the earliest time a line may carry: Exchange 4.0, the first with public folders, shipped in
#: 1996. An earlier stamp is a broken clock, and accepting it would make the fold expect a
#: backfill request every time-out from then to the as-of (a year-1 stamp: ~740,000 per entry)
EARLIEST_TS = 820_454_400 * US  # 1996-01-01T00:00:00Z


def now_us() -> int:
    """The run's clock, in the model's unit."""
    return int(datetime.now(UTC).timestamp() * US)


def default_as_of(last_ts: int | None, clock: int) -> int:
    """The as-of of a run not given one: its last accepted event, but never after the run's
    clock. A line stamped in the future (a server's clock years ahead) is read and accepted but
    not applied, as any line after an as-of: it neither moves the as-of nor makes the fold
    expect requests until then; a later run applies it when its time has come."""
    return min(last_ts if last_ts is not None else 0, clock)


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
    """Epoch microseconds to RFC 3339 UTC text, whole seconds without a fraction. A whole second
    is its day's text (made once per day) and its time of day: a third of the cost, for ingest's
    every line."""
    seconds, fraction = divmod(us, US)
    if fraction:
        return _formatted(us)
    day, second = divmod(seconds, 86_400)
    hour, second = divmod(second, 3_600)
    minute, second = divmod(second, 60)
    return f"{_day_text(day)}{hour:02d}:{minute:02d}:{second:02d}Z"


def _formatted(us: int) -> str:
    dt = _EPOCH + timedelta(microseconds=us)
    if dt.microsecond:
        return dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


@lru_cache(maxsize=4096)
def _day_text(day: int) -> str:
    """``YYYY-MM-DDT`` of the day ``day`` days after the epoch, as ``_formatted`` writes it."""
    return _formatted(day * DAY).removesuffix("00:00:00Z")
