"""One folder played forward from the as-of by the engine, watched: when each replica holds what
it lacked, which stores supplied it, and what became of every backfill request.

The engine is the simulator's; the play starts it from copies of the folder's folds at the
as-of instead of from nothing, with no client changes and no replication cycles (they would have
nothing to send), and watches the events it makes through the engine's own hooks.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from pfscope.spark_jobs.model.cnset import EMPTY, CNSet
from pfscope.spark_jobs.model.engine import CONTENT_INTERVAL, HIERARCHY_INTERVAL, SentRequest, Simulator
from pfscope.spark_jobs.model.events import Event, Message
from pfscope.spark_jobs.model.fold import FolderFold, Rows
from pfscope.spark_jobs.model.forecast.actions import Action
from pfscope.spark_jobs.model.forecast.world import HORIZON, Transits, TypicalMail
from pfscope.spark_jobs.model.org import OrgContext
from pfscope.spark_jobs.model.rules.status import status_due
from pfscope.spark_jobs.model.topology import HIERARCHY_FID


@dataclass
class Answer:
    """The first backfill response to a request that its requester processed."""

    at: int
    cns: CNSet


@dataclass
class PlayResult:
    in_sync_at: dict[str, int] = field(default_factory=dict)
    sources: dict[str, set[str]] = field(default_factory=dict)
    requests: list[SentRequest] = field(default_factory=list)
    processed: dict[str, int] = field(default_factory=dict)  # request msg -> when its source processed it
    answers: dict[str, Answer] = field(default_factory=dict)  # request msg -> its first answer
    lost: set[str] = field(default_factory=set)  # request msgs whose replies the bound loses
    held: dict[str, CNSet] = field(default_factory=dict)  # each store's holding at the play's end
    missing: dict[str, CNSet] = field(default_factory=dict)  # what each store knows it lacks then
    up: dict[str, bool] = field(default_factory=dict)
    overdue: int = 0  # the bound: messages on their way at the as-of it takes as lost


def copy_folds(folds: Mapping[str, FolderFold], org: OrgContext) -> dict[str, FolderFold]:
    """The folds as a later run would read them back (open entries and state, no rows), bound to
    the play's organisation: the play never touches the folds it was given."""
    out = {}
    for store, fold in folds.items():
        copy: FolderFold = pickle.loads(pickle.dumps(fold)).resume(org)
        copy.keep_rows, copy.rows = False, Rows.discarding()
        out[store] = copy
    return out


def unsent_changes(fold: FolderFold) -> CNSet:
    """The store's own CNs of the folder that no message it sent carried yet."""
    own = fold.owned.ranges(fold.observer)
    return CNSet({fold.observer: own}).difference(fold.sent_own) if own else EMPTY


def copy_org(org: OrgContext) -> OrgContext:
    return OrgContext(
        org.topology,
        {s: list(k) for s, k in org._status_keys.items()},
        {s: list(v) for s, v in org._status_vals.items()},
    )


