"""Reading exported Windows event records: XML, CSV and ``.evtx``, one record at a time.

Each reader yields ``RawRecord``: where it came from (file and record number), the server, the
source, the event ID, the time as written, and either the rendered description or the bare
insertion strings. Nothing here knows what the description means (``parse.py`` does).

- XML: ``wevtutil qe ... /f:xml`` or ``/f:RenderedXml`` (a stream of ``<Event>`` elements with
  no root), ``Get-WinEvent ... | ForEach-Object { $_.ToXml() }``, Event Viewer "Save as XML"
  (an ``<Events>`` root). A ``RenderingInfo/Message`` is the rendered description.
- CSV: Event Viewer "Save As" (``Level,Date and Time,Source,Event ID,Task Category`` and the
  description as an unnamed last column), ``Export-Csv`` of ``Get-WinEvent`` or
  ``Get-EventLog`` (``#TYPE`` line, any column order), UTF-8 or UTF-16, quoted multi-line fields.
- EVTX: read with ``evtx`` (pyevtx-rs), whose records are XML like ``/f:xml``.

A reader that meets a break (a file cut off part-way, garbage in the middle) has already yielded
every complete record before it; it then raises ``InputError`` saying where and what broke, and
the caller decides whether that is a reject (``ingest``) or the end (``ingest --strict``).
"""

from __future__ import annotations

import codecs
import csv
import glob
import io
import os
import re
import struct
import xml.etree.ElementTree as ET
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import TextIO
from xml.parsers.expat import ErrorString

from spark_jobs.model.errors import OperatorError
from spark_jobs.model.timeutil import US

FORMATS = ("xml", "csv", "evtx")
EXTENSIONS = {".xml": "xml", ".csv": "csv", ".evtx": "evtx"}


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


# --------------------------------------------------------------------------------------------
# paths
# --------------------------------------------------------------------------------------------
def sniff(path: str) -> str:
    """A file's format by extension, else by its first bytes."""
    ext = os.path.splitext(path)[1].lower()
    if ext in EXTENSIONS:
        return EXTENSIONS[ext]
    with open(path, "rb") as fh:
        head = fh.read(512)
    if head.startswith(b"ElfFile\x00"):
        return "evtx"
    text = _decode(head, partial=True).lstrip("\ufeff \r\n\t")
    return "xml" if text.startswith("<") else "csv"


def expand_log_paths(paths: Iterable[str]) -> list[str]:
    """Files, folders (their ``*.xml``, ``*.csv``, ``*.evtx`` below) and globs, in a stable order.
    A path that finds nothing is an operator error, never an empty log."""
    out: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            found = sorted(
                os.path.join(root, f)
                for root, _dirs, files in os.walk(p)
                for f in files
                if os.path.splitext(f)[1].lower() in EXTENSIONS
            )
            if not found:
                raise InputError(f"{p}: no .xml, .csv or .evtx export in this folder")
            out.extend(found)
        elif any(c in p for c in "*?["):
            found = sorted(f for f in glob.glob(p, recursive=True) if os.path.isfile(f))
            if not found:
                raise InputError(f"{p}: no file matches")
            out.extend(found)
        elif os.path.isfile(p):
            out.append(p)
        else:
            raise InputError(f"{p}: no such file or folder")
    return list(dict.fromkeys(out))


def read_records(path: str) -> Iterator[RawRecord]:
    """Every record of one export; a break raises ``InputError`` after the complete records before it."""
    try:
        if os.path.getsize(path) == 0:
            return  # wevtutil writes an empty file when no event matched: a quiet server, not a fault
        fmt = sniff(path)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
    if fmt == "evtx":
        yield from read_evtx(path)
    elif fmt == "xml":
        yield from read_xml_file(path)
    else:
        yield from read_csv_file(path)


def _decode(raw: bytes, *, partial: bool = False) -> str:
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
    if b"\x00" in raw[:65536]:  # no text export but UTF-16 (handled above) holds a NUL
        raise InputError(f"{path}: binary data, not a text export (XML or CSV) nor a .evtx file")
    cut = _decode_cut(raw)
    if cut is not None:
        return cut
    try:
        return _decode(raw), False
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 nor UTF-16 text") from None


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


