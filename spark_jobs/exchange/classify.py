"""Step 1 of ingest: each record a replication event (parsed), an error worth surfacing, or a reject."""

from __future__ import annotations

import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import tzinfo
from typing import Any, TypedDict

from pfscope.spark_jobs.exchange.formats import RawRecord, TimeTextError, parse_event_time
from pfscope.spark_jobs.exchange.identity import norm_server
from pfscope.spark_jobs.exchange.parse import (
    ERROR_IDS,
    INCOMING_IDS,
    OUTGOING_IDS,
    DescriptionError,
    ReplicationEvent,
    description_not_found,
    error_details,
    label_insertion_strings,
    parse_description,
    server_from_dn,
)
from pfscope.spark_jobs.exchange.reasons import (
    R_BAD_TIME,
    R_CONFLICTING_COPY,
    R_NO_SERVER,
    R_NO_TEXT,
    R_NOT_EXCHANGE,
    R_NOT_RENDERED_THERE,
    R_NOT_REPLICATION,
    R_UNRENDERED,
    reason_key,
    record_text,
    reject_row,
)
from pfscope.spark_jobs.exchange.records import shared
from pfscope.spark_jobs.model.timeutil import format_ts

PROVIDER_PREFIX = "msexchangeis public"  # "MSExchangeIS Public Store"; "MSExchangeIS Public" on 5.x
PROVIDER_50 = "msexchangeis"  # Exchange 5.0 logged replication under the store's own name (KB 177673)
PROVIDER_ALIASES = (PROVIDER_50, "msexchangepublicis")  # ... and KB 203170 prints "MSExchangePublicIS"


@dataclass(slots=True)
class Parsed:
    """A usable replication event: one record, read and classified."""

    raw: RawRecord
    server: str
    ts: int
    direction: str  # "out" or "in"
    ev: ReplicationEvent
    sender: str | None = None  # the sender's server
    key: str = ""  # the message it belongs to


@dataclass
class Accounting:
    read: Counter[str] = field(default_factory=Counter)  # per source file
    per_server: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    per_type: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    reasons: Counter[str] = field(default_factory=Counter)
    times_without_offset: int = 0
    ignored_lines: Counter[str] = field(default_factory=Counter)  # description lines that carry nothing
    servers_from_file_names: set[str] = field(default_factory=set)
    #: when ``ignored_lines`` holds only the most common lines: the count of all of them
    ignored_total: int | None = None


def server_from_file_name(source: str) -> str | None:
    """``EX01.csv``, ``EX01_application.csv``, ``ex01-2026-11.evtx``: the server before ``_``/``-``/``.``."""
    base = re.split(r"[\\/]", source)[-1]
    m = re.match(r"([A-Za-z0-9]+)", base)
    return m.group(1).upper() if m else None


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one record is, on its own (no other record consulted): exactly one of ``reject``
    (the reason), ``error`` (the row of ``ingest_errors.jsonl``, its store still to fill) or
    ``parsed``; ``server`` (None when no server could be named), and what the accounting counts:
    ``without_offset`` (its time printed no UTC offset), ``server_from_file`` (named from the
    file name). The duplicate check is the caller's: ``error_key`` and ``parsed_key``."""

    server: str | None
    reject: str | None = None
    error: dict[str, Any] | None = None
    parsed: Parsed | None = None
    without_offset: bool = False
    server_from_file: str | None = None

    @property
    def error_key(self) -> tuple[Any, ...]:
        e = self.error
        assert e is not None
        return (e["server"], e["event_id"], e["_second"], e["text"])

    @property
    def parsed_key(self) -> tuple[str, str, str, str]:
        p = self.parsed
        assert p is not None
        return (p.server, p.direction, p.ev.msg_id, p.sender or "")


class _Flags(TypedDict):
    """What the accounting counts of a record that names its server and time (``Outcome``)."""

    without_offset: bool
    server_from_file: str | None


