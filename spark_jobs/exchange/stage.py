"""Step 1 of ingest as rows: what a worker makes of one piece of one export, and back.

A worker reads one file (or one piece of a large XML export, ``xml_splits``) and turns each
record into one flat row (``ROW_FIELDS``) by ``classify_one``, the rule the reference ``classify``
applies: a reject, an error, or a parsed replication event (pickled, with what the duplicate check
compares). The last row of every task says how the reading went (``kind`` ``piece``, ``file`` or
``resplit``). What needs more than one record (duplicates, record numbers across pieces, the
accounting) is the driver's; ``parsed_from_row`` gives the build steps their ``Parsed`` back.
Rows carry no Spark type: the job turns ``ROW_FIELDS`` into its schema.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import tzinfo
from typing import Any

from pfscope.spark_jobs.exchange import file_records, is_break
from pfscope.spark_jobs.exchange.classify import Parsed, classify_one
from pfscope.spark_jobs.exchange.identity import norm_server
from pfscope.spark_jobs.exchange.messages import message_key
from pfscope.spark_jobs.exchange.reasons import reason_key, record_text
from pfscope.spark_jobs.exchange.records import RawRecord
from pfscope.spark_jobs.exchange.values import ReplicationEvent
from pfscope.spark_jobs.exchange.xml_splits import NotSplittable, read_split

#: (name, type) of a row; types: str, int, bool, bytes, list[str]
ROW_FIELDS: list[tuple[str, str]] = [
    ("file_key", "str"),
    ("piece", "int"),
    ("rec", "int"),
    ("kind", "str"),
    ("fmt", "str"),
    ("record_id", "int"),
    ("raw_server", "str"),
    ("event_id", "int"),
    ("time_text", "str"),
    ("provider", "str"),
    ("text", "str"),
    ("reason", "str"),
    ("reason_key", "str"),
    ("server", "str"),
    ("acct_server", "str"),
    ("without_offset", "bool"),
    ("server_from_file", "str"),
    ("err_json", "str"),
    ("err_second", "int"),
    ("ts", "int"),
    ("direction", "str"),
    ("sender", "str"),
    ("msg_id", "str"),
    ("meaning", "bytes"),
    ("ev", "bytes"),
    ("ignored", "list[str]"),
    ("dedup_key", "str"),
    ("lines", "int"),
    ("msg_key", "str"),
    ("count", "int"),
    ("broken", "str"),
    ("unreadable", "bool"),
]
FIELD_NAMES = [n for n, _ in ROW_FIELDS]
WHOLE = -1  # ``piece`` of a task that reads its file whole
_KEY_JSON = json.JSONEncoder(ensure_ascii=False)  # json.dumps's, made once


@dataclass(frozen=True)
class ReadTask:
    """One worker's share: a whole file, or one piece (``start``-``end`` in bytes) of an XML export."""

    path: str
    file_key: str
    piece: int = WHOLE
    start: int = 0
    end: int = 0


def _empty() -> dict[str, Any]:
    return dict.fromkeys(FIELD_NAMES)


def record_row(
    raw: RawRecord, file_key: str, piece: int, default_offset_min: int, zone: tzinfo | None
) -> dict[str, Any]:
    """One record, classified on its own."""
    o = classify_one(raw, default_offset_min, zone)
    row = _empty()
    row.update(
        file_key=file_key,
        piece=piece,
        rec=raw.record,
        fmt=raw.fmt,
        record_id=raw.record_id,
        raw_server=raw.server,
        event_id=raw.event_id,
        time_text=raw.time_text,
        provider=raw.provider,
        text=record_text(raw),
        without_offset=o.without_offset,
        server_from_file=o.server_from_file,
    )
    if o.reject is not None:
        server = o.server or (norm_server(raw.server) if raw.server else None)
        row.update(
            kind="reject",
            reason=o.reject,
            reason_key=reason_key(o.reject),
            server=server or raw.server,
            acct_server=server or "?",
        )
    elif o.error is not None:
        e = dict(o.error)
        row.update(
            kind="error",
            server=e["server"],
            acct_server=e["server"],
            err_second=e.pop("_second"),
            err_json=json.dumps(e, ensure_ascii=False),
            dedup_key=_key("E", e["server"], e["event_id"], row["err_second"], _digest(e["text"]).hex()),
        )
    else:
        p = o.parsed
        assert p is not None
        ev = p.ev
        row.update(
            kind="parsed",
            server=p.server,
            acct_server=p.server,
            ts=p.ts,
            direction=p.direction,
            sender=p.sender,
            msg_id=ev.msg_id,
            ignored=[line[:120] for line in ev.ignored],
            lines=len(ev.ignored),
            meaning=_digest(repr(ev.meaning())),
            dedup_key=_key("P", *o.parsed_key),
            msg_key=message_key(ev.msg_id, p.sender),
            ev=pickle.dumps(for_build(ev), protocol=pickle.HIGHEST_PROTOCOL),
        )
    return row


