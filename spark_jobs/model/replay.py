"""The reference replay: every group of the event log through the fold, in one process.

It is the plain, obvious oracle the Spark job is tested against, and the engine behind small
runs. ``replay`` returns every table of the data contract as a list of row dicts (times as epoch
microseconds); ``spark_jobs.model.tables`` turns them into typed frames.
"""

from __future__ import annotations

import bisect
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pfscope.spark_jobs.model.cnset import EMPTY, CNSet
from pfscope.spark_jobs.model.events import Event, EventLog, Message
from pfscope.spark_jobs.model.fold import FolderFold, Rows
from pfscope.spark_jobs.model.forecast.tables import forecast_tables, in_flight
from pfscope.spark_jobs.model.forecast.world import Transits
from pfscope.spark_jobs.model.org import OrgContext
from pfscope.spark_jobs.model.rules.health import DELETE_PENDING, DELETED
from pfscope.spark_jobs.model.rules.reality import at_risk, replica_reality
from pfscope.spark_jobs.model.rules.should_respond import should_respond
from pfscope.spark_jobs.model.rules.transit import median_transit
from pfscope.spark_jobs.model.timeutil import US, default_as_of, now_us
from pfscope.spark_jobs.model.topology import HIERARCHY_FID, Topology

GroupKey = tuple[str, str]  # (observer, fid)


@dataclass
class FoldStart:
    """A folder's folds as an earlier run left them at its as-of ``at``, with the rows the
    comparisons between folds read again: the replay folds each on from there with its events
    stamped after ``at`` (``compute.kept_folds`` says when that equals folding from the first
    event). A group it holds no fold of is folded from its first event."""

    at: int
    folds: dict[str, FolderFold]
    responders: list[dict[str, Any]]
    processed: list[dict[str, Any]]


@dataclass
class ReplayResult:
    as_of: int
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    folds: dict[GroupKey, FolderFold] = field(default_factory=dict)
    #: each folder's status requests and who processed them (a folder's fold state keeps them)
    processed: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: each folder's mail on its way at the as-of, with its recipient (``in_flight``)
    mail: dict[str, list[tuple[Message, str]]] = field(default_factory=dict)


def group_key(ev: Event) -> GroupKey | None:
    """The (observer, folder) group an event of one store belongs to; None for org-wide ones."""
    if ev.kind in ("change", "send", "receive"):
        assert ev.fid is not None
        return (ev.store, ev.fid)
    return None


def observers_by_folder(topo: Topology, events: Iterable[Event]) -> dict[str, set[str]]:
    """Every store that is ever a replica of a folder or has an event for it."""
    out: dict[str, set[str]] = defaultdict(set)
    out[HIERARCHY_FID].update(topo.stores)
    for f in topo.folders.values():
        out[f.fid].update(f.replicas)
        out[f.fid]
    for ev in events:
        if ev.kind == "replicas":
            assert ev.fid is not None and ev.replicas is not None
            out[ev.fid].update(ev.replicas)
        else:
            k = group_key(ev)
            if k is not None:
                out[k[1]].add(k[0])
    return out


def group_events(topo: Topology, events: list[Event]) -> dict[GroupKey, list[Event]]:
    """Each group's stream in time order: its own events plus its folder's replica-list changes."""
    observers = observers_by_folder(topo, events)
    groups: dict[GroupKey, list[Event]] = {(o, f): [] for f, os in observers.items() for o in os}
    for ev in events:
        if ev.kind == "replicas":
            assert ev.fid is not None
            for o in observers[ev.fid]:
                groups[(o, ev.fid)].append(ev)
        else:
            k = group_key(ev)
            if k is not None:
                groups[k].append(ev)
    for stream in groups.values():
        stream.sort(key=lambda e: (e.ts, e.seq))
    return groups


