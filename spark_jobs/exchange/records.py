"""What every export reader yields (``RawRecord``), the error any may raise, the decoding they share."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

from pfscope.spark_jobs.model.errors import OperatorError

FORMATS = ("xml", "csv", "evtx")
EXTENSIONS = {".xml": "xml", ".csv": "csv", ".evtx": "evtx"}


def shared(text: str | None) -> str | None:
    """One object for every copy of a value records repeat (a server's name, the provider, a
    database, a folder's path): the kept records' pickles refer to it once instead of holding a
    copy each (``sys.intern``; the 12 exports' pickles 10.2 -> 8.2 MB a file)."""
    return sys.intern(text) if text is not None else None


class InputError(OperatorError):
    """A path or file the operator must fix (printed as one line, exit 2)."""


@dataclass(frozen=True, slots=True)
class RawRecord:
    source: str  # the file
    record: int  # 1-based position in the file
    fmt: str  # xml, csv or evtx
    server: str | None  # Computer / MachineName as exported
    provider: str | None
    event_id: int | None
    time_text: str | None
    message: str | None  # the rendered description
    strings: tuple[str, ...] | None = None  # insertion strings (unrendered exports)
    record_id: int | None = None  # EventRecordID when exported
    problem: str | None = None  # the record could not be read; the reason


# the longest description read: a Windows event record is at most 64 KB (and this is the csv
# module's own field limit); a longer one is no event's, and is rejected, quoted only in part
MAX_DESCRIPTION = 131_072


def too_long(chars: int) -> str:
    return f"a description of {chars:,} characters, longer than any event's ({MAX_DESCRIPTION:,}): not read"


_UINT_RE = re.compile(r"[0-9]{1,20}")


def exported_uint(text: str | None) -> int | None:
    """An exported unsigned number (EventID, EventRecordID: at most 64 bits), or None when the
    text is none: not ASCII digits, or out of range (never ``int`` of thousands of digits)."""
    t = (text or "").strip()
    if not _UINT_RE.fullmatch(t):
        return None
    v = int(t)
    return v if v < 1 << 64 else None


def utf16_without_bom(head: bytes) -> str | None:
    """``le`` or ``be`` when text starts as UTF-16 with no BOM (ASCII characters with a NUL byte
    beside each, as a ``<`` or a CSV header starts); else None."""
    head = head[:64] if len(head) >= 64 else head[: len(head) - len(head) % 2]
    if len(head) < 4:
        return None
    if not any(head[1::2]) and all(head[0::2]):
        return "le"
    if not any(head[0::2]) and all(head[1::2]):
        return "be"
    return None


def decode(raw: bytes, *, partial: bool = False) -> str:
    if raw.startswith(b"\xff\xfe") or raw.startswith(b"\xfe\xff"):
        return raw.decode("utf-16", errors="ignore" if partial else "strict")
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        if partial:
            return raw.decode("utf-8", errors="ignore")
        return raw.decode("cp1252", errors="replace")  # Windows PowerShell 5's "Default"