class Play(Simulator):
    """The engine from one folder's folds at ``as_of``, for ``HORIZON``; ``lose_first_reply`` (the
    bound): the replies to the first request of every entry that gets one are lost on the way, mail
    takes each pair's longest transit, and mail on its way that is already older than that, to a
    store that is up, is lost (the message-state rule calls it queued, not in transit); ``back``:
    stores that are down at the as-of and come back at it (what their return would do; in the
    bound, the mail queued for them is lost: it may expire before they are back); ``actions``: a
    plan's, each at its time (``forecast.actions``)."""

    def __init__(
        self,
        org: OrgContext,
        fid: str,
        folds: Mapping[str, FolderFold],
        targets: Mapping[str, CNSet],
        as_of: int,
        transits: Transits,
        *,
        lose_first_reply: bool = False,
        back: Iterable[str] = (),
        actions: Sequence[Action] = (),
    ):
        org = copy_org(org)
        topo = org.topology
        super().__init__(
            topo,
            None,
            start=as_of,
            end=as_of + HORIZON,
            network=TypicalMail(topo, transits, lose_first_reply),
            org=org,
        )
        self.fid = fid
        self.now = as_of
        # an answer goes as one message: its chunks would travel together (the same transit), and
        # a log's CN range of billions would make billions of them
        self.backfill_cn_limit = None
        mine = copy_folds(folds, org)
        self.folds = {(s, fid): f for s, f in mine.items()}
        self.held = {(s, fid): f.owned for s, f in mine.items()}
        self.up = {s: not org.is_down(s, as_of) for s in topo.stores}
        self.replicas = {fid: next(iter(mine.values())).replicas} if mine else {}
        self.targets = dict(targets)
        self.lose_first_reply = lose_first_reply
        self.back = sorted(s for s in back if not self.up.get(s, True))
        self.actions = sorted(a for a in actions if as_of <= a.at < as_of + HORIZON)
        self.result = PlayResult(sources={s: set() for s in targets})
        self._credited: dict[str, CNSet] = {s: EMPTY for s in targets}
        self._answering: Message | None = None
        self._reply_to: dict[str, str] = {}  # response msg -> request msg
        self._entry_of: dict[str, str] = {}  # request msg -> entry
        self._lost_entries: set[str] = set()

    def play(self, in_flight: Iterable[tuple[Message, str]]) -> PlayResult:
        """Schedule what is due (requests, status messages) and the mail on its way; play."""
        for store in self.back:
            self.at(self.now, self.store_status, store, True)
        for action in self.actions:  # a plan's (``forecast.actions``)
            self.at(action.at, self.store_status, action.store, action.up)
        for (store, fid), fold in sorted(self.folds.items()):
            self._schedule_due(store, fid, fold)
            if fold.last_change_at is not None and status_due(fold.last_change_at) > self.now:
                self._schedule_status(store, fid)
        for m, dst in in_flight:
            transit = self.net.transit(m.sender, dst)
            arrives = m.sent_at + transit
            if self.lose_first_reply and (
                dst in self.back or (arrives < self.now and self.up.get(dst, True))
            ):
                # the bound: overdue mail to a store that is up is lost, and so is mail queued for
                # a store that comes back (it may have expired by the time it is back)
                self.result.overdue += 1
                continue
            self.at(max(self.now, arrives), self._deliver, m, dst)
        for (store, fid), fold in sorted(self.folds.items()):
            unsent = unsent_changes(fold)
            if unsent:
                self.at(self.now + self._cycle, self._replicate, store, fid, unsent)
        self.run(ticks=False)
        self.result.requests = [r for r in self.sent_requests if r.fid == self.fid]
        self.result.held = {s: cns for (s, _), cns in self.held.items()}
        self.result.missing = {s: f.missing() for (s, _), f in self.folds.items()}
        self.result.up = dict(self.up)
        return self.result

    @property
    def _cycle(self) -> int:
        """How long until a store's next replication cycle, at the most (seed 003's intervals)."""
        return HIERARCHY_INTERVAL if self.fid == HIERARCHY_FID else CONTENT_INTERVAL

    def _replicate(self, store: str, fid: str, unsent: CNSet) -> None:
        """A store's own changes no message carried yet go to the other replicas in its next cycle
        (as one message: the engine's packing limits would only split it into messages that travel
        together); a store off the list sends them by status requests, not here."""
        others = [s for s in self.replicas.get(fid, ()) if s != store]
        if store in self.replicas.get(fid, ()):
            self._send(store, "hierarchy" if fid == HIERARCHY_FID else "content", fid, others, changes=unsent)

    # -- the engine's hooks ---------------------------------------------------------------------
    def _answer_backfill(self, store: str, m: Message) -> None:
        self._answering = m
        try:
            super()._answer_backfill(store, m)
        finally:
            self._answering = None

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
        m = super()._send(
            store, mtype, fid, to, changes=changes, requested=requested, source=source, responders=responders
        )
        if m is None:
            return None
        if self._answering is not None and mtype == "backfill_response":
            request = self._answering.msg
            self._reply_to[m.msg] = request
            entry = self._entry_of.get(request)
            first = entry not in self._lost_entries or request in self.result.lost
            if self.lose_first_reply and entry is not None and first:
                self._lost_entries.add(entry)
                self.result.lost.add(request)
        return m

    def _due(self, store: str, fid: str) -> None:
        before = len(self.sent_requests)
        super()._due(store, fid)
        for r in self.sent_requests[before:]:
            if r.msg is not None:
                self._entry_of[r.msg] = r.entry_id

    def _deliver(self, m: Message, dst: str) -> None:
        if self._reply_to.get(m.msg) in self.result.lost:
            return  # the bound: this reply never arrives
        super()._deliver(m, dst)

    def _feed(self, store: str, fid: str, ev: Event) -> None:
        super()._feed(store, fid, ev)
        m = ev.message
        if ev.kind != "receive" or m is None:
            return
        if m.type == "backfill_request":
            self.result.processed.setdefault(m.msg, self.now)
        request = self._reply_to.get(m.msg)
        if request is not None:  # every chunk of the reply counts; the first says when
            got = self.result.answers.get(request)
            cns = m.changes or EMPTY
            self.result.answers[request] = (
                Answer(self.now, cns) if got is None else Answer(got.at, got.cns.union(cns))
            )
        self._watch(store, m)

    def _watch(self, store: str, m: Message) -> None:
        """Credit ``m``'s sender with the lacked CNs it brought; note when the store holds all."""
        target = self.targets.get(store)
        if target is None or store in self.result.in_sync_at:
            return
        brought = (m.changes or EMPTY).intersection(target).difference(self._credited[store])
        if brought:
            self._credited[store] = self._credited[store].union(brought)
            self.result.sources[store].add(m.sender)
        if target.issubset(self.held.get((store, self.fid), EMPTY)):
            self.result.in_sync_at[store] = self.now
