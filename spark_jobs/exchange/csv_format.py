"""Reading CSV exports (Event Viewer "Save As", ``Export-Csv``): UTF-8 or UTF-16, any column order."""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator

from pfscope.spark_jobs.exchange.records import (
    MAX_DESCRIPTION,
    InputError,
    RawRecord,
    decode,
    exported_uint,
    shared,
    too_long,
    utf16_without_bom,
)

_COLUMNS = {
    "time": ("timecreated", "date and time", "timegenerated", "timewritten", "date", "time"),
    "event_id": ("id", "event id", "eventid", "instanceid"),
    "server": ("machinename", "computer", "computername"),
    "provider": ("providername", "source"),
    "message": ("message", "description"),
    "record_id": ("recordid", "index", "record id"),
}


_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n?|\n)|[^\r\n]+")  # as a file opened with newline="" reads lines


def read_csv_file(path: str) -> Iterator[RawRecord]:
    text, cut_in_character = _read_text(path)
    if not text.strip("\ufeff \r\n\t"):
        return  # nothing exported (blank lines only): no records, nothing lost
    yield from read_csv_text(text, path, cut_in_character=cut_in_character)


def read_csv_text(text: str, source: str, *, cut_in_character: bool = False) -> Iterator[RawRecord]:
    """Rows to records. Exporters end every row with a line break: a last row without one, or a
    file that ends inside a quoted field, was cut off there (``InputError`` after the rows before)."""
    # the lines are read in place, never copied whole (an export of any size, a field of any length)
    start = 1 if text.startswith("\ufeff") else 0
    skip = 0
    head = ""
    for m in _LINE_RE.finditer(text, start):
        head = m.group()
        if not (head.startswith("#TYPE") or not head.strip()):
            break
        skip += 1
        start = m.end()
        head = ""
    body_empty = start >= len(text)
    delimiter = "\t" if "\t" in head and "," not in head else ","  # Event Viewer's "Text (Tab delimited)"
    reader = csv.reader((m.group() for m in _LINE_RE.finditer(text, start)), delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        raise InputError(f"{source}: no header line") from None
    names = [h.strip().lower() for h in header]
    col: dict[str, int] = {}
    for key, aliases in _COLUMNS.items():
        for a in aliases:
            if a in names:
                col[key] = names.index(a)
                break
    if "time" not in col or "event_id" not in col:
        found = ", ".join(header)
        found = found if len(found) <= 120 else found[:120] + "…"
        raise InputError(f"{source}: a CSV export needs a time and an event ID column; found {found}")
    no_message_column = "message" not in col  # Event Viewer: the description is an unnamed last column
    fields = len(header) + 1 if no_message_column else len(header)
    unterminated = body_empty or not text.endswith(("\n", "\r"))
    in_quotes = text.count('"', start) % 2 == 1  # a quote inside a quoted field is doubled
    n = 0
    pending: tuple[list[str], int] | None = None  # one row held back: the last one may be cut off
    blank_after = False  # blank lines (or a cut-off empty field) after the held row
    while True:
        line_before = reader.line_num
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as e:
            if pending is not None:
                n += 1
                yield _csv_record(pending[0], header, col, no_message_column, source, n)
                pending = None
            if "field larger than field limit" in str(e):  # the reader lost its place in the file
                raise InputError(
                    f"{source}: a field longer than {csv.field_size_limit():,} characters near line "
                    f"{skip + line_before + 1}, inside record {n + 1} (no event has one)"
                ) from None
            n += 1
            yield RawRecord(
                source,
                n,
                "csv",
                None,
                None,
                None,
                None,
                None,
                problem=f"unreadable CSV row near line {skip + line_before + 1}: {e}",
            )
            continue
        if not any(c.strip() for c in row):
            blank_after = True
            continue
        if pending is not None:
            n += 1
            yield _csv_record(pending[0], header, col, no_message_column, source, n)
        pending = (row, skip + line_before + 1)
        blank_after = False
    if pending is not None and blank_after:  # a line followed: the held row was whole
        n += 1
        yield _csv_record(pending[0], header, col, no_message_column, source, n)
        pending = None
        if in_quotes or unterminated:  # ... and what followed is a row cut off at its start
            raise InputError(f"{source}: the file ends at the start of record {n + 1} (cut off?)")
    if pending is not None:
        row, line = pending
        if in_quotes or unterminated:  # a closing quote and half of an escaped one look alike
            what = (
                "inside a quoted field"
                if in_quotes
                else f"without a line break, in its field {min(len(row), fields)} of {fields}"
            )
            raise InputError(f"{source}: the file ends {what}, inside record {n + 1} (line {line}; cut off?)")
        n += 1
        yield _csv_record(row, header, col, no_message_column, source, n)
    elif n == 0 and (in_quotes or unterminated):
        raise InputError(f"{source}: the file ends inside its header line (line {skip + 1}; cut off?)")
    if cut_in_character:  # after a complete row: the next one had begun
        raise InputError(f"{source}: the file ends part-way through a character, after record {n} (cut off?)")


def _csv_record(
    row: list[str], header: list[str], col: dict[str, int], no_message_column: bool, source: str, n: int
) -> RawRecord:
    def get(key: str) -> str | None:
        i = col.get(key)
        return row[i] if i is not None and i < len(row) else None

    if no_message_column:
        message = row[len(header)] if len(row) > len(header) else None
    else:
        message = get("message")
    if message is not None and len(message) > MAX_DESCRIPTION:  # only with a larger csv field limit
        return RawRecord(
            source, n, "csv", None, None, None, None, message[:1000] + "…", problem=too_long(len(message))
        )
    eid = (get("event_id") or "").strip()
    v = exported_uint(eid)
    event_id = v & 0xFFFF if v is not None else None
    return RawRecord(
        source,
        n,
        "csv",
        shared((get("server") or "").strip() or None),
        shared((get("provider") or "").strip() or None),
        event_id,
        (get("time") or "").strip() or None,
        message,
        None,
        exported_uint(get("record_id")),
        problem=None if v is not None else f"event ID {eid[:20]!r} is not a number",
    )


def _read_text(path: str) -> tuple[str, bool]:
    """The whole text, and whether it ends part-way through a character (a file cut off there:
    the partial character is dropped; the cut-off row says the rest)."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        even = raw[: len(raw) - len(raw) % 2]
        try:
            return even.decode("utf-16"), len(even) < len(raw)
        except UnicodeDecodeError as e:
            try:  # a high surrogate alone at the very end: cut off between the two halves
                return even[:-2].decode("utf-16"), True
            except UnicodeDecodeError:
                raise InputError(f"{path}: not UTF-16 text at byte {e.start:,}") from None
    if (utf16 := utf16_without_bom(raw[:64])) and len(raw) % 2 == 0:  # a UTF-16 export that lost its BOM
        try:
            return raw.decode(f"utf-16-{utf16}"), False
        except UnicodeDecodeError as e:
            raise InputError(f"{path}: not UTF-16 text at byte {e.start:,}") from None
    if b"\x00" in raw[:65536] and not _is_utf8(raw):  # binary; a stray NUL in UTF-8 text is one record's
        raise InputError(f"{path}: binary data, not a text export (XML or CSV) nor a .evtx file")
    cut = _decode_cut(raw)
    if cut is not None:
        return cut
    try:
        return decode(raw), False
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 nor UTF-16 text") from None


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def _decode_cut(raw: bytes) -> tuple[str, bool] | None:
    """UTF-8 whose only flaw is a partial character at its very end: the text before it."""
    body = raw[3:] if raw.startswith(b"\xef\xbb\xbf") else raw
    try:
        body.decode("utf-8")
        return None
    except UnicodeDecodeError as e:
        if e.end != len(body) or "end of data" not in e.reason:
            return None
        return body[: e.start].decode("utf-8"), True
