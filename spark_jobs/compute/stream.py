"""Streaming sorted groups through the fold, for ``mapInArrow``.

Spark hands a partition as a sequence of Arrow record batches, sorted by (fid, observer, ts, seq):
every group of a folder is in the same partition, one after the other, after the folder's
replica-list changes (observer null, sent once: each observer folds them among its own events,
and a store named only by them gets a group of them alone). Groups are cut where the key
changes, carried across batch boundaries, and each group's rows of every table come out in
one frame with a ``table`` column (``FOLDED_COLUMNS``), so one pass yields all tables. When a folder's last group
is folded, the comparisons between its folds (knowledge lag, should-respond) are made with the
replay's own functions. Per-group Python calls are what cost here (a pandas UDF per group): this pays per
batch instead.

Arrow batches go in and out as plain Python lists (no pandas frame per batch: building and
converting those cost more than the fold's own work on small groups). Plain Python and pyarrow:
no Spark import, so it is testable without a session.
"""

from __future__ import annotations

import base64
import json
import pickle
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, fields
from typing import Any, NamedTuple

import pyarrow as pa

from pfscope.spark_jobs.model.cnset import EMPTY, CNSet
from pfscope.spark_jobs.model.events import Event, Message
from pfscope.spark_jobs.model.fold import FolderFold, Rows
from pfscope.spark_jobs.model.forecast import Transits, forecast_folder
from pfscope.spark_jobs.model.org import OrgContext
from pfscope.spark_jobs.model.replay import add_lag, add_reality, add_should_respond
from pfscope.spark_jobs.model.rules.timeouts import QUEUE_EXPIRY
from pfscope.spark_jobs.model.tables import TABLES
from pfscope.spark_jobs.model.topology import Topology, topology_from_text
from pfscope.spark_jobs.runtime.collector import cyclic_gc_paused

GROUP_START = "group"  # a row that only says "this group exists" (it may have no events)
#: a folder's fold state, kept with a run so the next one folds on from it (``FolderState``): in
#: the stream, a row before the folder's others; out of it, a row of this "table"
FOLD_STATE = "fold_state"

#: the fold's tables, and those of them the stream hands out (processed status requests are
#: only read inside it, by the should-respond comparison)
FOLD_TABLES = tuple(f.name for f in fields(Rows))
OUT_TABLES = tuple(name for name in FOLD_TABLES if name in TABLES)
#: the tables whose rows wait for their folder's last group (the comparisons between folds)
_HELD = ("state_table", "responders", "processed_status_requests", "replicas")


#: the table whose rows are most of the fold's output (one per change of belief: a million at
#: a million events): its rows travel in columns of their own
HISTORY = "state_history"


def row_columns(table: str) -> dict[str, str]:
    """A fold table's columns as the fold holds them (times as epoch microseconds)."""
    return {c: "long" if k == "timestamp" else k for c, k in TABLES[table]}


def row_ddl(table: str) -> str:
    """The schema a fold table's JSON row is read back with."""
    return ", ".join(f"`{c}` {k}" for c, k in row_columns(table).items())


#: the fold's output frame: ``table``, the history's columns, and ``row``: every other table's
#: row as one JSON text (a few per cent of the rows: columns of their own would be nulls in all
#: the rest, and a null costs in every Arrow batch, every cached row and every projection)
FOLDED_COLUMNS = {"table": "string", **row_columns(HISTORY), "row": "string"}


def folded_ddl() -> str:
    return ", ".join(f"`{c}` {k}" for c, k in FOLDED_COLUMNS.items())


class _CNCache:
    """Parse each CN set text once per partition: a message's sets reach many groups."""

    def __init__(self) -> None:
        self._seen: dict[str, CNSet] = {}

    def __call__(self, text: Any) -> CNSet | None:
        if text is None:
            return None
        s = self._seen.get(text)
        if s is None:
            if len(self._seen) > 200_000:
                self._seen.clear()
            s = self._seen[text] = CNSet.parse_canonical(text)
        return s


def _tuple(v: Any) -> tuple[str, ...] | None:
    return None if v is None else tuple(v)


