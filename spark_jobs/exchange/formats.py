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

This module finds the files and picks each one's reader; each format has its own module
(``xml_format``, ``csv_format``, ``evtx_format``), ``records`` holds what they share and
``event_time`` reads the times they print. Their public names are re-exported here.

A reader that meets a break (a file cut off part-way, garbage in the middle) has already yielded
every complete record before it; it then raises ``InputError`` saying where and what broke, and
the caller decides whether that is a reject (``ingest``) or the end (``ingest --strict``).
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Iterator

from pfscope.spark_jobs.exchange.csv_format import read_csv_file, read_csv_text
from pfscope.spark_jobs.exchange.event_time import TimeTextError, parse_event_time
from pfscope.spark_jobs.exchange.evtx_format import EVTX_CHUNK, EVTX_HEADER, read_evtx
from pfscope.spark_jobs.exchange.records import EXTENSIONS, FORMATS, InputError, RawRecord, decode
from pfscope.spark_jobs.exchange.xml_format import (
    read_xml_file,
    read_xml_stream,
    read_xml_text,
    record_from_event_element,
)

__all__ = [
    "EVTX_CHUNK",
    "EVTX_HEADER",
    "EXTENSIONS",
    "FORMATS",
    "InputError",
    "RawRecord",
    "TimeTextError",
    "expand_log_paths",
    "parse_event_time",
    "read_csv_file",
    "read_csv_text",
    "read_evtx",
    "read_records",
    "read_xml_file",
    "read_xml_stream",
    "read_xml_text",
    "record_from_event_element",
    "sniff",
]


def sniff(path: str) -> str:
    """A file's format by extension, else by its first bytes."""
    ext = os.path.splitext(path)[1].lower()
    if ext in EXTENSIONS:
        return EXTENSIONS[ext]
    with open(path, "rb") as fh:
        head = fh.read(512)
    if head.startswith(b"ElfFile\x00"):
        return "evtx"
    text = decode(head, partial=True).lstrip("\ufeff \r\n\t")
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
