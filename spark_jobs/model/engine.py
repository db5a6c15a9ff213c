"""The rules played forward: a discrete-event engine of public folder replication. The
simulator drives it with client changes and a random network to write event logs; the forecast
drives it from the folds at the as-of with the pairs' typical transits.

Stores make client changes, replicate hierarchy every 5 minutes and content every 15 (with
seed 003's packing limits), mail travels with delays by site cost, can be lost or queued while a
store is down, and replica lists change. Every protocol decision (when a backfill request falls
due, which sources it asks, which responders a status request names, when a status message is
due, whether a responder answers) is asked of the model: each store keeps a ``FolderFold`` per
folder fed with exactly the events the replay will feed it, so the log it writes is one the model
explains. What a store really holds is kept apart (``held``), by the simulator's own bookkeeping:
the test oracle compares it with the replay's ``owned``.

Events are written in time order as they happen, so memory stays bounded by the state of the
organisation, not the length of the log.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TextIO

from pfscope.spark_jobs.model.cnset import EMPTY, CNSet
from pfscope.spark_jobs.model.events import Event, Message, make_seq
from pfscope.spark_jobs.model.fold import DELETE_PENDING, FolderFold
from pfscope.spark_jobs.model.org import OrgContext
from pfscope.spark_jobs.model.rules.should_respond import should_respond
from pfscope.spark_jobs.model.rules.status import status_due
from pfscope.spark_jobs.model.rules.timeouts import QUEUE_EXPIRY
from pfscope.spark_jobs.model.timeutil import MINUTE, SECOND, format_ts
from pfscope.spark_jobs.model.topology import HIERARCHY_FID, Topology

HIERARCHY_INTERVAL = 5 * MINUTE  # Replication Send Folder Tree
CONTENT_INTERVAL = 15 * MINUTE  # Replication Send Always
HIERARCHY_FOLDER_LIMIT = 20  # folders per hierarchy message
CONTENT_ITEM_LIMIT = 100  # items per content message
CONTENT_BYTES_LIMIT = 300 * 1024  # bytes per content message (a bigger item goes alone)
BACKFILL_CN_LIMIT = 100  # CNs per backfill response message

# Action phases at one instant: ordinary work first, then due backfill requests (the model
# makes requests due at t after the events stamped t).
PHASE_WORK = 0
PHASE_DUE = 1


@dataclass
class SentRequest:
    """The simulator's own record of a backfill request it sent (the oracle's other side)."""

    store: str
    fid: str
    at: int
    source: str
    cnset: str
    entry_id: str = ""
    attempt: int = 0
    msg: str | None = None


class Mail(Protocol):
    """How long mail takes between two stores, and whether it is lost: a scenario's random
    network, or the forecast's typical transits."""

    def transit(self, src: str, dst: str) -> int: ...

    def lost(self, t: int, src: str, dst: str) -> bool: ...


@dataclass
class Stats:
    events: int = 0
    messages: int = 0
    lost: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)