def event_from_row(r: Any, cn: _CNCache, messages: dict[tuple[str, str], Message] | None = None) -> Event:
    """One stream row (a group's event, receives joined with their message) to a model Event.

    ``messages``: the Messages already built for this folder (a message reaches the groups of
    all its addressees, folded in the same task), by (id, kind): built once each."""
    kind = r.kind
    if kind == "change":
        return Event(
            ts=r.ts,
            seq=r.seq,
            store=r.observer,
            kind=kind,
            fid=r.fid,
            cn=int(r.cn),
            derived=_tuple(r.derived) or (),
        )
    if kind == "replicas":
        return Event(
            ts=r.ts, seq=r.seq, store=r.event_store, kind=kind, fid=r.fid, replicas=_tuple(r.replicas)
        )
    m = None if messages is None else messages.get((r.msg, kind))
    if m is None:
        if kind == "send":
            sender, sent_at, msg_seq = r.observer, r.ts, r.seq
        else:
            sender, sent_at, msg_seq = r.sender, int(r.sent_at), int(r.msg_seq)
        m = Message(
            r.msg,
            sender,
            r.type,
            r.fid,
            _tuple(r.to) or (),
            cn(r.cnset) or EMPTY,
            cn(r.changes),
            cn(r.requested),
            r.source,
            _tuple(r.responders),
            sent_at,
            msg_seq,
            _tuple(r.derived) or (),
        )
        if messages is not None:
            messages[(r.msg, kind)] = m
    return Event(ts=r.ts, seq=r.seq, store=r.observer, kind=kind, fid=r.fid, message=m)


_ARROW_TYPES = {
    "string": pa.string(),
    "long": pa.int64(),
    "int": pa.int32(),
    "boolean": pa.bool_(),
    "double": pa.float64(),
    "array<string>": pa.list_(pa.string()),
}


def arrow_schema(columns: dict[str, str]) -> pa.Schema:
    """The Arrow schema Spark expects back for these Spark SQL column types."""
    return pa.schema([(c, _ARROW_TYPES[k]) for c, k in columns.items()])


def tuples_batch(rows: Sequence[tuple[Any, ...]], schema: pa.Schema) -> pa.RecordBatch:
    """Rows as tuples (in the schema's column order) as one record batch, column by column."""
    values = list(zip(*rows, strict=True)) or [()] * len(schema)
    return pa.RecordBatch.from_arrays(
        [pa.array(v, type=f.type) for v, f in zip(values, schema, strict=True)], schema=schema
    )


FOLDED_SCHEMA = arrow_schema(FOLDED_COLUMNS)
_HISTORY_SCHEMA = arrow_schema(row_columns(HISTORY))
_ROW_COLUMNS = {name: tuple(row_columns(name)) for name in OUT_TABLES}


def table_batch(name: str, rows: list[dict[str, Any]]) -> pa.RecordBatch:
    """One fold table's rows as a record batch of the folded frame: the history's rows
    converted by Arrow in one call; any other table's rows as JSON texts."""
    n = len(rows)
    arrays: list[pa.Array] = [pa.array([name] * n, type=pa.string())]
    if name == FOLD_STATE:  # the folder in ``fid``, its state in ``row``
        arrays += [
            pa.array([r["fid"] for r in rows], type=f.type) if f.name == "fid" else pa.nulls(n, type=f.type)
            for f in _HISTORY_SCHEMA
        ]
        arrays.append(pa.array([r["blob"] for r in rows], type=pa.string()))
    elif name == HISTORY:
        own = pa.RecordBatch.from_pylist(rows, schema=_HISTORY_SCHEMA)
        arrays += own.columns
        arrays.append(pa.nulls(n, type=pa.string()))
    else:
        arrays += [pa.nulls(n, type=f.type) for f in _HISTORY_SCHEMA]
        cols = _ROW_COLUMNS[name]
        arrays.append(
            pa.array(
                [
                    json.dumps({c: r.get(c) for c in cols}, ensure_ascii=False, separators=(",", ":"))
                    for r in rows
                ],
                type=pa.string(),
            )
        )
    return pa.RecordBatch.from_arrays(arrays, schema=FOLDED_SCHEMA)


