"""Writers of Windows event exports for the tests: XML (wevtutil /f:xml and /f:RenderedXml,
ToXml()), CSV (Event Viewer "Save As", Export-Csv) and a minimal but real ``.evtx`` file
(file header, one chunk per 200 records with both CRCs, records in BinXML: a template instance
with its definition inline and substitution values), read back by pyevtx-rs in the tests."""

from __future__ import annotations

import csv
import io
import struct
import uuid
import zlib
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from tests.render import ExportRecord

NS = "http://schemas.microsoft.com/win/2004/08/events/event"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _dt(us: int) -> datetime:
    return _EPOCH + timedelta(microseconds=us)


def system_time(us: int) -> str:
    return _dt(us).strftime("%Y-%m-%dT%H:%M:%S.%f") + "0Z"  # 7 fraction digits, as Windows writes


def _xml_text(s: str) -> str:
    return escape(s).replace("\r", "&#13;")


def event_xml(r: ExportRecord, record_id: int, *, rendered: bool) -> str:
    data = "".join(f"<Data>{_xml_text(s)}</Data>" for s in r.strings)
    info = ""
    if rendered:
        info = (
            f"<RenderingInfo Culture='en-US'><Message>{_xml_text(r.message)}</Message>"
            "<Level>Information</Level><Task>Replication</Task><Keywords><Keyword>Classic</Keyword>"
            f"</Keywords></RenderingInfo>"
        )
    return (
        f"<Event xmlns='{NS}'><System><Provider Name={quoteattr(r.provider)}/>"
        f"<EventID Qualifiers='16388'>{r.event_id}</EventID><Level>4</Level><Task>16</Task>"
        f"<TimeCreated SystemTime='{system_time(r.ts)}'/><EventRecordID>{record_id}</EventRecordID>"
        f"<Channel>Application</Channel><Computer>{escape(r.server)}</Computer><Security/></System>"
        f"<EventData>{data}</EventData>{info}</Event>"
    )


def write_wevtutil_xml(records: Sequence[ExportRecord], path: Path, *, rendered: bool = True) -> None:
    """``wevtutil qe Application /f:RenderedXml`` (or ``/f:xml``): events with no root element."""
    path.write_text(
        "".join(event_xml(r, i, rendered=rendered) for i, r in enumerate(records, 1)), encoding="utf-8"
    )


def write_events_xml(records: Sequence[ExportRecord], path: Path, *, rendered: bool = True) -> None:
    """Event Viewer "Save as XML" / ``ToXml()`` collected under an ``<Events>`` root, UTF-16."""
    body = "\r\n".join(event_xml(r, i, rendered=rendered) for i, r in enumerate(records, 1))
    path.write_bytes(
        ("<?xml version='1.0' encoding='UTF-16'?>\r\n<Events>" + body + "</Events>").encode("utf-16")
    )


def _us_local(us: int, offset_min: int) -> str:
    d = _dt(us) + timedelta(minutes=offset_min)
    return f"{d.month}/{d.day}/{d.year} {d.strftime('%I:%M:%S %p').lstrip('0')}"


def write_event_viewer_csv(records: Sequence[ExportRecord], path: Path, *, offset_min: int = 0) -> None:
    """Event Viewer "Save As" CSV: five named columns, the description as an unnamed sixth,
    local times without an offset, CR LF rows, quoted multi-line descriptions."""
    buf = io.StringIO(newline="")
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow(["Level", "Date and Time", "Source", "Event ID", "Task Category"])
    for r in records:
        w.writerow(
            ["Information", _us_local(r.ts, offset_min), r.provider, r.event_id, "Replication", r.message]
        )
    path.write_text(buf.getvalue(), encoding="utf-8-sig", newline="")


