"""A large ``wevtutil`` XML export read in pieces that start and end at record boundaries, so
several workers read one export at once, each holding one piece.

A ``wevtutil qe /f:xml`` or ``/f:RenderedXml`` export is a run of ``<Event ...>...</Event>``
elements with no root, UTF-8, nothing between them but white space. A boundary is where an
``<Event`` follows an ``</Event>`` and white space; it depends on the file's bytes alone, so two
workers that look for the first boundary after one offset find the same one. Each record between
two boundaries is parsed on its own by expat (the parser ``xml_format`` uses) into the same
``RawRecord`` as the whole-file reader gives.

This path is taken only where it gives exactly what ``read_xml_file`` gives: anything else (a root
element, UTF-16, text between records, a DOCTYPE, a file cut off, garbage, a record that is not
well-formed) raises ``NotSplittable``, and the caller reads the whole file with ``read_xml_file``,
whose salvage says where and what broke.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from typing import BinaryIO

from pfscope.spark_jobs.exchange.records import RawRecord, utf16_without_bom
from pfscope.spark_jobs.exchange.xml_format import _local, record_from_event_element

#: a piece of an export read by one worker (bytes); smaller files are read whole
SPLIT_BYTES = 16 << 20
_WS = 4096  # white space between two records that still makes a boundary
_BOUNDARY_RE = re.compile(rb"</Event>([ \t\r\n]{0,%d})<Event[ \t\r\n>]" % _WS)
_TEXT_BOUNDARY_RE = re.compile(rf"</Event>[ \t\r\n]{{0,{_WS}}}(?=<Event[ \t\r\n>])")
_HEAD_RE = re.compile(rb"^(?:\xef\xbb\xbf)?[ \t\r\n]*(?:<\?xml[^>]*\?>)?[ \t\r\n]*<Event[ \t\r\n>]")
_WINDOW = 1 << 20


class NotSplittable(Exception):
    """This piece is not a plain run of ``<Event>`` elements: read the file whole."""


def splittable(head: bytes) -> bool:
    """Whether a file starting with ``head`` (its first KB or more) may be read in pieces."""
    if head[:2] in (b"\xff\xfe", b"\xfe\xff") or utf16_without_bom(head):
        return False
    return _HEAD_RE.match(head) is not None


def plan(size: int, split_bytes: int = SPLIT_BYTES) -> list[tuple[int, int]]:
    """Nominal byte ranges of the pieces; each worker moves both ends to the next boundary."""
    n = max(1, -(-size // split_bytes))
    return [(i * split_bytes, min(size, (i + 1) * split_bytes)) for i in range(n)]


def boundary(fh: BinaryIO, pos: int, size: int) -> int:
    """The first boundary at or after ``pos`` (the offset of its ``<Event``); ``size`` if none."""
    read = fh.read
    seek = fh.seek
    start = max(0, pos - len(b"</Event>") - _WS)
    while start < size:
        seek(start)
        window = read(_WINDOW + len(b"</Event>") + _WS + 8)
        for m in _BOUNDARY_RE.finditer(window):
            at = start + m.end(1)
            if at >= pos:
                return at
        if len(window) < _WINDOW:
            break
        start += _WINDOW
    return size


def read_split(path: str, start: int, end: int) -> Iterator[RawRecord]:
    """The records of one piece, numbered from 1 within it (the caller adds the records of the
    pieces before). ``NotSplittable`` when the piece is not what this reader reads exactly."""
    with open(path, "rb") as fh:
        fh.seek(0, 2)
        size = fh.tell()
        a = 0 if start == 0 else boundary(fh, start, size)
        b = size if end >= size else boundary(fh, end, size)
        if a >= b:
            return
        fh.seek(a)
        raw = fh.read(b - a)
    if a == 0:
        m = _HEAD_RE.match(raw)
        if m is None:
            raise NotSplittable("no <Event> first")
        raw = raw[m.end() - len(b"<Event") - 1 :]  # from the first <Event (the match ends one past it)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise NotSplittable("not UTF-8") from None
    del raw
    if b == size:
        text = text.rstrip(" \t\r\n")
    if not text.endswith("</Event>"):
        raise NotSplittable("does not end with </Event>")
    pos = 0
    cuts = [m.end() for m in _TEXT_BOUNDARY_RE.finditer(text)]
    if not cuts or cuts[-1] != len(text):
        cuts.append(len(text))
    for n, cut in enumerate(cuts, start=1):
        chunk = text[pos:cut]
        pos = cut
        try:
            el = ET.fromstring(chunk)
        except ET.ParseError:
            raise NotSplittable("a record is not well-formed") from None
        if _local(el.tag) != "Event":
            raise NotSplittable("not an <Event>")
        yield record_from_event_element(el, path, n, "xml")