class StreamRow(NamedTuple):
    """A group stream row, as ``compute.group_stream`` selects it (what the fold reads): every
    column but the first five is null in the rows of kinds that do not read it."""

    observer: str | None  # null: a replica-list change, or a fold state
    fid: str
    kind: str
    ts: int
    seq: int
    cn: int | None
    msg: str | None
    type: str | None
    sender: str | None
    sent_at: int | None
    msg_seq: int | None
    to: list[str] | None
    cnset: str | None
    changes: str | None
    requested: str | None
    source: str | None
    responders: list[str] | None
    replicas: list[str] | None
    event_store: str | None
    derived: list[str] | None
    blob: str | None  # a fold state's


#: the columns of a group stream row, as ``compute.group_stream`` selects them (what the fold reads)
STREAM_COLUMNS = StreamRow._fields


def stream_rows(batches: Iterable[pa.RecordBatch]) -> Iterator[StreamRow]:
    """Rows of sorted record batches, in order."""
    for batch in batches:
        d = batch.to_pydict()
        d.setdefault("blob", [None] * batch.num_rows)  # a stream with no fold state may leave it out
        yield from map(StreamRow._make, zip(*(d[c] for c in STREAM_COLUMNS), strict=True))


def org_payload(
    topology_json: dict[str, Any],
    status: list[tuple[str, int, int, bool]],
    transits: list[tuple[str, str, int, int]] | None = None,
) -> str:
    """What every task needs of the organisation, as one string to ship with the task (the
    closure holds only it: a 43,000-folder topology pickled as objects was 7 MB, 0.43 s to
    unpickle in each task): the up/down timeline, each pair's median and longest transit
    (microseconds, for the forecast) and the topology."""
    # JSON texts hold no raw newline
    return json.dumps(status) + "\n" + json.dumps(transits or []) + "\n" + json.dumps(topology_json)


def organisation(payload: str) -> tuple[Topology, list[list[Any]], Transits]:
    """The topology, the up/down timeline and the pairs' transits of an ``org_payload``; the
    topology is parsed once per Python worker (``topology_from_text``)."""
    status, transits, topology = payload.split("\n", 2)
    pairs = json.loads(transits)
    medians = {(a, b): int(median) for a, b, median, _ in pairs}
    longest = {(a, b): int(most) for a, b, _, most in pairs}
    return topology_from_text(topology), json.loads(status), Transits(medians, longest)


@dataclass
class FolderState:
    """A folder's fold state, as a run keeps it for the next: its replica-list changes so far
    (a store first named later still folds them all), each observer's fold (``FolderFold``'s own
    pickling drops what the next run brings or what is written already), and the rows the
    comparisons between folds read again (status requests and who processed them)."""

    lists: list[Event]
    folds: dict[str, FolderFold]
    responders: list[dict[str, Any]]
    processed: list[dict[str, Any]]
    mail: list[tuple[Message, str]]  # the folder's mail on its way at the as-of, with its recipient


def dump_state(state: FolderState) -> str:
    """As text for the ``row`` column. Pickle: the state is the fold's own objects; a run reads
    only states its own code version wrote (``state``), from its own output folder."""
    return base64.b64encode(pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)).decode("ascii")


def load_state(text: str) -> FolderState:
    state = pickle.loads(base64.b64decode(text))  # our own output, of this code version (state.py)
    if not isinstance(state, FolderState):
        raise ValueError("not a pfscope fold state")
    return state