def write_export_csv(records: Sequence[ExportRecord], path: Path) -> None:
    """``Get-WinEvent | Select-Object TimeCreated, Id, MachineName, ProviderName, Message |
    Export-Csv``: a ``#TYPE`` line, every field quoted; times as ISO with an offset."""
    buf = io.StringIO(newline="")
    buf.write("#TYPE Selected.System.Diagnostics.Eventing.Reader.EventLogRecord\r\n")
    w = csv.writer(buf, lineterminator="\r\n", quoting=csv.QUOTE_ALL)
    w.writerow(["TimeCreated", "Id", "MachineName", "ProviderName", "Message"])
    for r in records:
        w.writerow([_dt(r.ts).isoformat(), r.event_id, r.server, r.provider, r.message])
    path.write_text(buf.getvalue(), encoding="utf-8-sig", newline="")


# --------------------------------------------------------------------------------------------
# EVTX
# --------------------------------------------------------------------------------------------
CHUNK_SIZE = 65536
RECORDS_PER_CHUNK = 200


def _filetime(us: int) -> int:
    return (us + 11_644_473_600 * 1_000_000) * 10


def _name_hash(name: str) -> int:
    h = 0
    for c in name.encode("utf-16-le")[::2]:
        h = (h * 65599 + c) & 0xFFFFFFFF
    return h & 0xFFFF


class _BinXml:
    """BinXML bytes at a known chunk offset (names are written inline, at their own offset)."""

    def __init__(self, base: int):
        self.base = base
        self.b = bytearray()

    def pos(self) -> int:
        return self.base + len(self.b)

    def name(self, n: str) -> None:
        self.b += struct.pack("<I", self.pos() + 4)
        u = n.encode("utf-16-le")
        self.b += struct.pack("<IHH", 0, _name_hash(n), len(n)) + u + b"\x00\x00"

    def element(
        self,
        name: str,
        attrs: list[tuple[str, int, int]] | None = None,
        content: list[tuple[int, int]] | None = None,
        children: list | None = None,
        literal: str | None = None,
    ) -> None:
        """attrs: (name, substitution index, type); content: substitutions; children: callables."""
        self.b.append(0x41 if attrs else 0x01)
        self.b += struct.pack("<H", 0xFFFF)
        size_at = len(self.b)
        self.b += b"\x00\x00\x00\x00"
        start = len(self.b)
        self.name(name)
        if attrs:
            list_at = len(self.b)
            self.b += b"\x00\x00\x00\x00"
            list_start = len(self.b)
            for i, (an, idx, typ) in enumerate(attrs):
                self.b.append(0x46 if i < len(attrs) - 1 else 0x06)
                self.name(an)
                self.b += struct.pack("<BHB", 0x0E, idx, typ)
            struct.pack_into("<I", self.b, list_at, len(self.b) - list_start)
        if not content and not children and literal is None:
            self.b.append(0x03)
        else:
            self.b.append(0x02)
            if literal is not None:
                u = literal.encode("utf-16-le")
                self.b += struct.pack("<BBH", 0x05, 0x01, len(literal)) + u
            for idx, typ in content or ():
                self.b += struct.pack("<BHB", 0x0E, idx, typ)
            for child in children or ():
                child(self)
            self.b.append(0x04)
        struct.pack_into("<I", self.b, size_at, len(self.b) - start)


