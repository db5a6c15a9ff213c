"""The event log: reading, validation, de-duplication and the send/receive join.

Every line read ends in exactly one of three places: accepted, duplicate or rejected, so
``lines_read == accepted + duplicates + rejected`` always holds. Reject reasons are fixed
phrases (the field name is the only detail) so that the Spark job can produce the very same
text in SQL.

Validation runs in two stages:

1. ``parse_line``: one line on its own (JSON, fields, types, known stores, CN sets).
2. ``EventLog.build``: the rules between lines, in input order (duplicates, message ids,
   receives against their sends) and in event order (change numbers only increase).

One module over 500 lines on purpose: both stages and the reading of files make one accounting
(each line accepted, duplicate or rejected), and the fixed reject phrases the Spark job copies
stay in the one module that gives them all.
"""

from __future__ import annotations

import glob
import json
import os
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pfscope.spark_jobs.model.cnset import CNSet, CNSetError, decimal_int
from pfscope.spark_jobs.model.timeutil import EARLIEST_TS, TimeError, parse_ts
from pfscope.spark_jobs.model.topology import HIERARCHY_FID, Topology, is_fid, normalise_fid

KINDS = ("change", "send", "receive", "replicas", "store_status")
MESSAGE_TYPES = (
    "hierarchy",
    "content",
    "backfill_request",
    "backfill_response",
    "status",
    "status_request",
)
TYPES_WITH_CHANGES = frozenset({"hierarchy", "content", "backfill_response"})
OPS = ("create", "modify", "delete")

# Fixed reject reasons. Keep in step with the Spark job (spark_jobs/compute/reading.py).
R_EMPTY = "empty line"
R_NOT_UTF8 = "not UTF-8"
R_NOT_JSON = "not JSON"
R_NOT_OBJECT = "not a JSON object"
R_UNKNOWN_KIND = "unknown kind"
R_UNKNOWN_TYPE = "unknown type"
R_BAD_TS = "bad timestamp"
R_TS_TOO_EARLY = "timestamp before 1996"
R_HIERARCHY_REPLICAS = "replicas event for the hierarchy 1-1"
R_TYPE_FID = "message type does not fit the folder"
R_TO_SENDER = "message addressed to its sender"
R_SOURCE_NOT_IN_TO = "source not in to"
R_NEVER_SENT = "receive of a message never sent"
R_BEFORE_SEND = "receive stamped before its send"
R_NOT_ADDRESSEE = "receive by a store not in to"
R_RECEIVED_TWICE = "message already received by this store"
R_MSG_REUSED = "message id reused with different content"
R_CN_NOT_INCREASING = "change number not above the store's previous one for this folder"


def r_missing(f: str) -> str:
    return f"missing field: {f}"


def r_ill_typed(f: str) -> str:
    return f"ill-typed field: {f}"


def r_unknown_store(f: str) -> str:
    return f"unknown store in field: {f}"


def r_cn_below_1(f: str) -> str:
    return f"CN below 1 in field: {f}"


def r_lo_above_hi(f: str) -> str:
    return f"range with lo > hi in field: {f}"


def r_out_of_range(f: str) -> str:
    return f"number out of range in field: {f}"


#: the largest ``bytes`` a line may carry: the tables store it as a 64-bit integer
MAX_INT = 2**63 - 1
#: the largest CN, in ``cn`` and in every CN set: Exchange numbers changes with a 48-bit counter
#: (its GLOBCNT), and with CNs this small a CN set's count (a sum over its origins) fits a 64-bit
#: column for up to 32,767 stores (MAX_STORES in topology.py), so no count can overflow
MAX_CN = 2**48 - 1