def fold_partitions(
    payload: str, as_of: int, flush_rows: int = 20_000, keep_state: bool = False
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function: sorted group rows in, folded table rows out; with
    ``keep_state``, each folder's state too (a row of ``FOLD_STATE``)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        topo, status, transits = organisation(payload)
        org = OrgContext(topo)
        for store, ts, seq, down in status:
            org.add_status(store, ts, seq, down)
        part = _Partition(org, as_of, transits, keep_state)
        with cyclic_gc_paused():
            for r in stream_rows(batches):
                part.row(r)
                if part.held >= flush_rows:
                    yield from part.flush()
            part.end_folder()
            yield from part.flush()

    return run


class _Partition:
    """One partition's folders as their rows stream past.

    A folder's rows come as its state from the previous run, if any (``FOLD_STATE``: its folds
    go on from there), its replica-list changes (observer null: each is sent once, whoever
    observes the folder), then each observer's group: a start row (for the stores the topology
    lists) and its own events. Every observer folds the list changes in time order among its own
    events; a store named only by a list change gets a group of those alone, in its sorted place
    (the replay's ``group_events``). A fold read back that no new row reaches is still finished
    at the new as-of."""

    def __init__(self, org: OrgContext, as_of: int, transits: Transits, keep_state: bool = False) -> None:
        self.org, self.as_of, self.transits, self.keep_state = org, as_of, transits, keep_state
        self.cn = _CNCache()
        self.pending = Rows()  # rows ready to go out
        self.states: list[dict[str, Any]] = []  # folder states ready to go out
        self.held = 0  # how many
        self.done: set[str] = set()  # folders finished in this partition
        self.fid: str | None = None
        self.fold: FolderFold | None = None  # the group being folded
        self.next_list = 0  # the first of the folder's list changes its fold has not seen
        self._start_folder(None)

    def _start_folder(self, fid: str | None) -> None:
        self.fid = fid
        self.lists: list[Event] = []  # the folder's replica-list changes, in (ts, seq) order
        self.listed: list[str] | None = None  # stores named by them and not folded yet, sorted
        self.folder = Rows()  # the folder's rows that wait for its last group
        self.owned: dict[tuple[str, str], CNSet] = {}  # the folder's folds: (observer, fid) -> owned
        self.messages: dict[tuple[str, str], Message] = {}  # the folder's messages
        self.restored: dict[str, FolderFold] = {}  # folds read back, not folded on yet
        self.lists_seen = 0  # how many of ``lists`` the folds read back have applied
        self.finished: dict[str, FolderFold] = {}  # the folder's folds, finished
        self.mail: list[tuple[Message, str]] = []  # on its way at the previous run's as-of
        self.sent: list[Message] = []  # the folder's sends in the stream
        self.got: set[tuple[str, str]] = set()  # (msg, recipient) of its receives in the stream

    def row(self, r: StreamRow) -> None:
        if r.fid != self.fid:
            self.end_folder()
            if r.fid in self.done:
                raise ValueError(f"the rows of folder {r.fid!r} are not contiguous in the partition")
            self._start_folder(r.fid)
        if r.kind == FOLD_STATE:  # first of the folder's rows (observer null, the least time)
            assert r.blob is not None
            self._restore(load_state(r.blob))
            return
        if r.observer is None:  # a replica-list change: before every group of the folder
            if self.listed is not None:
                raise ValueError(f"a replica-list change of folder {r.fid!r} after its groups")
            self.lists.append(event_from_row(r, self.cn))
            return
        if self.fold is None or r.observer != self.fold.observer:
            self._end_group()
            self._fold_listed(before=r.observer)
            self._start_group(r.observer)
        if r.kind != GROUP_START:
            ev = event_from_row(r, self.cn, self.messages)
            if ev.message is not None:
                if ev.kind == "send":
                    self.sent.append(ev.message)
                else:
                    self.got.add((ev.message.msg, ev.store))
            self._apply_lists(until=(ev.ts, ev.seq))
            assert self.fold is not None  # the group's, started above
            self.fold.apply(ev)

    def _restore(self, state: FolderState) -> None:
        if self.lists or self.restored:
            raise ValueError(f"folder {self.fid!r}: a fold state after its other rows")
        self.lists = list(state.lists)
        self.lists_seen = len(self.lists)
        self.restored = state.folds
        self.folder.responders.extend(state.responders)
        self.folder.processed_status_requests.extend(state.processed)
        self.mail = list(state.mail)

    def _start_group(self, observer: str) -> None:
        fold = self.restored.pop(observer, None)
        if fold is not None:  # folds on from the previous run: it has applied the lists it knew
            self.fold, self.next_list = fold.resume(self.org), self.lists_seen
        else:
            self.fold, self.next_list = FolderFold(self.org, observer, self.fid or ""), 0

    def _apply_lists(self, until: tuple[int, int] | None = None) -> None:
        """The folder's list changes up to ``until`` (all of them: None) the fold has not seen."""
        assert self.fold is not None
        lists, i = self.lists, self.next_list
        while i < len(lists) and (until is None or (lists[i].ts, lists[i].seq) < until):
            self.fold.apply(lists[i])
            i += 1
        self.next_list = i

    def _end_group(self) -> None:
        if self.fold is not None:
            self._apply_lists()
            self.held += _finish(self.fold, self.as_of, self.pending, self.folder, self.owned)
            self.finished[self.fold.observer] = self.fold
            self.fold = None

    def _fold_listed(self, before: str | None) -> None:
        """Groups for the stores named only by list changes, up to ``before`` (None: all)."""
        if self.listed is None:
            self.listed = sorted({s for ev in self.lists for s in ev.replicas or ()}, reverse=True)
        listed = self.listed
        while listed and (before is None or listed[-1] < before):
            self._start_group(listed.pop())
            self._end_group()
        if listed and listed[-1] == before:
            listed.pop()  # it has a group of its own

    def end_folder(self) -> None:
        """The folder's last group is folded: its lag and should-respond figures, as the replay
        makes them, and its state for the next run."""
        if self.fid is None:
            return
        self._end_group()
        self._fold_listed(before=None)
        for observer in sorted(self.restored):  # folds read back that no new row reached
            self._start_group(observer)
            self._end_group()
        self.held += _compare(self.folder, self.owned, self.pending, self.done, self.fid)
        mail = self._in_flight()
        ahead = forecast_folder(self.org, self.fid, self.finished, mail, self.as_of, self.transits)
        self.pending.forecast.extend(ahead.forecast)
        self.pending.forecast_requests.extend(ahead.requests)
        self.held += len(ahead.forecast) + len(ahead.requests)
        if self.keep_state:
            state = FolderState(
                self.lists, self.finished, self.folder.responders, self.folder.processed_status_requests, mail
            )
            self.states.append({"fid": self.fid, "blob": dump_state(state)})
            self.held += 1
        self.fid = None

    def _in_flight(self) -> list[tuple[Message, str]]:
        """The folder's mail on its way at the as-of (``forecast.tables.in_flight``'s rule): what
        was on its way at the previous run's and the sends since, less what their recipients
        processed since, sent less than the queue expiry before the as-of."""
        sent = self.mail + [(m, dst) for m in self.sent for dst in m.to]
        return [
            (m, dst)
            for m, dst in sent
            if (m.msg, dst) not in self.got and self.as_of - m.sent_at < QUEUE_EXPIRY
        ]

    def flush(self) -> Iterator[pa.RecordBatch]:
        yield from _flush(self.pending)
        if self.states:
            yield table_batch(FOLD_STATE, self.states)
        self.pending, self.states, self.held = Rows(), [], 0


def _finish(
    fold: FolderFold, as_of: int, pending: Rows, folder: Rows, owned: dict[tuple[str, str], CNSet]
) -> int:
    """A group's rows: those of the held tables wait for the folder, the rest go out."""
    rows = fold.finish(as_of)
    owned[(fold.observer, fold.fid)] = fold.owned
    n = 0
    for name in FOLD_TABLES:
        chunk = getattr(rows, name)
        if name in _HELD:
            getattr(folder, name).extend(chunk)
        else:
            getattr(pending, name).extend(chunk)
            n += len(chunk)
    return n


def _compare(
    folder: Rows, owned: dict[tuple[str, str], CNSet], pending: Rows, done: set[str], fid: str
) -> int:
    """A folder's last group is folded: its lag, should-respond and what-is-so figures, as the
    replay makes them."""
    done.add(fid)
    add_lag(folder.state_table, owned)
    add_should_respond(folder.responders, folder.processed_status_requests, owned)
    add_reality(folder.replicas, owned)
    pending.state_table.extend(folder.state_table)
    pending.responders.extend(folder.responders)
    pending.replicas.extend(folder.replicas)
    return len(folder.state_table) + len(folder.responders) + len(folder.replicas)


def _flush(rows: Rows) -> Iterator[pa.RecordBatch]:
    for name in OUT_TABLES:
        chunk = getattr(rows, name)
        if chunk:
            yield table_batch(name, chunk)