def classify_one(raw: RawRecord, default_offset_min: int, zone: tzinfo | None = None) -> Outcome:
    """One record read on its own: the rules every reader of records shares (the reference
    ``classify`` here, and the Spark job's workers)."""
    if raw.problem:
        return Outcome(None, reject=raw.problem)
    if raw.provider is not None and not _public_store_event(raw.provider, raw.event_id):
        return Outcome(None, reject=R_NOT_EXCHANGE)
    server_text = raw.server or server_from_file_name(raw.source)
    if not server_text:
        return Outcome(None, reject=R_NO_SERVER)
    server = sys.intern(norm_server(server_text))
    from_file = None if raw.server else server
    try:
        ts, own_offset = parse_event_time(raw.time_text or "", default_offset_min, zone)
    except TimeTextError as e:
        return Outcome(server, reject=R_BAD_TIME.format(e), server_from_file=from_file)
    flags: _Flags = {"without_offset": not own_offset, "server_from_file": from_file}
    eid = raw.event_id
    if eid in ERROR_IDS:
        text = record_text(raw)
        row = {
            "server": server,
            "store": None,
            "ts": format_ts(ts),
            "event_id": eid,
            **error_details(eid, text),
            "text": text,
            "source": raw.source,
            "record": raw.record,
            "_second": ts // 1_000_000,
        }
        return Outcome(server, error=row, **flags)
    if eid not in OUTGOING_IDS and eid not in INCOMING_IDS:
        return Outcome(server, reject=R_NOT_REPLICATION.format(eid), **flags)
    if raw.message is not None:
        text = raw.message
        not_found, strings = description_not_found(text)
        if not_found:  # Windows could not render it: read the strings it printed, if it can be done
            labelled = label_insertion_strings(strings) if strings else None
            if labelled is None:
                return Outcome(server, reject=R_NOT_RENDERED_THERE, **flags)
            text = labelled
    elif raw.strings:
        labelled = label_insertion_strings(list(raw.strings))
        if labelled is None:
            return Outcome(server, reject=R_UNRENDERED, **flags)
        text = labelled
    else:
        return Outcome(server, reject=R_NO_TEXT, **flags)
    try:
        ev = parse_description(text)
    except DescriptionError as e:
        return Outcome(server, reject=f"description: {e}", **flags)
    direction = "out" if eid in OUTGOING_IDS else "in"
    p = Parsed(raw, server, ts, direction, ev)
    if direction == "out":
        p.sender = server
    elif ev.server_dn:
        p.sender = shared(server_from_dn(ev.server_dn))
    return Outcome(server, parsed=p, **flags)


#: a record and what it is on its own (``classify_one``): what a file's reading yields, and what
#: ``ingest --engine python`` keeps of each file between runs
Classified = tuple[RawRecord, Outcome]


def classify(
    records: Iterable[RawRecord], default_offset_min: int, acc: Accounting, zone: tzinfo | None = None
) -> tuple[list[Parsed], list[dict[str, Any]], list[dict[str, Any]], int]:
    """Records to (parsed replication events, errors kept, rejects, duplicates)."""
    return gather(((raw, classify_one(raw, default_offset_min, zone)) for raw in records), acc)


def gather(
    classified: Iterable[Classified], acc: Accounting
) -> tuple[list[Parsed], list[dict[str, Any]], list[dict[str, Any]], int]:
    """Each record's outcome, in input order, to (parsed replication events, errors kept, rejects,
    duplicates): the accounting, and the duplicate check that compares records with each other."""
    parsed: list[Parsed] = []
    errors: list[dict[str, Any]] = []
    rejects: list[dict[str, Any]] = []
    seen: dict[tuple[str, str, str, str], Parsed] = {}
    error_keys: set[tuple[Any, ...]] = set()
    duplicates = 0

    def reject(raw: RawRecord, reason: str, server: str | None = None) -> None:
        server = server or (norm_server(raw.server) if raw.server else None)
        rejects.append(reject_row(raw, reason, server))
        acc.reasons[reason_key(reason)] += 1
        acc.per_server[server or "?"]["rejected"] += 1

    for raw, o in classified:
        acc.read[raw.source] += 1
        if o.server_from_file:
            acc.servers_from_file_names.add(o.server_from_file)
        if o.without_offset:
            acc.times_without_offset += 1
        if o.reject is not None:
            reject(raw, o.reject, o.server)
        elif o.error is not None:
            k = o.error_key
            if k in error_keys:
                duplicates += 1
                acc.per_server[o.error["server"]]["duplicates"] += 1
                continue
            error_keys.add(k)
            errors.append(public_error(o.error))
            acc.per_server[o.error["server"]]["errors"] += 1
        else:
            p = o.parsed
            assert p is not None
            k2 = o.parsed_key
            first = seen.get(k2)
            if first is not None:
                if first.ev.meaning() == p.ev.meaning():
                    duplicates += 1
                    acc.per_server[p.server]["duplicates"] += 1
                else:
                    reject(raw, R_CONFLICTING_COPY, p.server)
                continue
            seen[k2] = p
            parsed.append(p)
            for line in p.ev.ignored:
                acc.ignored_lines[line[:120]] += 1
    return parsed, errors, rejects, duplicates


def public_error(row: dict[str, Any]) -> dict[str, Any]:
    """The error row as written (without the duplicate check's second)."""
    return {k: v for k, v in row.items() if k != "_second"}


def _public_store_event(provider: str, event_id: int | None) -> bool:
    low = provider.strip().lower()
    if low.startswith(PROVIDER_PREFIX):
        return True
    return (
        low in PROVIDER_ALIASES
        and event_id is not None
        and (event_id in OUTGOING_IDS or event_id in INCOMING_IDS or event_id in ERROR_IDS)
    )
