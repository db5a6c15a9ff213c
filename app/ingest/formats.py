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
"""

from __future__ import annotations

import csv
import glob
import io
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import TextIO

from spark_jobs.model.timeutil import US

FORMATS = ("xml", "csv", "evtx")
EXTENSIONS = {".xml": "xml", ".csv": "csv", ".evtx": "evtx"}


class InputError(Exception):
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
    fmt = sniff(path)
    if fmt == "evtx":
        yield from read_evtx(path)
    elif fmt == "xml":
        yield from read_xml_file(path)
    else:
        yield from read_csv_text(_read_text(path), path)


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


def _read_text(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            return _decode(fh.read())
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 nor UTF-16 text") from None


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


def read_xml_file(path: str) -> Iterator[RawRecord]:
    """Streamed: an export of any size is read in 1 MB pieces, each ``<Event>`` let go once read."""
    with open(path, "rb") as fh:
        head = fh.read(2)
    encoding = "utf-16" if head in (b"\xff\xfe", b"\xfe\xff") else "utf-8-sig"
    try:
        with open(path, encoding=encoding, newline="") as fh:
            yield from read_xml_stream(fh, path)
    except UnicodeDecodeError:
        raise InputError(f"{path}: an XML export must be UTF-8 or UTF-16 text") from None


def read_xml_stream(fh: TextIO, source: str, fmt: str = "xml") -> Iterator[RawRecord]:
    """Every ``<Event>`` of an export, with or without a root element (``wevtutil`` writes none)."""
    parser = ET.XMLPullParser(events=("start", "end"))
    parser.feed("<pfscopeRoot>")
    stack: list[ET.Element] = []
    n = 0
    first = True

    def drain() -> Iterator[RawRecord]:
        nonlocal n
        for event, el in parser.read_events():
            if event == "start":
                stack.append(el)
                continue
            stack.pop()
            if _local(el.tag) == "Event" and stack and _local(stack[-1].tag) in ("pfscopeRoot", "Events"):
                n += 1
                yield record_from_event_element(el, source, n, fmt)
                stack[-1].remove(el)

    try:
        while True:
            chunk = fh.read(1 << 20)
            if not chunk:
                break
            if first:
                chunk = _DECL_RE.sub("", chunk.lstrip("\ufeff"), count=1)
                first = False
            parser.feed(chunk)
            yield from drain()
        parser.feed("</pfscopeRoot>")
        parser.close()
        yield from drain()
    except ET.ParseError as e:
        raise InputError(f"{source}: not well-formed XML ({e})") from None


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


def read_csv_text(text: str, source: str) -> Iterator[RawRecord]:
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
        return
    names = [h.strip().lower() for h in header]
    col: dict[str, int] = {}
    for key, aliases in _COLUMNS.items():
        for a in aliases:
            if a in names:
                col[key] = names.index(a)
                break
    if "time" not in col or "event_id" not in col:
        raise InputError(f"{source}: a CSV export needs a time and an event ID column; found {', '.join(header)}")
    no_message_column = "message" not in col  # Event Viewer: the description is an unnamed last column
    n = 0
    while True:
        line_before = reader.line_num
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as e:
            n += 1
            yield RawRecord(source, n, "csv", None, None, None, None, None,
                            problem=f"unreadable CSV row near line {skip + line_before + 1}: {e}")
            continue
        if not any(c.strip() for c in row):
            continue
        n += 1

        def get(key: str, row: list[str] = row) -> str | None:
            i = col.get(key)
            return row[i] if i is not None and i < len(row) else None

        if no_message_column:
            message = row[len(header)] if len(row) > len(header) else None
        else:
            message = get("message")
        eid = (get("event_id") or "").strip()
        event_id = int(eid) & 0xFFFF if eid.isdigit() else None
        rid = (get("record_id") or "").strip()
        yield RawRecord(
            source, n, "csv", (get("server") or "").strip() or None, (get("provider") or "").strip() or None,
            event_id, (get("time") or "").strip() or None, message, None, int(rid) if rid.isdigit() else None,
            problem=None if eid.isdigit() else f"event ID {eid[:20]!r} is not a number",
        )


# --------------------------------------------------------------------------------------------
# EVTX
# --------------------------------------------------------------------------------------------
def read_evtx(path: str) -> Iterator[RawRecord]:
    """Records of a ``.evtx`` file through pyevtx-rs; each comes as the XML of ``/f:xml``."""
    try:
        from evtx import PyEvtxParser
    except ImportError:
        raise InputError("reading .evtx needs the 'evtx' package (pip install evtx)") from None
    try:
        parser = PyEvtxParser(path)
    except Exception as e:
        raise InputError(f"{path}: not a readable .evtx file ({str(e).splitlines()[0]})") from None
    n = 0
    it = parser.records()
    while True:
        try:
            rec = next(it)
        except StopIteration:
            break
        except Exception as e:  # one broken record is a reject, not the end of the file
            n += 1
            yield RawRecord(path, n, "evtx", None, None, None, None, None,
                            problem=f"unreadable .evtx record: {str(e).splitlines()[0][:200]}")
            continue
        n += 1
        try:
            el = ET.fromstring(_DECL_RE.sub("", rec["data"]))
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