# --------------------------------------------------------------------------------------------
# XML
# --------------------------------------------------------------------------------------------
_DECL_RE = re.compile(r"<\?xml[^>]*\?>")


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _children(el: ET.Element) -> dict[str, ET.Element]:
    out: dict[str, ET.Element] = {}
    for c in el:
        out.setdefault(_local(c.tag), c)
    return out


def record_from_event_element(ev: ET.Element, source: str, record: int, fmt: str) -> RawRecord:
    """One ``<Event>`` element (any export's, or an ``.evtx`` record's XML) to a RawRecord."""
    top = _children(ev)
    system = top.get("System")
    provider = event_id = time_text = server = None
    record_id: int | None = None
    if system is not None:
        sys_ = _children(system)
        p = sys_.get("Provider")
        if p is not None:
            provider = p.get("Name") or p.get("EventSourceName")
        e = sys_.get("EventID")
        if e is not None and (e.text or "").strip().isdigit():
            event_id = int((e.text or "").strip()) & 0xFFFF
        t = sys_.get("TimeCreated")
        if t is not None:
            time_text = t.get("SystemTime")
        c = sys_.get("Computer")
        if c is not None:
            server = (c.text or "").strip() or None
        r = sys_.get("EventRecordID")
        if r is not None and (r.text or "").strip().isdigit():
            record_id = int((r.text or "").strip())
    message = None
    info = top.get("RenderingInfo")
    if info is not None:
        m = _children(info).get("Message")
        if m is not None and m.text:
            message = m.text
    strings: tuple[str, ...] | None = None
    data = top.get("EventData")
    if data is not None:
        strings = tuple((d.text or "") for d in data if _local(d.tag) == "Data")
    return RawRecord(source, record, fmt, server, provider, event_id, time_text, message, strings, record_id)


def read_xml_text(text: str, source: str, fmt: str = "xml") -> Iterator[RawRecord]:
    yield from read_xml_stream(io.StringIO(text), source, fmt)


class _TextBreak(Exception):
    """The bytes stop being text at ``offset``; ``at_end``: a character cut off by the file's end."""

    def __init__(self, offset: int, at_end: bool, encoding: str):
        super().__init__(offset)
        self.offset, self.at_end, self.encoding = offset, at_end, encoding


def _text_pieces(fh: io.BufferedReader, utf16: str | None) -> Iterator[str]:
    """The file's text in 1 MB pieces; the text before a bad byte, then ``_TextBreak``."""
    encoding = "utf-16" if utf16 else "utf-8-sig"
    dec = codecs.getincrementaldecoder(encoding)("strict")
    done = 0  # bytes handed to the decoder so far
    while True:
        raw = fh.read(1 << 20)
        try:
            text = dec.decode(raw, final=not raw)
        except UnicodeDecodeError as e:
            held = len(e.object) - len(raw)  # bytes the decoder kept from the piece before
            good = bytes(e.object[: e.start])
            if (good[:2] in (b"\xff\xfe", b"\xfe\xff") and utf16) or good[:3] == b"\xef\xbb\xbf":
                yield good.decode(encoding)
            elif utf16:
                yield good.decode("utf-16-le" if utf16 == "le" else "utf-16-be")
            else:
                yield good.decode("utf-8")
            raise _TextBreak(done - held + e.start, not raw or "end of data" in e.reason,
                             "UTF-16" if utf16 else "UTF-8") from None
        if text:
            yield text
        if not raw:
            return
        done += len(raw)


def read_xml_file(path: str) -> Iterator[RawRecord]:
    """Streamed: an export of any size is read in 1 MB pieces, each ``<Event>`` let go once read."""
    try:
        with open(path, "rb") as fh:
            utf16 = {b"\xff\xfe": "le", b"\xfe\xff": "be"}.get(fh.read(2))
            fh.seek(0)
            yield from _read_xml_pieces(_text_pieces(fh, utf16), path, "xml")
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None


