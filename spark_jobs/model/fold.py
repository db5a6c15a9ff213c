"""The fold: one observer store R, one folder F, its events in time order.

Everything the model says about (R, F) follows from R's own events for F (its changes, the
messages about F it processed and sent) plus F's replica-list changes and the org-wide up/down
timeline. ``FolderFold`` applies them one at a time and yields that group's rows of every
table, so the reference replay and the Spark job share this one heart.

Order inside one event: ``owned`` first, then ``believed``, then the backfill array. Requests
that fall due between events are made before the next later event, after those stamped the same.

One module over 500 lines on purpose: ``FolderFold`` is one state machine, and its steps (own
changes, beliefs, backfill entries, requests, the rows) all read and write the same state in a
fixed order; split apart, they would have to hand that state to each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pfscope.spark_jobs.model.cnset import EMPTY, CNSet, union_all
from pfscope.spark_jobs.model.events import Event, Message
from pfscope.spark_jobs.model.org import AFTER_ALL, OrgContext
from pfscope.spark_jobs.model.rules.deletion import unique_cns
from pfscope.spark_jobs.model.rules.health import replica_health
from pfscope.spark_jobs.model.rules.locality import is_local
from pfscope.spark_jobs.model.rules.responders import Responder, ResponderCandidate, responder_list
from pfscope.spark_jobs.model.rules.sources import Candidate, Ranked, algorithm_for, choose_sources
from pfscope.spark_jobs.model.rules.status import next_status_at, status_due
from pfscope.spark_jobs.model.rules.timeouts import backfill_timeout
from pfscope.spark_jobs.model.timeutil import US
from pfscope.spark_jobs.model.topology import HIERARCHY_FID

ACTIVE = "active"
DELETE_PENDING = "delete_pending"
DELETED = "deleted"

OPEN = "open"
SATISFIED = "satisfied"
ABANDONED = "abandoned"

CAUSE_CHANGE = "change"
CAUSE_REPLICAS = "replicas"


@dataclass(slots=True)
class SubjectRow:
    """What R knows of another store T for this folder: one row of R's state table."""

    believed: CNSet = EMPTY
    believed_key: tuple[int, int] | None = None  # (sent_at, seq) of the message it came from
    derived: bool = False  # that message's cnset was derived by the log's writer: a lower bound
    last_message_at: int | None = None
    transit_sum_us: int = 0
    transit_n: int = 0
    last_backfill_request_at: int | None = None
    responder_pick_at: int | None = None  # last status request that took it in group 1

    def mean_transit_us(self) -> int | None:
        return self.transit_sum_us // self.transit_n if self.transit_n else None


@dataclass(slots=True)
class Entry:
    """One backfill entry: CNs R found missing together, waiting, then requested."""

    entry_id: str
    number: int
    opened_at: int
    opened_by: str
    cnset_opened: CNSet
    remaining: CNSet
    new_replica: bool
    local: bool
    next_due: int
    state: str = OPEN
    closed_at: int | None = None
    requests: int = 0
    last_request_at: int | None = None
    last_attempt: tuple[int, str] | None = None  # (at, kind) of the latest attempt
    last_due_at: int | None = None  # when the latest attempt was due
    model_choice: frozenset[str] = frozenset()  # the sources the model chose at it
    awaiting: set[str] = field(default_factory=set)  # asked at the last attempt, no response yet


class _Discard(list[Any]):
    """A row list that keeps nothing: for callers that want the fold's decisions, not its tables."""

    def append(self, item: object) -> None:
        pass