class Simulator:
    """Runs the organisation from ``start`` to ``end`` and writes each event as it happens
    (``out`` None: writes nothing, for a play whose subclass watches the events itself)."""

    def __init__(
        self,
        topo: Topology,
        out: TextIO | None,
        *,
        start: int,
        end: int,
        network: Mail,
        queue_expiry: int | None = QUEUE_EXPIRY,
        on_progress: Callable[[int, int], None] | None = None,
        org: OrgContext | None = None,
        folders: bool = True,
    ):
        """``folders`` False: no replica list or path of the topology's folders is set up (a
        play of one folder sets its own; the topology may have thousands)."""
        self.topo = topo
        self.out = out
        self.start, self.end = start, end
        self.net = network
        self.queue_expiry = queue_expiry  # mail for a down store waits this long; None: dropped
        self.on_progress = on_progress
        self.org = org if org is not None else OrgContext(topo)
        #: CNs a backfill response carries at most (None: all in one message)
        self.backfill_cn_limit: int | None = BACKFILL_CN_LIMIT
        self.stats = Stats()
        self.now = start
        self._heap: list[tuple[int, int, int, Callable[..., None], tuple[Any, ...]]] = []
        self._order = 0
        self._line = 0
        self._msg_no = 0
        self.up: dict[str, bool] = {s: True for s in topo.stores}
        self.mailbox: dict[str, list[tuple[Message, str]]] = {s: [] for s in topo.stores}
        self.replicas: dict[str, tuple[str, ...]] = {HIERARCHY_FID: topo.store_names()}
        self.paths: dict[str, str] = {}
        if folders:
            self.replicas.update({f.fid: f.replicas for f in topo.folders.values()})
            self.paths = {f.fid: f.path for f in topo.folders.values()}
        self.replica_events: dict[str, list[Event]] = {}
        self.folds: dict[tuple[str, str], FolderFold] = {}
        self.held: dict[tuple[str, str], CNSet] = {}
        self.next_cn: dict[tuple[str, str], int] = {}
        self.pending: dict[str, dict[str, list[tuple[int, int]]]] = {s: {} for s in topo.stores}
        self.due_at: dict[tuple[str, str], int] = {}
        self.status_at: dict[tuple[str, str], int] = {}
        self.sent_requests: list[SentRequest] = []

    # ----------------------------------------------------------------------------------------
    # scheduling
    # ----------------------------------------------------------------------------------------
    def at(self, t: int, action: Callable[..., None], *args: Any, phase: int = PHASE_WORK) -> None:
        if t <= self.end:
            self._order += 1
            heapq.heappush(self._heap, (t, phase, self._order, action, args))

    def run(self, *, ticks: bool = True) -> Stats:
        """Play until nothing is left to do by ``end``; ``ticks=False``: no replication cycles
        (a play with no client changes has nothing for them to send)."""
        for i, s in enumerate(sorted(self.topo.stores) if ticks else ()):
            offset = (i * 37 * SECOND) % HIERARCHY_INTERVAL
            self.at(self.start + offset, self._hierarchy_tick, s)
            self.at(self.start + offset + 2 * MINUTE, self._content_tick, s)
        last_report = self.start
        while self._heap:
            t, _phase, _n, action, args = heapq.heappop(self._heap)
            self.now = t
            action(*args)
            if self.on_progress and t - last_report >= 3_600 * SECOND:
                last_report = t
                self.on_progress(t - self.start, self.end - self.start)
        if self.on_progress:
            self.on_progress(self.end - self.start, self.end - self.start)
        return self.stats

    # ----------------------------------------------------------------------------------------
    # writing events and feeding the model
    # ----------------------------------------------------------------------------------------
    def _emit(self, record: dict[str, Any]) -> int:
        """Count a record and write it, when there is a log to write (its time and CN sets are
        made text only then: a plan's plays write nothing)."""
        self._line += 1
        if self.out is not None:
            text = {
                k: format_ts(v) if k == "ts" else v.text() if isinstance(v, CNSet) else v
                for k, v in record.items()
            }
            self.out.write(json.dumps(text, separators=(",", ":")) + "\n")
        self.stats.events += 1
        self.stats.by_kind[record["kind"]] = self.stats.by_kind.get(record["kind"], 0) + 1
        return make_seq(0, self._line)

    def fold(self, store: str, fid: str) -> FolderFold:
        f = self.folds.get((store, fid))
        if f is None:
            f = self.folds[(store, fid)] = FolderFold(self.org, store, fid, keep_rows=False)
            for ev in self.replica_events.get(fid, ()):  # the list changes it would have seen
                f.apply(ev)
        return f

    def _feed(self, store: str, fid: str, ev: Event) -> None:
        f = self.fold(store, fid)
        f.apply(ev)
        self._schedule_due(store, fid, f)

    def _schedule_due(self, store: str, fid: str, f: FolderFold) -> None:
        """Make sure a due check runs at the fold's earliest due time. A store that is down sends
        nothing: its entries wait, and coming back up schedules them (``store_status``)."""
        if not f.open or not self.up[store]:
            return
        t = max(min(e.next_due for e in f.open), self.now)
        key = (store, fid)
        pending = self.due_at.get(key)
        if pending is None or t < pending:
            self.due_at[key] = t
            self.at(t, self._due, store, fid, phase=PHASE_DUE)

    def cnset(self, store: str, fid: str) -> CNSet:
        return self.held.get((store, fid), EMPTY)

    def _hold(self, store: str, fid: str, cns: CNSet) -> None:
        self.held[(store, fid)] = self.cnset(store, fid).union(cns)

    # ----------------------------------------------------------------------------------------
    # client changes and replica lists (called by scenarios)
    # ----------------------------------------------------------------------------------------
    def change(
        self, store: str, fid: str, *, op: str = "modify", item: str | None = None, nbytes: int = 2048
    ) -> None:
        """A client change on ``store`` to ``fid``, if the store is up and holds a replica."""
        if not self.up[store] or store not in self.replicas.get(fid, ()):
            return
        key = (store, fid)
        cn = self.next_cn.get(key, 0) + 1
        self.next_cn[key] = cn
        rec = {"ts": self.now, "store": store, "kind": "change", "fid": fid, "cn": cn, "op": op}
        if item is not None:
            rec["item"] = item
        rec["bytes"] = nbytes
        seq = self._emit(rec)
        self._hold(store, fid, CNSet.single(store, cn))
        self.pending[store].setdefault(fid, []).append((cn, nbytes))
        self._feed(store, fid, Event(ts=self.now, seq=seq, store=store, kind="change", fid=fid, cn=cn))
        self._schedule_status(store, fid)

    def set_replicas(self, admin: str, fid: str, replicas: tuple[str, ...], path: str | None = None) -> None:
        """An administrator changes a folder's replica list on ``admin``: a ``replicas`` event,
        a hierarchy change, and status requests from the stores added and removed."""
        before = set(self.replicas.get(fid, ()))
        rec: dict[str, Any] = {
            "ts": self.now,
            "store": admin,
            "kind": "replicas",
            "fid": fid,
            "replicas": list(replicas),
        }
        if path is not None:
            rec["path"] = path
            self.paths[fid] = path
        seq = self._emit(rec)
        self.replicas[fid] = replicas
        ev = Event(ts=self.now, seq=seq, store=admin, kind="replicas", fid=fid, replicas=replicas, path=path)
        self.replica_events.setdefault(fid, []).append(ev)
        for store in sorted({s for (s, f) in self.folds if f == fid} | set(replicas)):
            if (store, fid) in self.folds:
                self._feed(store, fid, ev)
            else:
                self.fold(store, fid)
                self._schedule_due(store, fid, self.folds[(store, fid)])
        self.change(admin, HIERARCHY_FID, op="modify", item=f"folder {fid}", nbytes=512)
        for store in sorted(set(replicas) ^ before):
            self.at(self.now + MINUTE, self._status_request, store, fid)

    def store_status(self, store: str, up: bool) -> None:
        if self.up[store] == up:
            return
        seq = self._emit(
            {
                "ts": self.now,
                "store": store,
                "kind": "store_status",
                "status": "up" if up else "down",
            }
        )
        self.org.add_status(store, self.now, seq, not up)
        self.up[store] = up
        if up:
            waiting, self.mailbox[store] = self.mailbox[store], []
            for i, (m, _) in enumerate(waiting):
                self.at(self.now + (i + 1) * SECOND, self._deliver, m, store)
            for (s, fid), f in sorted(self.folds.items()):  # the requests that waited fall due now
                if s == store:
                    self._schedule_due(store, fid, f)

    # ----------------------------------------------------------------------------------------
    # messages
    # ----------------------------------------------------------------------------------------
    def _send(
        self,
        store: str,
        mtype: str,
        fid: str,
        to: list[str],
        *,
        changes: CNSet | None = None,
        requested: CNSet | None = None,
        source: str | None = None,
        responders: list[str] | None = None,
    ) -> Message | None:
        if not to or not self.up[store]:
            return None
        self._msg_no += 1
        msg_id = f"<{self._msg_no:08X}@{self.topo.stores[store].server}>"
        cnset = self.cnset(store, fid)
        rec: dict[str, Any] = {
            "ts": self.now,
            "store": store,
            "kind": "send",
            "msg": msg_id,
            "type": mtype,
            "fid": fid,
            "to": to,
            "cnset": cnset,
        }
        if changes is not None:
            rec["changes"] = changes
        if requested is not None:
            rec["requested"] = requested
        if source is not None:
            rec["source"] = source
        if responders is not None:
            rec["responders"] = responders
        seq = self._emit(rec)
        m = Message(
            msg_id,
            store,
            mtype,
            fid,
            tuple(to),
            cnset,
            changes,
            requested,
            source,
            tuple(responders) if responders is not None else None,
            self.now,
            seq,
        )
        self.stats.messages += 1
        self._feed(store, fid, Event(ts=self.now, seq=seq, store=store, kind="send", fid=fid, message=m))
        for dst in to:
            if self.net.lost(self.now, store, dst):
                self.stats.lost += 1
                continue
            self.at(self.now + self.net.transit(store, dst), self._deliver, m, dst)
        return m

    def _deliver(self, m: Message, dst: str) -> None:
        if not self.up[dst]:
            if self.queue_expiry is not None:
                self.mailbox[dst].append((m, dst))
            else:
                self.stats.lost += 1
            return
        if self.queue_expiry is not None and self.now - m.sent_at > self.queue_expiry:
            self.stats.lost += 1  # expired in the queue
            return
        seq = self._emit({"ts": self.now, "store": dst, "kind": "receive", "msg": m.msg})
        if m.changes:
            self._hold(dst, m.fid, m.changes)
        self._feed(dst, m.fid, Event(ts=self.now, seq=seq, store=dst, kind="receive", fid=m.fid, message=m))
        if m.changes:
            self._schedule_status(dst, m.fid)
        if m.type == "backfill_request":
            self._answer_backfill(dst, m)
        elif self._answers_status_request(dst, m):
            self._send(dst, "status", m.fid, [m.sender])

    def _answers_status_request(self, store: str, m: Message) -> bool:
        """Named as a responder, and it holds more than the requester (seed 000)."""
        return (
            m.type == "status_request"
            and store in (m.responders or ())
            and should_respond(m.cnset, self.cnset(store, m.fid))
        )

    def _answer_backfill(self, store: str, m: Message) -> None:
        """Send what was asked for and is held, in messages of at most 100 CNs; maybe none."""
        have = (m.requested or EMPTY).intersection(self.cnset(store, m.fid))
        mtype = "backfill_response"
        limit = self.backfill_cn_limit
        chunks = (_chunks(have, limit) if limit is not None else [have] if have else []) or [EMPTY]
        for part in chunks:
            self._send(store, mtype, m.fid, [m.sender], changes=part)

    # ----------------------------------------------------------------------------------------
    # periodic work
    # ----------------------------------------------------------------------------------------
    def _hierarchy_tick(self, store: str) -> None:
        self.at(self.now + HIERARCHY_INTERVAL, self._hierarchy_tick, store)
        if not self.up[store]:
            return
        items = self.pending[store].pop(HIERARCHY_FID, None)
        if not items:
            return
        others = [s for s in self.replicas[HIERARCHY_FID] if s != store]
        for i in range(0, len(items), HIERARCHY_FOLDER_LIMIT):
            batch = items[i : i + HIERARCHY_FOLDER_LIMIT]
            self._send(store, "hierarchy", HIERARCHY_FID, others, changes=_cns(store, batch))

    def _content_tick(self, store: str) -> None:
        self.at(self.now + CONTENT_INTERVAL, self._content_tick, store)
        if not self.up[store]:
            return
        for fid in sorted(f for f in self.pending[store] if f != HIERARCHY_FID):
            items = self.pending[store].pop(fid)
            others = [s for s in self.replicas.get(fid, ()) if s != store]
            if store not in self.replicas.get(fid, ()):
                others = []  # no longer a replica: its unique content goes by status requests
            batch: list[tuple[int, int]] = []
            size = 0
            for cn, nbytes in items:
                if batch and (len(batch) >= CONTENT_ITEM_LIMIT or size + nbytes > CONTENT_BYTES_LIMIT):
                    self._send(store, "content", fid, others, changes=_cns(store, batch))
                    batch, size = [], 0
                batch.append((cn, nbytes))
                size += nbytes
            if batch:
                self._send(store, "content", fid, others, changes=_cns(store, batch))

    def _due(self, store: str, fid: str) -> None:
        """Backfill requests due now: sent to the model's chosen sources when the store is up;
        otherwise (or with no source) the model's expected request happens unseen."""
        f = self.fold(store, fid)
        if self.due_at.get((store, fid)) == self.now:
            del self.due_at[(store, fid)]
        skipped: set[str] = set()
        while True:
            due = [e for e in f.due_entries(self.now) if e.entry_id not in skipped]
            if not due:
                break
            e = due[0]
            chosen = [r for r in f.plan(e, self.now) if r.chosen] if self.up[store] else []
            if not chosen:
                skipped.add(e.entry_id)
                continue
            attempt = e.requests + 1
            for r in chosen:
                src = r.candidate.name
                sent = self._send(store, "backfill_request", fid, [src], requested=r.assigned, source=src)
                self.sent_requests.append(
                    SentRequest(
                        store,
                        fid,
                        self.now,
                        src,
                        r.assigned.text(),
                        e.entry_id,
                        attempt,
                        sent.msg if sent is not None else None,
                    )
                )
        f.advance(self.now)
        self._schedule_due(store, fid, f)

    def _schedule_status(self, store: str, fid: str) -> None:
        u = self.fold(store, fid).last_change_at
        if u is None:
            return
        t = status_due(u)
        if self.status_at.get((store, fid)) != t:  # many changes share one status run
            self.status_at[(store, fid)] = t
            self.at(t, self._status, store, fid)

    def _status(self, store: str, fid: str) -> None:
        """The 24-hour status message, if no later change moved it."""
        u = self.fold(store, fid).last_change_at
        if u is None or status_due(u) != self.now or store not in self.replicas.get(fid, ()):
            return
        others = [s for s in self.replicas[fid] if s != store]
        self._send(store, "status", fid, others)

    def _status_request(self, store: str, fid: str, retry: bool = False) -> None:
        """Sent by a store added to or removed from a replica list; a removed one retries every
        12 hours while it is delete pending, having first sent what only it holds."""
        f = self.fold(store, fid)
        on_list = store in self.replicas.get(fid, ())
        if retry and (on_list or f.lifecycle != DELETE_PENDING):
            return
        others = [s for s in self.replicas.get(fid, ()) if s != store]
        if not others:
            return
        if self.up[store]:
            if not on_list:
                unique = f.unique()
                if unique:
                    self._send(store, "content", fid, others, changes=unique)
            responders = [r.name for r in f.plan_responders()]
            self._send(store, "status_request", fid, others, responders=responders)
        if not on_list and f.lifecycle == DELETE_PENDING:
            self.at(self.now + 12 * 3_600 * SECOND, self._status_request, store, fid, True)


def _cns(origin: str, items: list[tuple[int, int]]) -> CNSet:
    out = EMPTY
    for cn, _ in items:
        out = out.add(origin, cn)
    return out


def _chunks(s: CNSet, limit: int) -> list[CNSet]:
    """Split a set into pieces of at most ``limit`` CNs, in origin and CN order."""
    out: list[CNSet] = []
    cur: dict[str, list[tuple[int, int]]] = {}
    n = 0
    for origin, ranges in s.items():
        for lo, hi in ranges:
            while lo <= hi:
                take = min(hi - lo + 1, limit - n)
                cur.setdefault(origin, []).append((lo, lo + take - 1))
                n += take
                lo += take
                if n == limit:
                    out.append(CNSet({o: tuple(r) for o, r in cur.items()}))
                    cur, n = {}, 0
    if n:
        out.append(CNSet({o: tuple(r) for o, r in cur.items()}))
    return out