def read_xml_stream(fh: TextIO, source: str, fmt: str = "xml") -> Iterator[RawRecord]:
    """Every ``<Event>`` of an export, with or without a root element (``wevtutil`` writes none)."""
    yield from _read_xml_pieces(iter(lambda: fh.read(1 << 20), ""), source, fmt)


_ROOT = "<pfscopeRoot>"


def _read_xml_pieces(pieces: Iterable[str], source: str, fmt: str) -> Iterator[RawRecord]:
    """Each record as soon as its ``</Event>`` is read; at a break, ``InputError`` naming the
    line and column (of the file), after every complete record before it."""
    parser = ET.XMLPullParser(events=("start", "end"))
    parser.feed(_ROOT)
    stack: list[ET.Element] = []
    n = 0
    first = True
    seen = False  # an element besides our root

    def drain() -> Iterator[RawRecord]:
        nonlocal n
        nonlocal seen
        for event, el in parser.read_events():
            if event == "start":
                stack.append(el)
                seen = seen or len(stack) > 1
                continue
            stack.pop()
            if _local(el.tag) == "Event" and stack and _local(stack[-1].tag) in ("pfscopeRoot", "Events"):
                n += 1
                yield record_from_event_element(el, source, n, fmt)
                stack[-1].remove(el)

    def where() -> str:
        inside = any(_local(el.tag) == "Event" for el in stack)
        return f"inside record {n + 1}" if inside else f"after record {n}" if n else "before any record"

    at_end = False
    try:
        for piece in pieces:
            if first:  # the declaration may not follow our root: blanked, so columns stay true
                piece = _DECL_RE.sub(lambda m: " " * len(m.group()), piece.lstrip("\ufeff"), count=1)
                first = False
            parser.feed(piece)
            yield from drain()
        at_end = True
        parser.feed("</pfscopeRoot>")
        parser.close()
        yield from drain()
        if not seen:
            raise InputError(f"{source}: no XML element (an empty file, or one cut off before its first)")
    except ET.ParseError as e:
        line, col = e.position
        col = col - len(_ROOT) if line == 1 else col
        if at_end:
            raise InputError(f"{source}: not well-formed XML: the file ends {where()}, at line {line}, "
                             f"column {col + 1} (cut off?)") from None
        raise InputError(f"{source}: not well-formed XML at line {line}, column {col + 1}, {where()} "
                         f"({ErrorString(e.code)})") from None
    except _TextBreak as e:
        if e.at_end:
            raise InputError(f"{source}: the file ends part-way through a character at byte {e.offset:,}, "
                             f"{where()} (cut off?)") from None
        raise InputError(f"{source}: not {e.encoding} text at byte {e.offset:,}, {where()}") from None


# --------------------------------------------------------------------------------------------
# CSV
# --------------------------------------------------------------------------------------------
_COLUMNS = {
    "time": ("timecreated", "date and time", "timegenerated", "timewritten", "date", "time"),
    "event_id": ("id", "event id", "eventid", "instanceid"),
    "server": ("machinename", "computer", "computername"),
    "provider": ("providername", "source"),
    "message": ("message", "description"),
    "record_id": ("recordid", "index", "record id"),
}


def read_csv_file(path: str) -> Iterator[RawRecord]:
    text, cut_in_character = _read_text(path)
    if not text.strip("\ufeff \r\n\t"):
        return  # nothing exported (blank lines only): no records, nothing lost
    yield from read_csv_text(text, path, cut_in_character=cut_in_character)