@dataclass
class Rows:
    """The group's output rows, table by table (dicts keyed by the contract's column names)."""

    @classmethod
    def discarding(cls) -> Rows:
        return cls(**{name: _Discard() for name in cls.__dataclass_fields__})

    state_history: list[dict[str, Any]] = field(default_factory=list)
    backfill_requests: list[dict[str, Any]] = field(default_factory=list)
    backfill_candidates: list[dict[str, Any]] = field(default_factory=list)
    responders: list[dict[str, Any]] = field(default_factory=list)
    processed_status_requests: list[dict[str, Any]] = field(default_factory=list)
    replica_history: list[dict[str, Any]] = field(default_factory=list)
    next_requests: list[dict[str, Any]] = field(default_factory=list)
    next_candidates: list[dict[str, Any]] = field(default_factory=list)
    state_table: list[dict[str, Any]] = field(default_factory=list)
    backfill_entries: list[dict[str, Any]] = field(default_factory=list)
    replicas: list[dict[str, Any]] = field(default_factory=list)
    # a folder's forecast: made when its last group is folded (``model.forecast``), never by a fold
    forecast: list[dict[str, Any]] = field(default_factory=list)
    forecast_requests: list[dict[str, Any]] = field(default_factory=list)


class FolderFold:
    """The state of folder ``fid`` as store ``observer`` sees it."""

    def __init__(self, org: OrgContext, observer: str, fid: str, *, keep_rows: bool = True):
        """``keep_rows=False`` keeps only the state (the simulator's use): no table rows, no
        closed entries, so memory does not grow with the length of the log."""
        self.org = org
        self.topo = org.topology
        self.observer = observer
        self.fid = fid
        me = self.topo.stores[observer]
        self.site = me.site
        self.version = me.version
        self.preferred = me.preferred_backfill_source
        self.is_hierarchy = fid == HIERARCHY_FID
        self.replicas: tuple[str, ...] = self.topo.initial_replicas(fid)
        self.on_list = observer in self.replicas
        self.lifecycle: str | None = ACTIVE if self.on_list else None  # None: never a replica
        self.pending_since: int | None = None
        self.deleted_at: int | None = None
        self.owned: CNSet = EMPTY
        self.owned_derived = False  # some owned CN came by a derived change line or changes set
        self.last_sent_cn: int | None = None
        self.sent_own: CNSet = EMPTY  # its own CNs a message it sent carried (the rest wait for a cycle)
        self.last_change_at: int | None = None
        self.subjects: dict[str, SubjectRow] = {}
        self.unavailable: set[str] = set()
        self.keep_rows = keep_rows
        self.entries: list[Entry] = []
        self.entry_count = 0
        self.open: list[Entry] = []
        self.rows = Rows() if keep_rows else Rows.discarding()
        self._now: tuple[int, int] = (-(1 << 62), 0)  # (ts, seq) of the event being applied
        self._replica_state: tuple[Any, ...] | None = None  # the last replica_history row's state

    # ----------------------------------------------------------------------------------------
    # kept between runs
    # ----------------------------------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        """What a later run needs to fold on from here: no organisation (the next run brings
        its own timeline), no rows (written already) and no closed entries (their rows are final:
        nothing changes a closed entry)."""
        state = {k: v for k, v in vars(self).items() if k not in ("org", "topo", "rows")}
        state["entries"] = [e for e in self.entries if e.state == OPEN]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        vars(self).update(state)
        self.org = self.topo = None  # type: ignore[assignment]  # until resume() binds this run's
        self.rows = Rows() if self.keep_rows else Rows.discarding()

    def resume(self, org: OrgContext) -> FolderFold:
        """A fold read back from a previous run, bound to this run's organisation."""
        self.org, self.topo = org, org.topology
        return self

    # ----------------------------------------------------------------------------------------
    # driving
    # ----------------------------------------------------------------------------------------
    def apply(self, ev: Event) -> None:
        """Apply one event of this group; requests due strictly before it are made first."""
        self.advance(ev.ts, inclusive=False)
        self._now = (ev.ts, ev.seq)
        kind = ev.kind
        if kind == "change":
            self._on_change(ev)
        elif kind == "receive":
            assert ev.message is not None
            self._on_receive(ev.ts, ev.message)
        elif kind == "send":
            assert ev.message is not None
            self._on_send(ev.ts, ev.message)
        elif kind == "replicas":
            assert ev.replicas is not None
            self._on_replicas(ev.ts, ev.replicas)
        else:
            raise ValueError(f"event kind {kind!r} is not part of a folder's stream")
        if self.lifecycle == DELETE_PENDING:
            self._check_deleted(ev.ts)
        self._note_replica(ev.ts)

    def _note_replica(self, ts: int) -> None:
        """A ``replica_history`` row when the replica's list membership, lifecycle or status
        message due time changes, so a past step can be replayed whole."""
        if self.lifecycle is None:
            return  # never a replica of this folder (yet)
        due = status_due(self.last_change_at) if self.last_change_at is not None else None
        state = (self.on_list, self.lifecycle, due)
        if state != self._replica_state:
            self._replica_state = state
            self.rows.replica_history.append(
                {
                    "store": self.observer,
                    "fid": self.fid,
                    "at": ts,
                    "on_list": self.on_list,
                    "lifecycle": self.lifecycle,
                    "status_due": due,
                }
            )

    def advance(self, t: int, *, inclusive: bool = True) -> None:
        """Make every request due at or before ``t`` (strictly before, if not inclusive).

        A store that is down sends nothing: a request falling due while the observer is down
        waits for it, and falls due when it comes back up (after the events stamped then)."""
        while self.open:
            e = min(self.open, key=lambda x: (x.next_due, x.number))
            if e.next_due > t or (e.next_due == t and not inclusive):
                return
            if self.org.is_down(self.observer, e.next_due):
                up = self.org.next_up(self.observer, e.next_due)
                if up is None or up > t:
                    return  # every open entry waits: the observer is down until after ``t``
                e.next_due = up  # due when it comes back up, with the others due then, in order
                continue
            self.request_expected(e, e.next_due)

    def due_entries(self, t: int) -> list[Entry]:
        """Open entries due at or before ``t``, in the order they will be requested."""
        return sorted((e for e in self.open if e.next_due <= t), key=lambda x: (x.next_due, x.number))

    def request_expected(self, entry: Entry, t: int) -> None:
        """Make ``entry``'s due request as the model's own (nothing was seen sent)."""
        self._now = (t, AFTER_ALL)
        self._attempt(entry, t, None)

    def plan(self, entry: Entry, t: int) -> list[Ranked]:
        """The sources the model would ask for ``entry`` if it were requested now (no change)."""
        return self._rank(entry.remaining, t, AFTER_ALL, self.unavailable | entry.awaiting)

    # ----------------------------------------------------------------------------------------
    # events
    # ----------------------------------------------------------------------------------------
    def _on_change(self, ev: Event) -> None:
        assert ev.cn is not None
        self.last_sent_cn = ev.cn
        self.last_change_at = ev.ts
        self._own(ev.ts, CNSet.single(self.observer, ev.cn), CAUSE_CHANGE, derived=bool(ev.derived))

    def _on_receive(self, ts: int, m: Message) -> None:
        # owned first ...
        if m.changes is not None and m.changes:
            self.last_change_at = ts
            self._own(ts, m.changes, m.msg, derived="changes" in m.derived)
        if m.type == "status_request":
            self.rows.processed_status_requests.append(
                {"msg": m.msg, "responder": self.observer, "processed_at": ts, "owned": self.owned}
            )
        # ... then believed ...
        t = m.sender
        row = self.subjects.get(t)
        if row is None:
            row = self.subjects[t] = SubjectRow()
        row.last_message_at = ts
        row.transit_sum_us += ts - m.sent_at
        row.transit_n += 1
        self.unavailable.discard(t)
        if m.type == "backfill_response":
            for e in self.open:
                e.awaiting.discard(t)
        key = (m.sent_at, m.seq)
        if row.believed_key is not None and key < row.believed_key:
            return  # an older message processed later does not overwrite a newer one
        first = row.believed_key is None
        row.believed_key = key
        derived = "cnset" in m.derived
        if first or row.believed != m.cnset or row.derived != derived:
            row.believed = m.cnset
            row.derived = derived
            self._history(t, ts, m.cnset, m.msg, derived)
        # ... then the backfill array
        if self.on_list and t in self.replicas:
            self._open_entry(ts, m.msg, m.cnset)

    def _on_send(self, ts: int, m: Message) -> None:
        if m.changes:
            mine = m.changes.ranges(self.observer)
            if mine:
                self.sent_own = self.sent_own.union(CNSet({self.observer: mine}))
        if m.type == "backfill_request":
            self._observed_request(ts, m)
        elif m.type == "status_request":
            self._status_request(ts, m)

    def _on_replicas(self, ts: int, replicas: tuple[str, ...]) -> None:
        before = set(self.replicas)
        self.replicas = replicas
        was_on, now_on = self.on_list, self.observer in replicas
        self.on_list = now_on
        if was_on and not now_on:
            self.lifecycle = DELETE_PENDING
            self.pending_since = ts
            self.deleted_at = None
            for e in list(self.open):
                self._close(e, ABANDONED, ts)
        elif now_on and not was_on:
            self.lifecycle = ACTIVE
            self.pending_since = None
            self.deleted_at = None
            self._open_entry(ts, CAUSE_REPLICAS, self._believed_union(self.replicas))
        elif now_on:
            added = [s for s in replicas if s not in before]
            if added:
                self._open_entry(ts, CAUSE_REPLICAS, self._believed_union(added))

    # ----------------------------------------------------------------------------------------
    # owned, history, entries
    # ----------------------------------------------------------------------------------------
    def _own(self, ts: int, cns: CNSet, cause: str, *, derived: bool = False) -> None:
        """R now holds ``cns``; a CN that arrives by derived knowledge marks the row for good
        (owned only grows, so the inferred CN stays in it)."""
        new = cns.difference(self.owned)
        if not new:
            return
        self.owned.count(), new.count()  # counted once here, summed from here on
        self.owned = self.owned.union_disjoint(new)
        self.owned_derived = self.owned_derived or derived
        self._history(self.observer, ts, self.owned, cause, self.owned_derived)
        for e in list(self.open):
            left = e.remaining.difference(new)
            if left is not e.remaining:
                e.remaining = left
                if not left:
                    self._close(e, SATISFIED, ts)

    def _history(self, subject: str, ts: int, cnset: CNSet, cause: str, derived: bool) -> None:
        if not self.keep_rows:
            return
        self.rows.state_history.append(
            {
                "observer": self.observer,
                "fid": self.fid,
                "subject": subject,
                "at": ts,
                "cnset": cnset.text(),
                "cnset_count": cnset.count(),
                "cause": cause,
                "derived": derived,
            }
        )

    def _believed_union(self, stores: Any) -> CNSet:
        return union_all(
            self.subjects[s].believed for s in stores if s != self.observer and s in self.subjects
        )

    def _open_entry(self, ts: int, cause: str, revealed: CNSet) -> None:
        """Open one entry for the CNs just revealed that R lacks and no open entry covers."""
        fresh = revealed.difference(self.owned)
        if not fresh:
            return
        for e in self.open:
            fresh = fresh.difference(e.remaining)
            if not fresh:
                return
        self.entry_count += 1
        number = self.entry_count
        new_replica = not self.owned
        local = self._is_local(fresh, ts, self._now[1])
        e = Entry(
            entry_id=f"{self.observer}/{self.fid}/{number}",
            number=number,
            opened_at=ts,
            opened_by=cause,
            cnset_opened=fresh,
            remaining=fresh,
            new_replica=new_replica,
            local=local,
            next_due=ts + backfill_timeout(0, local, new_replica),
        )
        self.entries.append(e)
        self.open.append(e)

    def _close(self, e: Entry, state: str, ts: int) -> None:
        e.state = state
        e.closed_at = ts
        self.open.remove(e)
        if not self.keep_rows:
            self.entries.remove(e)

    def _is_local(self, remaining: CNSet, ts: int, seq: int) -> bool:
        same_site_up = (
            self.subjects[s].believed
            for s in self.replicas
            if s != self.observer
            and s in self.subjects
            and self.topo.stores[s].site == self.site
            and not self.org.is_down(s, ts, seq)
        )
        return is_local(remaining, same_site_up)

    # ----------------------------------------------------------------------------------------
    # backfill requests
    # ----------------------------------------------------------------------------------------
    def _rank(self, missing: CNSet, ts: int, seq: int, unavailable: set[str]) -> list[Ranked]:
        candidates = []
        for s in self.replicas:
            row = self.subjects.get(s)
            if s == self.observer or row is None:
                continue
            holds = row.believed.intersection(missing)
            if not holds:
                continue
            store = self.topo.stores[s]
            candidates.append(
                Candidate(
                    name=s,
                    same_site=store.site == self.site,
                    cost=self.topo.site_cost(self.site, store.site),
                    version=store.version,
                    down=self.org.is_down(s, ts, seq),
                    unavailable=s in unavailable,
                    preferred=self.preferred == s,
                    holds=holds,
                    last_backfill_request_at=row.last_backfill_request_at,
                    mean_transit_us=row.mean_transit_us(),
                )
            )
        return choose_sources(self.version, missing, candidates)

    def _attempt(self, e: Entry, ts: int, observed: Message | None) -> None:
        """One request of entry ``e``: expected (the model's own, at its due time) or observed."""
        due_at = e.next_due
        self.unavailable |= e.awaiting  # asked last time, no response before this request
        e.requests += 1
        e.last_request_at = ts
        kind = "observed" if observed is not None else "expected"
        e.last_attempt = (ts, kind)
        ranked = self._rank(e.remaining, ts, self._now[1], self.unavailable)
        algorithm = algorithm_for(self.version)
        model_choice = frozenset(r.candidate.name for r in ranked if r.chosen)
        e.last_due_at, e.model_choice = due_at, model_choice
        if observed is not None:
            part = observed.requested.intersection(e.remaining) if observed.requested else EMPTY
            asked = [(s, part) for s in observed.asked()]
        else:
            asked = [(r.candidate.name, r.assigned) for r in ranked if r.chosen]
        asked_names = {s for s, _ in asked}
        for r in ranked:
            c = r.candidate
            self.rows.backfill_candidates.append(
                {
                    "entry_id": e.entry_id,
                    "observer": self.observer,
                    "fid": self.fid,
                    "attempt": e.requests,
                    "at": ts,
                    "algorithm": algorithm,
                    "rank": r.rank,
                    "group": r.group,
                    "candidate": c.name,
                    "down": c.down,
                    "unavailable": c.unavailable,
                    "preferred": c.preferred,
                    "cost": c.cost,
                    "version": c.version,
                    "holds_count": c.holds_count,
                    "holds_all": e.remaining.issubset(c.holds),
                    "last_backfill_request_at": c.last_backfill_request_at,
                    "mean_transit_s": _seconds(c.mean_transit_us),
                    "chosen": r.chosen,
                    "assigned_cnset": r.assigned.text(),
                    "asked": c.name in asked_names,
                }
            )
        for source, part in asked:
            self._request_row(
                e.entry_id, e.requests, ts, kind, algorithm, source, part, due_at, source in model_choice
            )
        self._note_asked(ts, asked_names)
        e.awaiting = set(asked_names)
        e.local = self._is_local(e.remaining, ts, self._now[1])
        e.next_due = ts + backfill_timeout(e.requests, e.local, e.new_replica)

    def _observed_request(self, ts: int, m: Message) -> None:
        requested = m.requested or EMPTY
        hit = False
        for e in sorted(self.open, key=lambda x: x.number):
            if e.remaining.isdisjoint(requested):
                continue
            hit = True
            if e.last_attempt == (ts, "observed"):  # sent at the same time: the same attempt
                part = requested.intersection(e.remaining)
                algorithm = algorithm_for(self.version)
                for s in m.asked():
                    self._request_row(
                        e.entry_id,
                        e.requests,
                        ts,
                        "observed",
                        algorithm,
                        s,
                        part,
                        e.last_due_at,
                        s in e.model_choice,
                    )
                e.awaiting |= set(m.asked())
            else:
                self._attempt(e, ts, m)
        if not hit:  # a request the model has no entry for: kept, so it can be questioned
            for s in m.asked():
                self._request_row(
                    None, None, ts, "observed", algorithm_for(self.version), s, requested, None, None
                )
        self._note_asked(ts, set(m.asked()))

    def _note_asked(self, ts: int, names: set[str]) -> None:
        for s in names:
            row = self.subjects.get(s)
            if row is None:
                row = self.subjects[s] = SubjectRow()
            row.last_backfill_request_at = ts

    def _request_row(
        self,
        entry_id: str | None,
        attempt: int | None,
        ts: int,
        kind: str,
        algorithm: str,
        source: str,
        part: CNSet,
        due_at: int | None,
        model_chose: bool | None,
    ) -> None:
        self.rows.backfill_requests.append(
            {
                "entry_id": entry_id,
                "observer": self.observer,
                "fid": self.fid,
                "attempt": attempt,
                "at": ts,
                "kind": kind,
                "algorithm": algorithm,
                "source": source,
                "cnset": part.text(),
                "cnset_count": part.count(),
                "due_at": due_at,
                "model_chose": model_chose,
            }
        )

    # ----------------------------------------------------------------------------------------
    # status requests
    # ----------------------------------------------------------------------------------------
    def _next_requests(self, as_of: int) -> None:
        """Each open entry's next request, as the rules would make it when it falls due if nothing
        happened before then: beliefs and down stores as of ``as_of``, and the sources of its
        previous request marked unavailable (no response since). ``waiting``: the observer is
        down at ``as_of``, so the request waits for it."""
        waiting = self.org.is_down(self.observer, as_of)
        algorithm = algorithm_for(self.version)
        for e in sorted(self.open, key=lambda x: (x.next_due, x.number)):
            ranked = self._rank(e.remaining, as_of, AFTER_ALL, self.unavailable | e.awaiting)
            base = {
                "entry_id": e.entry_id,
                "observer": self.observer,
                "fid": self.fid,
                "due_at": e.next_due,
                "waiting": waiting,
                "algorithm": algorithm,
                "attempt": e.requests + 1,
            }
            for r in ranked:
                c = r.candidate
                self.rows.next_candidates.append(
                    {
                        **base,
                        "rank": r.rank,
                        "group": r.group,
                        "candidate": c.name,
                        "down": c.down,
                        "unavailable": c.unavailable,
                        "preferred": c.preferred,
                        "cost": c.cost,
                        "version": c.version,
                        "holds_count": c.holds_count,
                        "holds_all": e.remaining.issubset(c.holds),
                        "last_backfill_request_at": c.last_backfill_request_at,
                        "mean_transit_s": _seconds(c.mean_transit_us),
                        "chosen": r.chosen,
                        "assigned_cnset": r.assigned.text(),
                    }
                )
                if r.chosen:
                    self.rows.next_requests.append(
                        {
                            **base,
                            "source": c.name,
                            "rank": r.rank,
                            "cnset": r.assigned.text(),
                            "cnset_count": r.assigned.count(),
                        }
                    )

    def plan_responders(self) -> list[Responder]:
        """The responder list a status request sent now should name (no change)."""
        others = []
        for s in self.replicas:
            if s == self.observer:
                continue
            row = self.subjects.get(s) or SubjectRow()
            store = self.topo.stores[s]
            same = store.site == self.site
            picks = [x for x in (row.last_backfill_request_at, row.responder_pick_at) if x is not None]
            others.append(
                ResponderCandidate(
                    name=s,
                    same_site=same,
                    cost=None if same else self.topo.site_cost(self.site, store.site),
                    backfilled_at=max(picks) if picks else None,
                    heard=row.last_message_at is not None,
                    mean_transit_us=row.mean_transit_us(),
                    believed_count=row.believed.count(),
                    last_message_at=row.last_message_at,
                )
            )
        return responder_list(others)

    def _status_request(self, ts: int, m: Message) -> None:
        expected = self.plan_responders()
        named = set(m.responders or ())
        for r in expected:
            if r.group == "1":
                row = self.subjects.get(r.name)
                if row is None:
                    row = self.subjects[r.name] = SubjectRow()
                row.responder_pick_at = ts
        base = {
            "msg": m.msg,
            "requester": self.observer,
            "fid": self.fid,
            "sent_at": ts,
            "requester_cnset": m.cnset.text(),
        }
        for r in expected:
            self.rows.responders.append(
                {
                    **base,
                    "responder": r.name,
                    "position": r.position,
                    "group": r.group,
                    "expected": True,
                    "observed": r.name in named,
                }
            )
        listed = {r.name for r in expected}
        for s in m.responders or ():
            if s not in listed:
                self.rows.responders.append(
                    {
                        **base,
                        "responder": s,
                        "position": None,
                        "group": None,
                        "expected": False,
                        "observed": True,
                    }
                )

    # ----------------------------------------------------------------------------------------
    # deletion and the end of the fold
    # ----------------------------------------------------------------------------------------
    def unique(self) -> CNSet:
        return unique_cns(
            self.owned,
            (self.subjects[s].believed for s in self.replicas if s != self.observer and s in self.subjects),
        )

    def missing(self) -> CNSet:
        if not self.on_list:
            return EMPTY
        return self._believed_union(self.replicas).difference(self.owned)

    def _check_deleted(self, ts: int) -> None:
        if not self.unique():
            self.lifecycle = DELETED
            self.deleted_at = ts

    def finish(self, as_of: int) -> Rows:
        """Make the requests due by ``as_of`` and write the group's end-of-run rows."""
        self.advance(as_of)
        rows = self.rows
        base = {"observer": self.observer, "fid": self.fid}
        rows.state_table.append(
            {
                **base,
                "subject": self.observer,
                "is_self": True,
                "cnset": self.owned.text(),
                "cnset_count": self.owned.count(),
                "last_message_at": None,
                "mean_transit_s": None,
                "last_backfill_request_at": None,
                "last_sent_cn": self.last_sent_cn,
                "believed_sent_at": None,
                "unavailable": False,
                "on_list": self.on_list,
                "derived": self.owned_derived,
            }
        )
        for s in sorted(set(self.subjects) | {x for x in self.replicas if x != self.observer}):
            row = self.subjects.get(s) or SubjectRow()
            rows.state_table.append(
                {
                    **base,
                    "subject": s,
                    "is_self": False,
                    "cnset": row.believed.text(),
                    "cnset_count": row.believed.count(),
                    "last_message_at": row.last_message_at,
                    "mean_transit_s": _seconds(row.mean_transit_us()),
                    "last_backfill_request_at": row.last_backfill_request_at,
                    "last_sent_cn": None,
                    "believed_sent_at": row.believed_key[0] if row.believed_key else None,
                    "unavailable": s in self.unavailable,
                    "on_list": s in self.replicas,
                    "derived": row.derived,
                }
            )
        self._next_requests(as_of)
        for e in self.entries:
            rows.backfill_entries.append(
                {
                    "entry_id": e.entry_id,
                    **base,
                    "opened_at": e.opened_at,
                    "opened_by": e.opened_by,
                    "cnset_opened": e.cnset_opened.text(),
                    "cnset_opened_count": e.cnset_opened.count(),
                    "cnset_remaining": e.remaining.text(),
                    "cnset_remaining_count": e.remaining.count(),
                    "locality": "local" if e.local else "remote",
                    "new_replica": e.new_replica,
                    "state": e.state,
                    "closed_at": e.closed_at,
                    "requests": e.requests,
                    "last_request_at": e.last_request_at,
                    "next_due_at": e.next_due if e.state == OPEN else None,
                }
            )
        if self.lifecycle is not None:
            missing = self.missing()
            unique = EMPTY if self.lifecycle == DELETED else self.unique()
            rows.replicas.append(
                {
                    "store": self.observer,
                    "fid": self.fid,
                    "health": replica_health(self.lifecycle, (e.requests for e in self.open)),
                    "open_entries": len(self.open),
                    "missing_count": missing.count(),
                    "missing_cnset": missing.text(),
                    "unique_count": unique.count(),
                    "unique_cnset": unique.text(),
                    "on_list": self.on_list,
                    "delete_pending_since": self.pending_since,
                    "deleted_at": self.deleted_at,
                    "next_status_at": next_status_at(self.last_change_at, as_of),
                }
            )
        return rows


def _seconds(us: int | None) -> float | None:
    return None if us is None else us / US
