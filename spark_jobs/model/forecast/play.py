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
from pfscope.spark_jobs.model.fold import OPEN, FolderFold, Rows, SubjectRow
from pfscope.spark_jobs.model.forecast.actions import (
    Action,
    Backup,
    Decommission,
    ReplicaChange,
    Restore,
    StoreStatus,
    in_order,
)
from pfscope.spark_jobs.model.forecast.world import HORIZON, Transits, TypicalMail
from pfscope.spark_jobs.model.org import OrgContext
from pfscope.spark_jobs.model.rules.health import DELETED
from pfscope.spark_jobs.model.rules.reality import lacks, really_unique
from pfscope.spark_jobs.model.rules.status import status_due
from pfscope.spark_jobs.model.timeutil import MINUTE
from pfscope.spark_jobs.model.topology import HIERARCHY_FID


@dataclass
class Answer:
    """The first backfill response to a request that its requester processed."""

    at: int
    cns: CNSet


@dataclass
class Risk:
    """Content a plan's action puts at risk: the CNs of ``fid`` that only ``store`` held when it
    went down, was removed from the list or was restored to an older copy (``cause``); ``until``:
    when a store on the list that is up held them all again (None: not within the horizon)."""

    at: int
    store: str
    fid: str
    cause: str  # DOWN, REMOVED or RESTORED
    cns: CNSet
    until: int | None = None


DOWN, REMOVED, RESTORED = "down", "removed", "restored"


@dataclass
class Traffic:
    """The folder's messages from one store to another in a play, backfill counted apart."""

    messages: int = 0
    requests: int = 0  # backfill requests
    responses: int = 0  # backfill responses
    cns: int = 0  # CNs the backfill responses carried


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
    #: a plan's actions changed the play: a list change or restore applied, an event ran while a
    #: store's up or down was the plan's, or the play ended so (False: the baseline's own play)
    diverged: bool = False
    #: what each replica lacked, to be in sync (a plan adds the replicas it adds or restores)
    targets: dict[str, CNSet] = field(default_factory=dict)
    removed: set[str] = field(default_factory=set)  # replicas a plan removed from the list
    risks: list[Risk] = field(default_factory=list)
    traffic: dict[tuple[str, str], Traffic] = field(default_factory=dict)  # (sender, recipient)


class FoldSnapshot:
    """A folder's folds at the as-of, pickled once: each play starts from its own copy (the folds
    as a later run would read them back: open entries and state, no rows), so no play touches the
    folds it was given, and the plays of one folder pickle them once."""

    def __init__(self, folds: Mapping[str, FolderFold]):
        self.blob = pickle.dumps(dict(folds), protocol=pickle.HIGHEST_PROTOCOL)

    def copies(self, org: OrgContext) -> dict[str, FolderFold]:
        """Fresh copies, bound to the play's organisation."""
        out: dict[str, FolderFold] = pickle.loads(self.blob)
        for fold in out.values():
            fold.resume(org)
            fold.keep_rows, fold.rows = False, Rows.discarding()
        return out