class Reject(Exception):
    """A line that cannot be used, with one of the fixed reasons above."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(slots=True, eq=False)
class Message:
    """One replication message: its send, shared by every receive of it."""

    msg: str
    sender: str
    type: str
    fid: str
    to: tuple[str, ...]
    cnset: CNSet
    changes: CNSet | None
    requested: CNSet | None
    source: str | None
    responders: tuple[str, ...] | None
    sent_at: int
    seq: int
    #: what the writer of the log derived rather than read (e.g. ``cnset``: a lower bound)
    derived: tuple[str, ...] = ()

    def asked(self) -> tuple[str, ...]:
        """The stores a backfill request asks: its source if given, else everyone in ``to``."""
        return (self.source,) if self.source else self.to


@dataclass(slots=True, eq=False)
class Event:
    """An accepted line. ``seq`` is its input position, the tie-break for equal times."""

    ts: int
    seq: int
    store: str
    kind: str
    fid: str | None = None
    cn: int | None = None
    op: str | None = None
    item: str | None = None
    bytes: int | None = None
    msg_id: str | None = None  # a receive's message id, resolved to ``message`` in stage 2
    message: Message | None = None
    replicas: tuple[str, ...] | None = None
    path: str | None = None
    status: str | None = None
    #: the line's ``derived``: fields its writer inferred (``event`` on an implied change)
    derived: tuple[str, ...] = ()
    key: tuple[Any, ...] = ()


@dataclass(frozen=True, slots=True)
class RejectRow:
    """A rejected line. ``conflict_source``/``conflict_line``: the accepted line whose acceptance
    made this one a reject (rules between lines only; None when no line caused it). See
    ``EventLog.build`` for which line is named when several could be."""

    source: str
    line: int
    reason: str
    text: str
    conflict_source: str | None = None
    conflict_line: int | None = None


#: a line after stage 1: its file, number and text ("" when not UTF-8), and the event it is or
#: why it is rejected (its reason)
Parsed = tuple[str, int, str, "Event | str"]

#: a rule between lines' verdict on a line: the reason, and the seq of the accepted line it
#: conflicts with (None: no line caused it)
Stage2Reject = tuple[str, int | None]


#: ``make_seq``: the bits of a line's number; the file's index is above them
LINE_BITS = 32


def make_seq(file_index: int, line: int) -> int:
    """A total input order over several files: the file's rank, then the line number."""
    return (file_index << LINE_BITS) | line


# --------------------------------------------------------------------------------------------
# Stage 1: one line
# --------------------------------------------------------------------------------------------
def _req(obj: dict[str, Any], f: str) -> Any:
    if f not in obj or obj[f] is None:
        raise Reject(r_missing(f))
    return obj[f]


#: a lone surrogate: JSON's ``\ud800`` escape makes one, but it is no character, so a text
#: holding one cannot be written as UTF-8 (the job's Arrow batches and Parquet files)
_SURROGATE = re.compile("[\ud800-\udfff]")


def _is_text(v: str) -> bool:
    return v.isascii() or _SURROGATE.search(v) is None


def _str(obj: dict[str, Any], f: str) -> str:
    v = _req(obj, f)
    if not isinstance(v, str) or not v or not _is_text(v):
        raise Reject(r_ill_typed(f))
    return v


def _store(obj: dict[str, Any], f: str, topo: Topology) -> str:
    v = _str(obj, f)
    if v not in topo.stores:
        raise Reject(r_unknown_store(f))
    return sys.intern(v)  # one object per store: kept lines pickle it once


def _fid(obj: dict[str, Any]) -> str:
    v = _req(obj, "fid")
    if not is_fid(v):
        raise Reject(r_ill_typed("fid"))
    return sys.intern(normalise_fid(v))


def _stores(obj: dict[str, Any], f: str, topo: Topology, *, non_empty: bool) -> tuple[str, ...]:
    v = _req(obj, f)
    if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
        raise Reject(r_ill_typed(f))
    if (non_empty and not v) or len(set(v)) != len(v):
        raise Reject(r_ill_typed(f))
    for x in v:
        if x not in topo.stores:
            raise Reject(r_unknown_store(f))
    return tuple(map(sys.intern, v))


def _cnset(obj: dict[str, Any], f: str, topo: Topology) -> CNSet:
    v = _req(obj, f)
    try:
        s = CNSet.from_json(v)
    except CNSetError as e:
        text = str(e)
        if "below 1" in text:
            raise Reject(r_cn_below_1(f)) from None
        if "lo > hi" in text:
            raise Reject(r_lo_above_hi(f)) from None
        raise Reject(r_ill_typed(f)) from None
    if any((s.max_cn(origin) or 0) > MAX_CN for origin in s.origins()):
        raise Reject(r_out_of_range(f))
    for origin in s.origins():
        if origin not in topo.stores:
            raise Reject(r_unknown_store(f))
    return s


def _int(obj: dict[str, Any], f: str, *, minimum: int, maximum: int) -> int:
    v = _req(obj, f)
    if not isinstance(v, int) or isinstance(v, bool) or v < minimum:
        raise Reject(r_ill_typed(f))
    if v > maximum:
        raise Reject(r_out_of_range(f))
    return v


def _opt(obj: dict[str, Any], f: str, kind: type) -> Any:
    v = obj.get(f)
    if v is None:
        return None
    if not isinstance(v, kind) or isinstance(v, bool) or (isinstance(v, str) and not _is_text(v)):
        raise Reject(r_ill_typed(f))
    return v