def replay(
    topo: Topology,
    log: EventLog,
    as_of: int | None = None,
    *,
    run_id: str = "replay",
    clock: int | None = None,
    starts: Mapping[str, FoldStart] | None = None,
) -> ReplayResult:
    """``clock``: the run's clock (now, unless a test pins it), which bounds the default as-of;
    ``starts``: folders whose folds go on from an earlier run's (their final rows made by its
    as-of are that run's, not made again)."""
    started = time.time()
    if as_of is None:
        as_of = default_as_of(log.last_ts(), now_us() if clock is None else clock)
    applied = [e for e in log.events if e.ts <= as_of]
    org = OrgContext.build(topo, (e for e in applied if e.kind == "store_status"))
    result = ReplayResult(as_of=as_of)
    all_rows = Rows()
    starts = starts or {}
    for start in starts.values():
        all_rows.responders.extend(start.responders)
        all_rows.processed_status_requests.extend(start.processed)
    for fid, start in starts.items():
        result.processed[fid] = list(start.processed)
    for key, stream in sorted(group_events(topo, applied).items()):
        fold, stream = _fold_of(org, key, stream, starts.get(key[1]))
        for ev in stream:
            fold.apply(ev)
        rows = fold.finish(as_of)
        for name, chunk in vars(rows).items():
            getattr(all_rows, name).extend(chunk)
        result.folds[key] = fold
        result.processed.setdefault(key[1], []).extend(rows.processed_status_requests)
    t = result.tables
    t["state_table"] = all_rows.state_table
    t["state_history"] = all_rows.state_history
    t["backfill_entries"] = all_rows.backfill_entries
    t["backfill_requests"] = all_rows.backfill_requests
    t["backfill_candidates"] = all_rows.backfill_candidates
    t["replica_history"] = all_rows.replica_history
    t["next_requests"] = all_rows.next_requests
    t["next_candidates"] = all_rows.next_candidates
    t["replicas"] = all_rows.replicas
    owned = {key: fold.owned for key, fold in result.folds.items()}
    add_lag(t["state_table"], owned)
    t["responders"] = add_should_respond(all_rows.responders, all_rows.processed_status_requests, owned)
    add_reality(t["replicas"], owned)
    t["stores"] = stores_table(topo, org, as_of)
    add_at_risk(t["replicas"], {s["store"] for s in t["stores"] if s["status"] == "down"})
    t["store_periods"] = store_periods_table(org)
    t["folders"] = folders_table(topo, applied)
    t["replica_lists"] = replica_lists_table(topo, applied)
    add_paths(t["replicas"], t["folders"])
    t["messages"] = messages_table(applied)
    t["transits"] = transits_table(t["messages"])
    result.mail = in_flight(applied, as_of)
    t["forecast"], t["forecast_requests"] = forecast_tables(
        result.folds, org, result.mail, as_of, Transits.from_rows(t["transits"])
    )
    t["rejects"] = [
        {
            "source": r.source,
            "line": r.line,
            "reason": r.reason,
            "text": r.text,
            "conflict_source": r.conflict_source,
            "conflict_line": r.conflict_line,
        }
        for r in log.rejects
    ]
    t["summary"] = [
        {
            "run_id": run_id,
            "as_of": as_of,
            "lines_read": log.lines_read,
            "accepted": log.accepted,
            "duplicates": log.duplicates,
            "rejected": len(log.rejects),
            "started_at": int(started * 1_000_000),
            "finished_at": int(time.time() * 1_000_000),
            "refresh": "full",
            "refresh_reason": "the replay reads the whole log",
            "lines_new": log.lines_read,
            "folders_refolded": None,
            "folders_carried": None,
            "lines_rejudged": None,
            "folders_from_start": None,
        }
    ]
    return result


