"""Reading XML exports (``wevtutil``, ``ToXml()``, Event Viewer): streamed, one record at a time."""

from __future__ import annotations

import codecs
import io
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator
from typing import TextIO, cast
from xml.parsers.expat import ErrorString

from pfscope.spark_jobs.exchange.records import (
    MAX_DESCRIPTION,
    InputError,
    RawRecord,
    exported_uint,
    shared,
    too_long,
    utf16_without_bom,
)

DECL_RE = re.compile(r"<\?xml[^>]*\?>")


_LOCAL_NAMES: dict[str, str] = {}  # "{namespace}Name" -> "Name": an export uses a few dozen


def _local(tag: str) -> str:
    name = _LOCAL_NAMES.get(tag)
    if name is None:
        name = tag.rsplit("}", 1)[-1]
        if len(_LOCAL_NAMES) < 4096:  # bounded, whatever a hostile file names its elements
            _LOCAL_NAMES[tag] = name
    return name


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
            provider = shared(p.get("Name") or p.get("EventSourceName"))
        e = sys_.get("EventID")
        if e is not None and (v := exported_uint(e.text)) is not None:
            event_id = v & 0xFFFF
        t = sys_.get("TimeCreated")
        if t is not None:
            time_text = t.get("SystemTime")
        c = sys_.get("Computer")
        if c is not None:
            server = shared((c.text or "").strip() or None)
        r = sys_.get("EventRecordID")
        if r is not None:
            record_id = exported_uint(r.text)
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
    size = len(message or "") + sum(len(x) for x in strings or ())
    if size > MAX_DESCRIPTION:  # no event's: rejected, quoted in part, never parsed
        return RawRecord(
            source,
            record,
            fmt,
            server,
            provider,
            event_id,
            time_text,
            (message or "\r\n".join(strings or ()))[:1000] + "…",
            None,
            record_id,
            problem=too_long(size),
        )
    return RawRecord(source, record, fmt, server, provider, event_id, time_text, message, strings, record_id)


def read_xml_text(text: str, source: str, fmt: str = "xml") -> Iterator[RawRecord]:
    yield from read_xml_stream(io.StringIO(text), source, fmt)


class _TextBreak(Exception):
    """The bytes stop being text at ``offset``; ``at_end``: a character cut off by the file's end."""

    def __init__(self, offset: int, at_end: bool, encoding: str):
        super().__init__(offset)
        self.offset, self.at_end, self.encoding = offset, at_end, encoding


def _text_pieces(fh: io.BufferedReader, utf16: str | None, bom: bool = True) -> Iterator[str]:
    """The file's text in 1 MB pieces; the text before a bad byte, then ``_TextBreak``."""
    encoding = ("utf-16" if bom else f"utf-16-{utf16}") if utf16 else "utf-8-sig"
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
            raise _TextBreak(
                done - held + e.start, not raw or "end of data" in e.reason, "UTF-16" if utf16 else "UTF-8"
            ) from None
        if text:
            yield text
        if not raw:
            return
        done += len(raw)


def read_xml_file(path: str) -> Iterator[RawRecord]:
    """Streamed: an export of any size is read in 1 MB pieces, each ``<Event>`` let go once read."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
            utf16 = {b"\xff\xfe": "le", b"\xfe\xff": "be"}.get(head[:2])
            bom = utf16 is not None
            utf16 = utf16 or utf16_without_bom(head)  # a UTF-16 export that lost its BOM
            fh.seek(0)
            yield from _read_xml_pieces(_text_pieces(fh, utf16, bom), path, "xml")
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None


def read_xml_stream(fh: TextIO, source: str, fmt: str = "xml") -> Iterator[RawRecord]:
    """Every ``<Event>`` of an export, with or without a root element (``wevtutil`` writes none)."""
    yield from _read_xml_pieces(iter(lambda: fh.read(1 << 20), ""), source, fmt)


_ROOT = "<pfscopeRoot>"


def _read_xml_pieces(pieces: Iterable[str], source: str, fmt: str) -> Iterator[RawRecord]:
    """Each record as soon as its ``</Event>`` is read; at a break, ``InputError`` naming the
    line and column (of the file), after every complete record before it."""
    parser: ET.XMLPullParser[ET.Element] = ET.XMLPullParser(events=("start", "end"))
    parser.feed(_ROOT)
    stack: list[ET.Element] = []
    n = 0
    first = True
    seen = False  # an element besides our root

    def drain() -> Iterator[RawRecord]:
        nonlocal n
        nonlocal seen
        # (event, element) pairs: typeshed's type also has the kinds of event not asked for
        for event, el in cast("Iterator[tuple[str, ET.Element]]", parser.read_events()):
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
    blank = True  # nothing but a BOM and white space so far: an empty export
    try:
        for piece in pieces:
            if blank and piece.lstrip("\ufeff").strip():
                blank = False  # (a declaration alone is a file cut off before its first element)
                if DECL_RE.sub("", piece, count=1).lstrip("\ufeff").lstrip().startswith("<!DOCTYPE"):
                    raise InputError(
                        f"{source}: a DOCTYPE, which no Windows export has: not read "
                        "(entity declarations are never expanded nor fetched)"
                    )
            if first:  # the declaration may not follow our root: blanked, so columns stay true
                piece = DECL_RE.sub(lambda m: " " * len(m.group()), piece.lstrip("\ufeff"), count=1)
                first = False
            parser.feed(piece)
            yield from drain()
        at_end = True
        parser.feed("</pfscopeRoot>")
        parser.close()
        yield from drain()
        if not seen and blank:
            return  # a BOM, blank lines: an export with no record (as an empty file)
        if not seen:
            raise InputError(f"{source}: no XML element (an empty file, or one cut off before its first)")
    except ET.ParseError as e:
        line, col = e.position
        col = col - len(_ROOT) if line == 1 else col
        if at_end:
            raise InputError(
                f"{source}: not well-formed XML: the file ends {where()}, at line {line}, "
                f"column {col + 1} (cut off?)"
            ) from None
        raise InputError(
            f"{source}: not well-formed XML at line {line}, column {col + 1}, {where()} "
            f"({ErrorString(e.code)})"
        ) from None
    except _TextBreak as e:
        if e.at_end:
            raise InputError(
                f"{source}: the file ends part-way through a character at byte {e.offset:,}, "
                f"{where()} (cut off?)"
            ) from None
        raise InputError(f"{source}: not {e.encoding} text at byte {e.offset:,}, {where()}") from None