def _derived(obj: dict[str, Any]) -> tuple[str, ...]:
    """The optional ``derived`` list: the names of the fields the log's writer inferred. Kept as
    a sorted set of names: its order says nothing."""
    v = obj.get("derived")
    if v is None:
        return ()
    if not isinstance(v, list) or not all(isinstance(x, str) and x and _is_text(x) for x in v):
        raise Reject(r_ill_typed("derived"))
    return tuple(sorted(set(map(sys.intern, v))))


def parse_line(text: str, topo: Topology, seq: int) -> Event:
    """One line to an Event, or ``Reject``. Says nothing about other lines."""
    if not text.strip():
        raise Reject(R_EMPTY)
    try:
        obj = json.loads(text)
    except RecursionError:  # nested deeper than the parser goes
        raise Reject(R_NOT_JSON) from None
    except ValueError:
        # perhaps valid JSON with a number of more digits than Python converts at once: read
        # again with one that does (only for lines refused: no cost on the others)
        try:
            obj = json.loads(text, parse_int=decimal_int)
        except (ValueError, RecursionError):
            raise Reject(R_NOT_JSON) from None
    if not isinstance(obj, dict):
        raise Reject(R_NOT_OBJECT)
    kind = _req(obj, "kind")
    if kind not in KINDS:
        raise Reject(R_UNKNOWN_KIND)
    kind = sys.intern(kind)
    ts_raw = _req(obj, "ts")
    try:
        ts = parse_ts(ts_raw)
    except TimeError:
        raise Reject(R_BAD_TS) from None
    if ts < EARLIEST_TS:
        raise Reject(R_TS_TOO_EARLY)
    store = _store(obj, "store", topo)
    ev = Event(ts=ts, seq=seq, store=store, kind=kind, derived=_derived(obj))

    if kind == "change":
        ev.fid = _fid(obj)
        ev.cn = _int(obj, "cn", minimum=1, maximum=MAX_CN)
        ev.op = _opt(obj, "op", str)
        if ev.op is not None and ev.op not in OPS:
            raise Reject(r_ill_typed("op"))
        ev.item = _opt(obj, "item", str)
        ev.bytes = _opt(obj, "bytes", int)
        if ev.bytes is not None and ev.bytes < 0:
            raise Reject(r_ill_typed("bytes"))
        if ev.bytes is not None and ev.bytes > MAX_INT:
            raise Reject(r_out_of_range("bytes"))
        # ``derived`` is part of the meaning where the model reads it (change and send lines):
        # the same CN known or only inferred gives different tables
        ev.key = (kind, ts, store, ev.fid, ev.cn, ev.op, ev.item, ev.bytes, ev.derived)
    elif kind == "send":
        msg = _str(obj, "msg")
        mtype = _req(obj, "type")
        if mtype not in MESSAGE_TYPES:
            raise Reject(R_UNKNOWN_TYPE)
        fid = _fid(obj)
        if (mtype == "hierarchy") != (fid == HIERARCHY_FID) and mtype in ("hierarchy", "content"):
            raise Reject(R_TYPE_FID)
        to = _stores(obj, "to", topo, non_empty=True)
        if store in to:
            raise Reject(R_TO_SENDER)
        cnset = _cnset(obj, "cnset", topo)
        changes = _cnset(obj, "changes", topo) if mtype in TYPES_WITH_CHANGES else None
        requested = source = responders = None
        if mtype == "backfill_request":
            requested = _cnset(obj, "requested", topo)
            if obj.get("source") is not None:
                source = _store(obj, "source", topo)
                if source not in to:
                    raise Reject(R_SOURCE_NOT_IN_TO)
        if mtype == "status_request":
            responders = _stores(obj, "responders", topo, non_empty=False)
        ev.fid = fid
        ev.message = Message(
            msg,
            store,
            mtype,
            fid,
            to,
            cnset,
            changes,
            requested,
            source,
            responders,
            ts,
            seq,
            ev.derived,
        )
        ev.key = (
            kind,
            ts,
            store,
            msg,
            mtype,
            fid,
            tuple(sorted(to)),
            cnset.text(),
            changes.text() if changes is not None else None,
            requested.text() if requested is not None else None,
            source,
            tuple(sorted(responders)) if responders is not None else None,
            ev.derived,
        )
    elif kind == "receive":
        msg = _str(obj, "msg")
        ev.key = (kind, ts, store, msg)
        ev.msg_id = msg
    elif kind == "replicas":
        fid = _fid(obj)
        if fid == HIERARCHY_FID:
            raise Reject(R_HIERARCHY_REPLICAS)
        ev.fid = fid
        ev.replicas = _stores(obj, "replicas", topo, non_empty=False)
        ev.path = _opt(obj, "path", str)
        ev.key = (kind, ts, store, fid, tuple(sorted(ev.replicas)), ev.path)
    else:  # store_status
        status = _req(obj, "status")
        if status not in ("up", "down"):
            raise Reject(r_ill_typed("status"))
        ev.status = status
        ev.key = (kind, ts, store, status)
    return ev


