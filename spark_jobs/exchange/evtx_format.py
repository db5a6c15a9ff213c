"""Reading ``.evtx`` files through pyevtx-rs, salvaging the complete records of a chunk cut short."""

from __future__ import annotations

import io
import os
import struct
import xml.etree.ElementTree as ET
import zlib
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from pfscope.spark_jobs.exchange.records import InputError, RawRecord
from pfscope.spark_jobs.exchange.xml_format import DECL_RE, record_from_event_element

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
        raise InputError(
            f"{path}: not a readable .evtx file (it ends at byte {size:,}, inside its "
            f"{EVTX_HEADER:,}-byte file header: cut off?)"
        )
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
            for r in _evtx_records(
                PyEvtxParser(
                    io.BytesIO(_one_chunk_file(head, chunk[:end])), validate_checksums=False
                ).records(),
                path,
                n,
                complete,
            ):
                n = r.record
                salvaged += 1
                yield r
    if tail:
        raise InputError(
            f"{path}: the file ends at byte {size:,}, inside chunk {whole + 1} of {chunks}, "
            f"after record {n} ({salvaged} records of that chunk read; cut off?)"
        )
    raise InputError(
        f"{path}: the file ends at byte {size:,}, after chunk {whole} of the {declared} its "
        f"header counts, after record {n} (cut off?)"
    )


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


def _evtx_records(it: Iterator[Any], path: str, n: int = 0, limit: int | None = None) -> Iterator[RawRecord]:
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
            yield RawRecord(
                path,
                n,
                "evtx",
                None,
                None,
                None,
                None,
                None,
                problem=f"unreadable .evtx record: {str(e).splitlines()[0][:200]}",
            )
            continue
        n += 1
        taken += 1
        data = DECL_RE.sub("", str(rec["data"]))
        if "<!DOCTYPE" in data or "<!ENTITY" in data:  # never parsed: no entity is expanded nor fetched
            yield RawRecord(
                path,
                n,
                "evtx",
                None,
                None,
                None,
                None,
                None,
                record_id=rec.get("event_record_id"),
                problem="record XML not readable: it has a DOCTYPE (entity declarations), which no event has",
            )
            continue
        try:
            el = ET.fromstring(data)
        except ET.ParseError as e:
            yield RawRecord(
                path,
                n,
                "evtx",
                None,
                None,
                None,
                None,
                None,
                record_id=rec.get("event_record_id"),
                problem=f"record XML not readable: {e}",
            )
            continue
        r = record_from_event_element(el, path, n, "evtx")
        if r.record_id is None:
            r = replace(r, record_id=rec.get("event_record_id"))
        yield r