def for_build(ev: ReplicationEvent) -> ReplicationEvent:
    """The event as the build steps read it: without the lines ignored (step 1 counts them, from
    the row's ``ignored``) nor the Message ID list of a 2007 content message (its items, each with
    a subject line, are read only to tell duplicates apart, by ``meaning``). The driver holds one
    such event per kept record: these are most of an event's size where they are printed."""
    if not ev.ignored and not ev.message_ids:
        return ev
    return replace(ev, ignored=[], message_ids=[])


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _key(*parts: object) -> str:
    """The duplicate check's key (``classify``'s) as one string (a JSON list: unambiguous)."""
    return _KEY_JSON.encode(parts)


def task_rows(task: ReadTask, default_offset_min: int, zone: tzinfo | None) -> Iterator[dict[str, Any]]:
    """Every record's row, then the task's status row: ``piece`` (read whole: ``count``),
    ``resplit`` (the piece is not plain: the file must be read whole) or ``file`` (``count``
    records; ``broken``: the reason of its break, if any)."""
    status = _empty()
    status.update(file_key=task.file_key, piece=task.piece, rec=0)
    if task.piece != WHOLE:
        # a file of one piece is held until read (at most a piece's rows) and, if it is not
        # plain, read whole here; the pieces of a larger one stream, and such a file goes back
        # to the driver (``resplit``), which has it read whole by another task
        single = task.start == 0 and task.end >= _size(task.path)
        held: list[dict[str, Any]] = []
        n = 0
        try:
            for raw in read_split(task.path, task.start, task.end):
                n += 1
                row = record_row(raw, task.file_key, task.piece, default_offset_min, zone)
                if single:
                    held.append(row)
                else:
                    yield row
        except (NotSplittable, OSError) as e:
            if not single:
                status.update(kind="resplit", reason=str(e))
                yield status
                return
            held = []
        else:
            yield from held
            status.update(kind="piece", count=n)
            yield status
            return
        status.update(piece=WHOLE)
        task = ReadTask(task.path, task.file_key)
    n = 0
    for raw in file_records(task.path):
        n += 1
        if is_break(raw):
            status.update(broken=raw.problem, unreadable=raw.record == 1)
        yield record_row(raw, task.file_key, WHOLE, default_offset_min, zone)
    status.update(kind="file", count=n)
    yield status


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def raw_of(row: dict[str, Any], source: str, record: int) -> RawRecord:
    """The record's ``RawRecord`` without its text (the build steps never read it)."""
    return RawRecord(
        source,
        record,
        row["fmt"],
        row["raw_server"],
        row["provider"],
        row["event_id"],
        row["time_text"],
        None,
        None,
        row["record_id"],
    )


def parsed_from_row(row: dict[str, Any], source: str, record: int) -> Parsed:
    """A kept ``parsed`` row as ``classify`` would have kept it (``for_build``'s event). A worker
    holds one message's or one folder's at a time: their names are not interned."""
    return Parsed(
        raw_of(row, source, record),
        row["server"],
        row["ts"],
        row["direction"],
        pickle.loads(row["ev"]),
        sender=row["sender"],
    )