def read_csv_text(text: str, source: str, *, cut_in_character: bool = False) -> Iterator[RawRecord]:
    """Rows to records. Exporters end every row with a line break: a last row without one, or a
    file that ends inside a quoted field, was cut off there (``InputError`` after the rows before)."""
    lines = text.lstrip("\ufeff").splitlines(keepends=True)
    skip = 0
    while skip < len(lines) and (lines[skip].startswith("#TYPE") or not lines[skip].strip()):
        skip += 1
    body = "".join(lines[skip:])
    head = lines[skip] if skip < len(lines) else ""
    delimiter = "\t" if "\t" in head and "," not in head else ","  # Event Viewer's "Text (Tab delimited)"
    reader = csv.reader(io.StringIO(body, newline=""), delimiter=delimiter)
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
    unterminated = not body.endswith(("\n", "\r"))
    in_quotes = body.count('"') % 2 == 1  # a quote inside a quoted field is doubled
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
            n += 1
            yield RawRecord(source, n, "csv", None, None, None, None, None,
                            problem=f"unreadable CSV row near line {skip + line_before + 1}: {e}")
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
            what = "inside a quoted field" if in_quotes else \
                f"without a line break, in its field {min(len(row), fields)} of {fields}"
            raise InputError(f"{source}: the file ends {what}, inside record {n + 1} (line {line}; cut off?)")
        n += 1
        yield _csv_record(row, header, col, no_message_column, source, n)
    elif n == 0 and (in_quotes or unterminated):
        raise InputError(f"{source}: the file ends inside its header line (line {skip + 1}; cut off?)")
    if cut_in_character:  # after a complete row: the next one had begun
        raise InputError(f"{source}: the file ends part-way through a character, after record {n} (cut off?)")


def _csv_record(row: list[str], header: list[str], col: dict[str, int], no_message_column: bool,
                source: str, n: int) -> RawRecord:
    def get(key: str) -> str | None:
        i = col.get(key)
        return row[i] if i is not None and i < len(row) else None

    if no_message_column:
        message = row[len(header)] if len(row) > len(header) else None
    else:
        message = get("message")
    eid = (get("event_id") or "").strip()
    event_id = int(eid) & 0xFFFF if eid.isdigit() else None
    rid = (get("record_id") or "").strip()
    return RawRecord(
        source, n, "csv", (get("server") or "").strip() or None, (get("provider") or "").strip() or None,
        event_id, (get("time") or "").strip() or None, message, None, int(rid) if rid.isdigit() else None,
        problem=None if eid.isdigit() else f"event ID {eid[:20]!r} is not a number",
    )


# --------------------------------------------------------------------------------------------
# EVTX
# --------------------------------------------------------------------------------------------
EVTX_HEADER = 4096  # the file header block
EVTX_CHUNK = 65536  # records never span chunks
_EVTX_RECORD = 0x2A2A


def read_evtx(path: str) -> Iterator[RawRecord]:
    """Records of a ``.evtx`` file through pyevtx-rs; each comes as the XML of ``/f:xml``.

    pyevtx-rs passes over a chunk cut short without a word, so a file whose size is not its
    header plus whole chunks is salvaged here: the complete records of the cut chunk are read
    from a copy of that chunk filled out with zeros, then ``InputError`` says where it ends."""
    try:
        from evtx import PyEvtxParser
    except ImportError:
        raise InputError("reading .evtx needs the 'evtx' package (pip install evtx)") from None
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            head = fh.read(EVTX_HEADER)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
    if not head.startswith(b"ElfFile\x00"):
        raise InputError(f"{path}: not a readable .evtx file (no ElfFile signature)")
    if len(head) < EVTX_HEADER:
        raise InputError(f"{path}: not a readable .evtx file (it ends at byte {size:,}, inside its "
                         f"{EVTX_HEADER:,}-byte file header: cut off?)")
    try:
        parser = PyEvtxParser(path)
    except Exception as e:
        raise InputError(f"{path}: not a readable .evtx file ({str(e).splitlines()[0]})") from None
    whole, tail = divmod(size - EVTX_HEADER, EVTX_CHUNK)
    declared = int.from_bytes(head[42:44], "little")
    n = 0
    for r in _evtx_records(parser.records(), path):
        n = r.record
        yield r
    if not tail and whole >= declared:
        return
    chunks = max(declared, whole + (1 if tail else 0))
    salvaged = 0
    if tail >= 512:
        with open(path, "rb") as fh:
            fh.seek(EVTX_HEADER + whole * EVTX_CHUNK)
            chunk = fh.read(tail)
        complete, end = _complete_records(chunk)
        if complete:
            for r in _evtx_records(PyEvtxParser(io.BytesIO(_one_chunk_file(head, chunk[:end])),
                                                validate_checksums=False).records(), path, n, complete):
                n = r.record
                salvaged += 1
                yield r
    if tail:
        raise InputError(f"{path}: the file ends at byte {size:,}, inside chunk {whole + 1} of {chunks}, "
                         f"after record {n} ({salvaged} records of that chunk read; cut off?)")
    raise InputError(f"{path}: the file ends at byte {size:,}, after chunk {whole} of the {declared} its "
                     f"header counts, after record {n} (cut off?)")