# --------------------------------------------------------------------------------------------
# Stage 2: the whole log
# --------------------------------------------------------------------------------------------
@dataclass
class EventLog:
    """The accepted events in input order, the rejects, and the accounting."""

    events: list[Event] = field(default_factory=list)
    rejects: list[RejectRow] = field(default_factory=list)
    messages: dict[str, Message] = field(default_factory=dict)
    lines_read: int = 0
    duplicates: int = 0

    @property
    def accepted(self) -> int:
        return len(self.events)

    def in_time_order(self) -> list[Event]:
        """Events as the model applies them: by time, then input order."""
        return sorted(self.events, key=lambda e: (e.ts, e.seq))

    def last_ts(self) -> int | None:
        return max((e.ts for e in self.events), default=None)

    @classmethod
    def build(cls, lines: Iterable[tuple[str, int, int, str | None]], topo: Topology) -> EventLog:
        """``lines`` yields ``(source, line_no, seq, text)``; text None means not UTF-8.

        A reject of the rules between lines names the accepted line it conflicts with (its
        ``conflict_source`` and ``conflict_line``):

        - a message id reused with different content, a receive stamped before its send or by a
          store not in ``to``: the message's send (the first send of that id in input order);
        - a message already received by this store: that store's first accepted receive of it
          (in input order);
        - a change number not above the store's previous one for the folder: the accepted change
          of that store and folder with the highest number before it in event order (time, then
          input order), i.e. the last one accepted before it;
        - a receive of a message never sent: none (no line caused it), like every stage-1 reject.

        A repeat of a rejected line names the same line as its first occurrence.
        """
        return cls.judge(parse_lines(lines, topo))

    @classmethod
    def judge(cls, lines: Iterable[Parsed]) -> EventLog:
        """The log of lines parsed one by one (``parse_lines``): the rules between lines
        (``build``) applied to them."""
        log = cls()
        parsed: list[tuple[Event, str, int, str]] = []
        for source, line_no, text, event in lines:
            log.lines_read += 1
            if isinstance(event, str):  # rejected on its own: the reason
                log.rejects.append(RejectRow(source, line_no, event, text))
            else:
                parsed.append((event, source, line_no, text))

        # Sends first: a receive may come before its send in the input (several stores' logs).
        # The first send of an id (in input order) is the message; later ones must agree.
        for ev, *_ in parsed:
            if ev.kind == "send" and ev.message is not None:
                log.messages.setdefault(ev.message.msg, ev.message)

        # stage-2 rejects: (source, line, reason, text, seq of the accepted line it conflicts with)
        pending: list[tuple[str, int, str, str, int | None]] = []
        outcome: dict[tuple[Any, ...], Stage2Reject | None] = {}  # key -> None (accepted) or its reject
        repeats: dict[tuple[Any, ...], list[tuple[str, int, str]]] = {}
        received: dict[tuple[str, str], int] = {}  # (store, msg) -> seq of its accepted receive
        accepted: list[Event] = []
        for ev, source, line_no, text in parsed:
            if ev.key in outcome:  # the same meaning again: decided by its first occurrence
                verdict = outcome[ev.key]
                if verdict is None:
                    repeats.setdefault(ev.key, []).append((source, line_no, text))
                else:
                    pending.append((source, line_no, verdict[0], text, verdict[1]))
                continue
            verdict = _check_between_lines(ev, log.messages, received)
            outcome[ev.key] = verdict
            if verdict is None:
                accepted.append(ev)
            else:
                pending.append((source, line_no, verdict[0], text, verdict[1]))

        # Change numbers of one origin only increase, in event order.
        last_cn: dict[tuple[str, str], tuple[int, int]] = {}  # (store, fid) -> (cn, seq) last accepted
        bad: dict[int, int] = {}  # seq of a rejected change -> seq of the change it is not above
        for ev in sorted((e for e in accepted if e.kind == "change"), key=lambda e: (e.ts, e.seq)):
            k = (ev.store, ev.fid or "")
            if k in last_cn and ev.cn is not None and ev.cn <= last_cn[k][0]:
                bad[ev.seq] = last_cn[k][1]
            else:
                last_cn[k] = (ev.cn or 0, ev.seq)
        if bad:
            where = {ev.seq: (src, n, text) for ev, src, n, text in parsed if ev.seq in bad}
            for seq in sorted(bad):
                source, line_no, text = where[seq]
                pending.append((source, line_no, R_CN_NOT_INCREASING, text, bad[seq]))
            for ev in accepted:
                if ev.seq in bad:  # its repeats share its fate
                    for source, line_no, text in repeats.pop(ev.key, []):
                        pending.append((source, line_no, R_CN_NOT_INCREASING, text, bad[ev.seq]))
            accepted = [e for e in accepted if e.seq not in bad]
        named = {c for *_, c in pending if c is not None}
        at = {ev.seq: (src, n) for ev, src, n, _ in parsed if ev.seq in named} if named else {}
        for source, line_no, reason, text, c in pending:
            log.rejects.append(
                RejectRow(source, line_no, reason, text, *(at[c] if c is not None else (None, None)))
            )
        log.duplicates = sum(len(v) for v in repeats.values())
        log.events = accepted
        log.rejects.sort(key=lambda r: (r.source, r.line))
        return log