def copy_folds(folds: Mapping[str, FolderFold] | FoldSnapshot, org: OrgContext) -> dict[str, FolderFold]:
    """Copies of the folds for one play (``FoldSnapshot``)."""
    return (folds if isinstance(folds, FoldSnapshot) else FoldSnapshot(folds)).copies(org)


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
        folds: Mapping[str, FolderFold] | FoldSnapshot,
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
            folders=False,
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
        self._initial_up = dict(self.up)
        self._differs = False  # some store's up or down is the plan's, not the baseline's
        self.replicas = {fid: next(iter(mine.values())).replicas} if mine else {}
        self.targets = dict(targets)
        self.lose_first_reply = lose_first_reply
        self.back = sorted(s for s in back if not self.up.get(s, True))
        if any(isinstance(a, Decommission) for a in actions):
            raise ValueError("a decommission is played as the list changes and the down it makes")
        self.actions = in_order(a for a in actions if as_of <= a.at < as_of + HORIZON)
        self._acted = {a.store for a in self.actions if isinstance(a, StoreStatus)}
        self.result = PlayResult(sources={s: set() for s in targets}, targets=self.targets)
        self._credited: dict[str, CNSet] = {s: EMPTY for s in targets}
        self._answering: Message | None = None
        self._reply_to: dict[str, str] = {}  # response msg -> request msg
        self._entry_of: dict[str, str] = {}  # request msg -> entry
        self._lost_entries: set[str] = set()
        self._unsent: dict[str, CNSet] = {}  # own changes a store that is down sends once back

    def play(self, in_flight: Iterable[tuple[Message, str]]) -> PlayResult:
        """Schedule what is due (requests, status messages) and the mail on its way; play."""
        for store in self.back:
            self.at(self.now, self.store_status, store, True)
        for action in self.actions:  # a plan's (``forecast.actions``), in their order
            if isinstance(action, StoreStatus):
                self.at(action.at, self._status_change, action)
            elif isinstance(action, ReplicaChange) and action.fid == self.fid:
                self.at(action.at, self._list_change, action)
            elif isinstance(action, Restore):
                self.at(action.at, self._restore, action)
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
        self.result.diverged |= self._differs
        self.result.requests = [r for r in self.sent_requests if r.fid == self.fid]
        self.result.held = {s: cns for (s, _), cns in self.held.items()}
        # what each replica not in sync knows it lacks (why it is blocked; the others need none)
        self.result.missing = {
            s: self.folds[(s, self.fid)].missing()
            for s in self.targets
            if s not in self.result.in_sync_at and (s, self.fid) in self.folds
        }
        self.result.up = dict(self.up)
        return self.result

    @property
    def _cycle(self) -> int:
        """How long until a store's next replication cycle, at the most (seed 003's intervals)."""
        return HIERARCHY_INTERVAL if self.fid == HIERARCHY_FID else CONTENT_INTERVAL

    def _event(self) -> None:
        """Every event of the play: one while the plan holds a store's status changes the play."""
        if self._differs:
            self.result.diverged = True

    def _replicate(self, store: str, fid: str, unsent: CNSet) -> None:
        """A store's own changes no message carried yet go to the other replicas in its next cycle
        (as one message: the engine's packing limits would only split it into messages that travel
        together); a store off the list sends them by status requests, not here. A store that is
        down sends them in its first cycle once it is back; one restored to a backup without them
        no longer holds them."""
        self._event()
        unsent = unsent.intersection(self.held.get((store, fid), EMPTY))
        if not unsent:
            return
        if not self.up.get(store, True):
            self._unsent[store] = unsent
            return
        others = [s for s in self.replicas.get(fid, ()) if s != store]
        if store in self.replicas.get(fid, ()):
            self._send(store, "hierarchy" if fid == HIERARCHY_FID else "content", fid, others, changes=unsent)

    # -- a plan's actions ------------------------------------------------------------------------
    def change(
        self, store: str, fid: str, *, op: str = "modify", item: str | None = None, nbytes: int = 2048
    ) -> None:
        """No client changes in the play (a list change's own hierarchy change included)."""

    def _status_change(self, a: StoreStatus) -> None:
        if not a.up and self.up.get(a.store, False):
            self._put_at_risk(a.store, DOWN, self.held.get((a.store, self.fid), EMPTY))
        self.store_status(a.store, a.up)
        self._differs = any(self.up[s] != self._initial_up[s] for s in self._acted)
        if a.up and a.store in self._unsent:
            self.at(self.now + self._cycle, self._replicate, a.store, self.fid, self._unsent.pop(a.store))
        self._check_risks()

    def _list_change(self, a: ReplicaChange) -> None:
        listed = self.replicas.get(self.fid, ())
        if a.added == (a.store in listed):
            return  # on the list already, or not on it: nothing to change
        self.result.diverged = True
        if a.added:
            self.set_replicas(a.store, self.fid, (*listed, a.store))
            self.result.removed.discard(a.store)
            self._new_target(a.store)
        else:
            self.set_replicas(a.store, self.fid, tuple(s for s in listed if s != a.store))
            self.result.removed.add(a.store)
            self.targets.pop(a.store, None)
            self.result.in_sync_at.pop(a.store, None)
            self._put_at_risk(a.store, REMOVED, self.held.get((a.store, self.fid), EMPTY))
        self._check_risks()

    def _restore(self, a: Restore) -> None:
        """The store's copy of the folder goes back to the backup's; it asks for the folder's
        status (a minute later, as a list change's requests go) and backfills what it lacks."""
        key = (a.store, self.fid)
        backup = a.backup(self.fid)
        if key not in self.folds and not backup.owned:
            return  # it held nothing of the folder, then or now
        self.result.diverged = True
        fold = self.fold(a.store, self.fid)
        held = self.held.get(key, EMPTY)
        self._put_at_risk(a.store, RESTORED, held.difference(backup.owned))
        restore_fold(fold, backup)
        self.held[key] = backup.owned
        if fold.on_list:
            self.result.in_sync_at.pop(a.store, None)
            self._new_target(a.store)
            self.at(self.now + MINUTE, self._status_request, a.store, self.fid)
        self._check_risks()

    def _listed_holdings(self, but: str) -> list[CNSet]:
        return [self.held.get((s, self.fid), EMPTY) for s in self.replicas.get(self.fid, ()) if s != but]

    def _new_target(self, store: str) -> None:
        """A replica the plan adds or restores must hold what the list holds now."""
        lacking = lacks(self.held.get((store, self.fid), EMPTY), self._listed_holdings(store))
        if lacking:
            self.targets[store] = lacking
            self.result.sources.setdefault(store, set())
            self._credited[store] = EMPTY
        else:
            self.targets.pop(store, None)

    def _put_at_risk(self, store: str, cause: str, cns: CNSet) -> None:
        """What of ``cns`` no other store on the list holds is at risk from now."""
        only = really_unique(cns, self._listed_holdings(store))
        for r in self.result.risks:  # already at risk (a removed replica then taken down)
            if r.store == store and r.until is None:
                only = only.difference(r.cns)
        if only:
            self.result.risks.append(Risk(self.now, store, self.fid, cause, only))

    def _check_risks(self) -> None:
        """A risk ends when stores on the list that are up hold its CNs again."""
        open_risks = [r for r in self.result.risks if r.until is None]
        if not open_risks:
            return
        safe = [
            self.held.get((s, self.fid), EMPTY)
            for s in self.replicas.get(self.fid, ())
            if self.up.get(s, True) and self.fold(s, self.fid).lifecycle != DELETED
        ]
        for r in open_risks:
            if not really_unique(r.cns, safe):
                r.until = self.now

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
        if fid == self.fid:
            self._count(m)
        if self._answering is not None and mtype == "backfill_response":
            request = self._answering.msg
            self._reply_to[m.msg] = request
            entry = self._entry_of.get(request)
            first = entry not in self._lost_entries or request in self.result.lost
            if self.lose_first_reply and entry is not None and first:
                self._lost_entries.add(entry)
                self.result.lost.add(request)
        return m

    def _count(self, m: Message) -> None:
        for dst in m.to:
            t = self.result.traffic.setdefault((m.sender, dst), Traffic())
            t.messages += 1
            if m.type == "backfill_request":
                t.requests += 1
            elif m.type == "backfill_response":
                t.responses += 1
                t.cns += (m.changes or EMPTY).count()

    def _status(self, store: str, fid: str) -> None:
        self._event()
        super()._status(store, fid)

    def _status_request(self, store: str, fid: str, retry: bool = False) -> None:
        self._event()
        super()._status_request(store, fid, retry)

    def _due(self, store: str, fid: str) -> None:
        self._event()
        before = len(self.sent_requests)
        super()._due(store, fid)
        for r in self.sent_requests[before:]:
            if r.msg is not None:
                self._entry_of[r.msg] = r.entry_id

    def _deliver(self, m: Message, dst: str) -> None:
        self._event()
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
        if m.changes and self.result.risks:
            self._check_risks()

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


def restore_fold(fold: FolderFold, backup: Backup) -> None:
    """``fold`` as the backup has it: its owned set and state table (each other store's belief, as
    if no message from it had come since), with no backfill entry open (the status request and its
    answers file them again) and no store marked unavailable."""
    fold.owned = backup.owned
    fold.subjects = {s: SubjectRow(believed=cns) for s, cns in backup.believed.items() if s != fold.observer}
    fold.open.clear()
    fold.entries = [e for e in fold.entries if e.state != OPEN]
    fold.unavailable.clear()