def _complete_records(chunk: bytes) -> tuple[int, int]:
    """How many whole records a cut chunk holds, and where the last one ends."""
    if not chunk.startswith(b"ElfChnk\x00"):
        return 0, 0
    count, off = 0, 512
    while off + 24 <= len(chunk):
        magic, size = struct.unpack_from("<II", chunk, off)
        if magic != _EVTX_RECORD or size < 28 or off + size > len(chunk):
            break
        if struct.unpack_from("<I", chunk, off + size - 4)[0] != size:  # the size is repeated at the end
            break
        count, off = count + 1, off + size
    return count, off


def _one_chunk_file(head: bytes, chunk: bytes) -> bytes:
    """A file of one chunk: the cut chunk's complete records, then zeros."""
    h = bytearray(head)
    struct.pack_into("<QQ", h, 8, 0, 0)  # first and last chunk
    struct.pack_into("<H", h, 42, 1)  # chunk count
    struct.pack_into("<I", h, 124, zlib.crc32(bytes(h[:120])))
    return bytes(h) + chunk + bytes(EVTX_CHUNK - len(chunk))


def _evtx_records(it: Iterator[dict[str, object]], path: str, n: int = 0,
                  limit: int | None = None) -> Iterator[RawRecord]:
    taken = 0
    while limit is None or taken < limit:
        try:
            rec = next(it)
        except StopIteration:
            break
        except BaseException as e:  # one broken record is a reject, not the end of the file
            if not isinstance(e, Exception) and type(e).__name__ != "PanicException":
                raise  # KeyboardInterrupt and the like; a Rust panic is one record's problem
            n += 1
            taken += 1
            yield RawRecord(path, n, "evtx", None, None, None, None, None,
                            problem=f"unreadable .evtx record: {str(e).splitlines()[0][:200]}")
            continue
        n += 1
        taken += 1
        try:
            el = ET.fromstring(_DECL_RE.sub("", str(rec["data"])))
        except ET.ParseError as e:
            yield RawRecord(path, n, "evtx", None, None, None, None, None,
                            record_id=rec.get("event_record_id"), problem=f"record XML not readable: {e}")
            continue
        r = record_from_event_element(el, path, n, "evtx")
        if r.record_id is None:
            r = RawRecord(**{**_asdict(r), "record_id": rec.get("event_record_id")})
        yield r


def _asdict(r: RawRecord) -> dict[str, object]:
    return {f: getattr(r, f) for f in RawRecord.__slots__}


# --------------------------------------------------------------------------------------------
# times
# --------------------------------------------------------------------------------------------
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_LOCAL_FORMATS = (
    "%m/%d/%Y %I:%M:%S %p", "%m/%d/%Y %I:%M %p", "%m/%d/%Y %H:%M:%S", "%d/%m/%Y %H:%M:%S",
    "%d.%m.%Y %H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S",
)
_FRACTION_RE = re.compile(r"(\.\d{1,6})\d*")


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
        dt = None
        for f in _LOCAL_FORMATS:
            try:
                dt = datetime.strptime(s, f)
                break
            except ValueError:
                continue
        if dt is None:
            raise TimeTextError(f"time {s[:40]!r} is in no known format") from None
    own = dt.tzinfo is not None
    if not own:
        if zone is not None:
            dt = dt.replace(tzinfo=zone)
        else:
            dt = dt.replace(tzinfo=UTC) - timedelta(minutes=default_offset_min)
    delta = dt - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * US + delta.microseconds, own