def _check_between_lines(
    ev: Event, messages: dict[str, Message], received: dict[tuple[str, str], int]
) -> Stage2Reject | None:
    if ev.kind == "send":
        m = ev.message
        assert m is not None
        first = messages[m.msg]
        if first is not m:
            return R_MSG_REUSED, first.seq
        return None
    if ev.kind == "receive":
        msg_id = ev.msg_id or ""
        m = messages.get(msg_id)
        if m is None:
            return R_NEVER_SENT, None
        if ev.store not in m.to:
            return R_NOT_ADDRESSEE, m.seq
        if ev.ts < m.sent_at:
            return R_BEFORE_SEND, m.seq
        if (ev.store, msg_id) in received:
            return R_RECEIVED_TWICE, received[(ev.store, msg_id)]
        received[(ev.store, msg_id)] = ev.seq
        ev.message = m
        ev.fid = m.fid
        return None
    return None


# --------------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------------
def expand_paths(paths: Iterable[str | os.PathLike[str]]) -> list[str]:
    """Files, folders (every ``*.jsonl`` below: a ``topology.json`` beside the log is not read
    as events) and globs, sorted: the input order. A folder or glob matching nothing is an error,
    so a mistyped path never publishes an empty run."""
    out: list[str] = []
    for p in paths:
        s = str(p)
        if os.path.isdir(s):
            found = [
                os.path.join(root, f)
                for root, _dirs, files in os.walk(s)
                for f in files
                if f.endswith(".jsonl")
            ]
            if not found:
                raise FileNotFoundError(f"{s}: no *.jsonl event log in this folder")
            out.extend(found)
        elif any(c in s for c in "*?["):
            found = [f for f in glob.glob(s, recursive=True) if os.path.isfile(f)]
            if not found:
                raise FileNotFoundError(f"{s}: no file matches")
            out.extend(found)
        else:
            if not os.path.exists(s):
                raise FileNotFoundError(f"{s}: no such event log")
            out.append(s)
    return sorted(dict.fromkeys(out))


def read_lines(files: list[str]) -> Iterator[tuple[str, int, int, str | None]]:
    """Every physical line of every file, numbered from 1, with its global input position."""
    for index, path in enumerate(files):
        with open(path, "rb") as fh:
            for line_no, text in lines_of(fh):
                yield path, line_no, make_seq(index, line_no), text


def lines_of(fh: Iterable[bytes]) -> Iterator[tuple[int, str | None]]:
    """The physical lines of a binary file, numbered from 1; None for a line that is not UTF-8."""
    for line_no, raw in enumerate(fh, start=1):
        raw = raw.rstrip(b"\r\n")
        try:
            text: str | None = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        yield line_no, text


def parse_lines(lines: Iterable[tuple[str, int, int, str | None]], topo: Topology) -> Iterator[Parsed]:
    """Stage 1, each line on its own: ``(source, line_no, text, event or reject reason)``."""
    for source, line_no, seq, text in lines:
        yield (source, line_no, *parsed_line(text, topo, seq))


def parsed_line(text: str | None, topo: Topology, seq: int) -> tuple[str, Event | str]:
    """A line's text (empty when not UTF-8) and the event it is, or why it is rejected."""
    if text is None:
        return "", R_NOT_UTF8
    try:
        return text, parse_line(text, topo, seq)
    except Reject as r:
        return text, r.reason


def read_event_log(paths: Iterable[str | os.PathLike[str]], topo: Topology) -> EventLog:
    return EventLog.build(read_lines(expand_paths(paths)), topo)