# --------------------------------------------------------------------------------------------
# the two comparisons between folds, and the org-wide tables
# --------------------------------------------------------------------------------------------
def _fold_of(
    org: OrgContext, key: GroupKey, stream: list[Event], start: FoldStart | None
) -> tuple[FolderFold, list[Event]]:
    """The group's fold and the events it has yet to apply: from its first, or after ``start``."""
    kept = start.folds.get(key[0]) if start else None
    if start is None or kept is None:
        return FolderFold(org, *key), stream
    after = bisect.bisect_right(stream, start.at, key=lambda e: e.ts)
    return kept.resume(org), stream[after:]


def add_lag(state_table: list[dict[str, Any]], owned: dict[GroupKey, CNSet]) -> None:
    """Knowledge lag of R about T: CNs of owned(T, F) that believed(R, F, T) lacks. (Each
    distinct pair of sets is computed once: most stores believe the same of a folder.)"""
    lags: dict[tuple[GroupKey, str], int] = {}
    for row in state_table:
        if row["is_self"]:
            row["lag_count"] = 0
            continue
        key = ((row["subject"], row["fid"]), row["cnset"])
        lag = lags.get(key)
        if lag is None:
            lag = lags[key] = owned.get(key[0], EMPTY).difference(CNSet.parse(row["cnset"])).count()
        row["lag_count"] = lag


def add_should_respond(
    responders: list[dict[str, Any]],
    processed: list[dict[str, Any]],
    owned: dict[GroupKey, CNSet],
) -> list[dict[str, Any]]:
    """A responder should respond when the request's set is a strict subset of what it held
    when it processed the request (at the as-of time if it never did)."""
    at_processing = {(p["msg"], p["responder"]): p for p in processed}
    for row in responders:
        p = at_processing.get((row["msg"], row["responder"]))
        held = p["owned"] if p else owned.get((row["responder"], row["fid"]), EMPTY)
        row["responder_processed_at"] = p["processed_at"] if p else None
        row["should_respond"] = should_respond(CNSet.parse(row["requester_cnset"]), held)
    return responders


def add_reality(replicas: list[dict[str, Any]], owned: dict[GroupKey, CNSet]) -> None:
    """What is so of each replica, beside its store's belief: its really unique CNs, what it lacks
    and which part of that it has not been told of (``rules.reality``). Rows of one folder at a
    time: the stores on its list are those whose row is on the list."""
    by_folder: dict[str, list[dict[str, Any]]] = {}
    for row in replicas:
        by_folder.setdefault(row["fid"], []).append(row)
    for fid, rows in by_folder.items():
        listed = {r["store"]: owned.get((r["store"], fid), EMPTY) for r in rows if r["on_list"]}
        for row in rows:
            mine = EMPTY if row["health"] == DELETED else owned.get((row["store"], fid), EMPTY)
            row.update(
                replica_reality(row["store"], mine, listed, row["on_list"], CNSet.parse(row["missing_cnset"]))
            )


def add_at_risk(replicas: list[dict[str, Any]], down: set[str]) -> None:
    """Content at risk of each replica, from its really unique CNs and whether its store is down
    at the as-of (a separate step: the Spark job's refresh carries rows whose store went down)."""
    for row in replicas:
        risk = at_risk(
            CNSet.parse(row["really_unique_cnset"]),
            delete_pending=row["health"] == DELETE_PENDING,
            store_down=row["store"] in down,
        )
        row["at_risk_cnset"], row["at_risk_count"] = risk.text(), risk.count()


def store_periods_table(org: OrgContext) -> list[dict[str, Any]]:
    """Every period a store was down up to the as-of (``up_at`` null: still down)."""
    return [
        {"store": store, "down_at": down_at, "up_at": up_at} for store, down_at, up_at in org.down_periods()
    ]


def stores_table(topo: Topology, org: OrgContext, as_of: int) -> list[dict[str, Any]]:
    return [
        {
            "store": s.name,
            "server": s.server,
            "site": s.site,
            "version": s.version,
            "status": "down" if org.is_down(s.name, as_of) else "up",
            "preferred_backfill_source": s.preferred_backfill_source,
            "down_since": org.down_since(s.name, as_of),
        }
        for s in sorted(topo.stores.values(), key=lambda s: s.name)
    ]