def _record_binxml(r: ExportRecord, record_id: int, base: int) -> bytes:
    x = _BinXml(base)
    x.b += bytes([0x0F, 0x01, 0x01, 0x00, 0x0C, 0x01])
    x.b += struct.pack("<I", record_id)  # template id
    x.b += struct.pack("<I", x.pos() + 4)  # the definition follows inline
    def_at = len(x.b)
    x.b += struct.pack("<I", 0) + uuid.UUID(int=record_id).bytes_le + b"\x00\x00\x00\x00"
    data_start = len(x.b)
    x.b += bytes([0x0F, 0x01, 0x01, 0x00])
    n = len(r.strings)

    def system(w: _BinXml) -> None:
        w.element(
            "System",
            children=[
                lambda w: w.element("Provider", attrs=[("Name", 0, 0x01)]),
                lambda w: w.element("EventID", content=[(1, 0x06)]),
                lambda w: w.element("TimeCreated", attrs=[("SystemTime", 2, 0x11)]),
                lambda w: w.element("EventRecordID", content=[(3, 0x0A)]),
                lambda w: w.element("Channel", literal="Application"),
                lambda w: w.element("Computer", content=[(4, 0x01)]),
            ],
        )

    def data(i: int):  # type: ignore[no-untyped-def]
        return lambda w: w.element("Data", content=[(5 + i, 0x01)])

    def event_data(w: _BinXml) -> None:
        w.element("EventData", children=[data(i) for i in range(n)])

    x.element("Event", children=[system, event_data])
    x.b.append(0x00)
    struct.pack_into("<I", x.b, def_at + 20, len(x.b) - data_start)
    values = [
        r.provider.encode("utf-16-le"),
        struct.pack("<H", r.event_id),
        struct.pack("<Q", _filetime(r.ts)),
        struct.pack("<Q", record_id),
        r.server.encode("utf-16-le"),
        *[s.encode("utf-16-le") for s in r.strings],
    ]
    types = [0x01, 0x06, 0x11, 0x0A, 0x01] + [0x01] * n
    x.b += struct.pack("<I", len(values))
    for v, t in zip(values, types, strict=True):
        x.b += struct.pack("<HBB", len(v), t, 0)
    for v in values:
        x.b += v
    x.b.append(0x00)
    return bytes(x.b)


def _chunk(body: bytes, first_id: int, last_id: int, last_off: int) -> bytes:
    head = bytearray(512)
    head[0:8] = b"ElfChnk\x00"
    struct.pack_into(
        "<QQQQIIII",
        head,
        8,
        first_id,
        last_id,
        first_id,
        last_id,
        128,
        last_off,
        512 + len(body),
        zlib.crc32(body),
    )
    struct.pack_into("<I", head, 124, zlib.crc32(bytes(head[:120]) + bytes(head[128:512])))
    return bytes(head) + body + bytes(CHUNK_SIZE - 512 - len(body))


def write_evtx(records: Sequence[ExportRecord], path: Path, *, per_chunk: int = RECORDS_PER_CHUNK) -> None:
    """Records fill a chunk until the next would not fit (or ``per_chunk`` are in it)."""
    chunks: list[bytes] = []
    next_id = 1
    body = bytearray()
    first_id, last_off, in_chunk = 1, 512, 0
    for r in records:
        for _attempt in range(2):
            off = 512 + len(body)
            xml = _record_binxml(r, next_id, off + 24)
            size = 24 + len(xml) + 4
            if off + size <= CHUNK_SIZE and in_chunk < per_chunk:
                break
            if not in_chunk:
                raise ValueError("one record is larger than a chunk")
            chunks.append(_chunk(bytes(body), first_id, next_id - 1, last_off))
            body, first_id, last_off, in_chunk = bytearray(), next_id, 512, 0
        body += (
            struct.pack("<IIQQ", 0x00002A2A, size, next_id, _filetime(r.ts)) + xml + struct.pack("<I", size)
        )
        last_off = off
        next_id += 1
        in_chunk += 1
    if in_chunk or not chunks:
        chunks.append(_chunk(bytes(body), first_id, next_id - 1, last_off))
    fh = bytearray(4096)
    fh[0:8] = b"ElfFile\x00"
    struct.pack_into("<QQQIHHHH", fh, 8, 0, len(chunks) - 1, next_id, 128, 2, 3, 4096, len(chunks))
    struct.pack_into("<I", fh, 120, 0)  # flags: clean
    struct.pack_into("<I", fh, 124, zlib.crc32(bytes(fh[:120])))
    path.write_bytes(bytes(fh) + b"".join(chunks))