def folders_table(topo: Topology, events: list[Event]) -> list[dict[str, Any]]:
    """Folders as of the as-of time: the topology's, changed by later replica-list events."""
    rows: dict[str, dict[str, Any]] = {
        HIERARCHY_FID: {
            "fid": HIERARCHY_FID,
            "path": "",
            "parent": None,
            "replicas": list(topo.store_names()),
        }
    }
    for f in topo.folders.values():
        rows[f.fid] = {"fid": f.fid, "path": f.path, "parent": f.parent, "replicas": list(f.replicas)}
    for ev in sorted(
        (e for e in events if e.kind in ("replicas", "change", "send")), key=lambda e: (e.ts, e.seq)
    ):
        assert ev.fid is not None
        row = rows.setdefault(ev.fid, {"fid": ev.fid, "path": "", "parent": None, "replicas": []})
        if ev.kind == "replicas":
            assert ev.replicas is not None
            row["replicas"] = list(ev.replicas)
            if ev.path is not None:
                row["path"] = ev.path
    return [rows[k] for k in sorted(rows)]


def replica_lists_table(topo: Topology, events: list[Event]) -> list[dict[str, Any]]:
    """Every content folder's replica list over time: the topology's (``at`` null), then each
    replica-list event, so a past step knows the list at that time."""
    rows: list[dict[str, Any]] = [
        {"fid": f.fid, "at": None, "seq": None, "replicas": list(f.replicas), "path": f.path}
        for f in topo.folders.values()
    ]
    for ev in events:
        if ev.kind == "replicas":
            assert ev.replicas is not None
            rows.append(
                {"fid": ev.fid, "at": ev.ts, "seq": ev.seq, "replicas": list(ev.replicas), "path": ev.path}
            )
    return rows


def add_paths(replicas: list[dict[str, Any]], folders: list[dict[str, Any]]) -> None:
    path = {f["fid"]: f["path"] for f in folders}
    for row in replicas:
        row["path"] = path.get(row["fid"], "")


def messages_table(events: list[Event]) -> list[dict[str, Any]]:
    """One row per message sent by the as-of and recipient: when (if ever, by the as-of) the
    recipient processed it, the changes it carried and the sender's set (``events``: the
    accepted events up to the as-of, so a later receive is no receive)."""
    processed = {
        (e.message.msg, e.store): e.ts for e in events if e.kind == "receive" and e.message is not None
    }
    rows = []
    for ev in events:
        m = ev.message
        if ev.kind != "send" or m is None:
            continue
        changes = m.changes if m.changes is not None else EMPTY
        for recipient in m.to:
            rows.append(
                {
                    "msg": m.msg,
                    "fid": m.fid,
                    "sender": m.sender,
                    "type": m.type,
                    "sent_at": m.sent_at,
                    "recipient": recipient,
                    "processed_at": processed.get((m.msg, recipient)),
                    "changes": changes.text(),
                    "changes_count": changes.count(),
                    "cnset": m.cnset.text(),
                    "cnset_count": m.cnset.count(),
                }
            )
    return rows


def transits_table(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per sender and recipient with a message the recipient processed by the as-of: how
    many, and the median and longest transit (``rules.transit``), in seconds."""
    pairs: dict[tuple[str, str], list[int]] = {}
    for row in messages:
        if row["processed_at"] is not None:
            pairs.setdefault((row["sender"], row["recipient"]), []).append(
                row["processed_at"] - row["sent_at"]
            )
    return [
        {
            "sender": sender,
            "recipient": recipient,
            "messages": len(transits),
            "median_transit_s": median_transit(transits) / US,
            "longest_transit_s": max(transits) / US,
        }
        for (sender, recipient), transits in sorted(pairs.items())
    ]
