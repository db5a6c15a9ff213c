"""Small topologies and event logs for tests, written in a few lines.

A topology is a plain dict in the data contract's shape, read through ``topology_from_json``;
an event log is a list of JSON Lines read through ``event_log_from_lines``; ``Log.replay`` runs
the reference replay on both. Times are offsets in microseconds from ``BASE`` (use ``H``, ``M``,
``S``), so a test reads ``log.change(2 * H, "P1", FID, 1)``.

    topo = topology({"P1": ("A", "2003"), "P2": ("A", "2003")}, folders={FID: ["P1", "P2"]})
    log = Log(topo)
    m = log.message(1 * H, "P2", "status", FID, to=["P1"], cnset="P2:1-5", received={"P1": 1 * H})
    result = log.replay(as_of=3 * H)
    row = one(result, "backfill_entries", observer="P1", fid=FID)
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from pfscope.spark_jobs.model.events import EventLog, make_seq
from pfscope.spark_jobs.model.replay import ReplayResult, replay
from pfscope.spark_jobs.model.timeutil import HOUR, MINUTE, SECOND, format_ts, parse_ts
from pfscope.spark_jobs.model.topology import Topology, topology_from_json

H = HOUR
M = MINUTE
S = SECOND
BASE_TS = "2026-11-02T00:00:00Z"  # a Monday, 00:00 UTC
BASE = parse_ts(BASE_TS)


def at(offset: int) -> int:
    """Absolute epoch microseconds of an offset from ``BASE`` (as the tables hold times)."""
    return BASE + offset


def topology(
    stores: Mapping[str, tuple[str, str]],
    *,
    folders: Mapping[str, Iterable[str]] | None = None,
    costs: Mapping[tuple[str, str], int] | None = None,
    preferred: Mapping[str, str] | None = None,
) -> Topology:
    """``stores``: name -> (site, version). Sites are those the stores name; ``costs`` are
    symmetric site pairs (their sites are listed too); ``preferred``: store -> its preferred backfill source."""
    return topology_from_json(topology_dict(stores, folders=folders, costs=costs, preferred=preferred))


def topology_dict(
    stores: Mapping[str, tuple[str, str]],
    *,
    folders: Mapping[str, Iterable[str]] | None = None,
    costs: Mapping[tuple[str, str], int] | None = None,
    preferred: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    sites = sorted({site for site, _ in stores.values()} | {s for pair in (costs or {}) for s in pair})
    return {
        "sites": sites,
        "costs": [{"a": a, "b": b, "cost": c} for (a, b), c in (costs or {}).items()],
        "stores": [
            {
                "name": name,
                "server": f"EX-{name}",
                "site": site,
                "version": version,
                "preferred_backfill_source": (preferred or {}).get(name),
            }
            for name, (site, version) in stores.items()
        ],
        "folders": [
            {"fid": fid, "path": f"IPM_SUBTREE\\{fid}", "parent": "1-1", "replicas": list(replicas)}
            for fid, replicas in (folders or {}).items()
        ],
    }


class Log:
    """An event log built line by line, in input order."""

    def __init__(self, topo: Topology):
        self.topo = topo
        self.lines: list[str] = []
        self._n = 0

    def _add(self, offset: int, store: str, kind: str, **fields: Any) -> None:
        obj = {"ts": format_ts(at(offset)), "store": store, "kind": kind}
        obj.update({k: v for k, v in fields.items() if v is not None})
        self.lines.append(json.dumps(obj))

    # -- one line each ------------------------------------------------------------------------
    def change(
        self, offset: int, store: str, fid: str, cn: int, *, derived: Iterable[str] | None = None
    ) -> None:
        """A local change; ``derived`` as ingest writes it on an implied one (``["event"]``)."""
        self._add(
            offset, store, "change", fid=fid, cn=cn, derived=list(derived) if derived is not None else None
        )

    def changes(self, offset: int, store: str, fid: str, cns: Iterable[int]) -> None:
        """Several local changes at the same time."""
        for cn in cns:
            self.change(offset, store, fid, cn)

    def send(
        self,
        offset: int,
        store: str,
        type: str,
        fid: str,
        *,
        to: Iterable[str],
        cnset: str = "",
        changes: str | None = None,
        requested: str | None = None,
        source: str | None = None,
        responders: Iterable[str] | None = None,
        msg: str | None = None,
        derived: Iterable[str] | None = None,
    ) -> str:
        """A send; returns its message id. ``changes`` defaults to empty for the types that
        carry it; ``derived`` names the fields the log's writer inferred."""
        self._n += 1
        msg = msg or f"m{self._n}"
        if type in ("hierarchy", "content", "backfill_response") and changes is None:
            changes = ""
        self._add(
            offset,
            store,
            "send",
            msg=msg,
            type=type,
            fid=fid,
            to=list(to),
            cnset=cnset,
            changes=changes,
            requested=requested,
            source=source,
            responders=list(responders) if responders is not None else None,
            derived=list(derived) if derived is not None else None,
        )
        return msg

    def receive(self, offset: int, store: str, msg: str) -> None:
        self._add(offset, store, "receive", msg=msg)

    def replicas(self, offset: int, fid: str, replicas: Iterable[str], store: str | None = None) -> None:
        replicas = list(replicas)
        self._add(
            offset, store or next(iter(sorted(self.topo.stores))), "replicas", fid=fid, replicas=replicas
        )

    def status(self, offset: int, store: str, status: str) -> None:
        self._add(offset, store, "store_status", status=status)

    # -- a send and its receives --------------------------------------------------------------
    def message(
        self,
        offset: int,
        sender: str,
        type: str,
        fid: str,
        *,
        received: Mapping[str, int],
        to: Iterable[str] | None = None,
        **fields: Any,
    ) -> str:
        """A send to ``to`` (default: the receivers) and a receive at each ``received`` time."""
        msg = self.send(offset, sender, type, fid, to=to if to is not None else list(received), **fields)
        for store, when in received.items():
            self.receive(when, store, msg)
        return msg

    def backfill_request(
        self, offset: int, store: str, fid: str, source: str, requested: str, cnset: str = ""
    ) -> str:
        """``store`` asks ``source`` (sent, not necessarily processed)."""
        return self.send(
            offset,
            store,
            "backfill_request",
            fid,
            to=[source],
            cnset=cnset,
            requested=requested,
            source=source,
        )

    # -- reading ------------------------------------------------------------------------------
    def event_log(self) -> EventLog:
        log = event_log_from_lines(self.lines, self.topo)
        assert not log.rejects, [(r.line, r.reason, r.text) for r in log.rejects]
        return log

    def replay(self, as_of: int | None = None) -> ReplayResult:
        """The reference replay; ``as_of`` is an offset from ``BASE`` (None: the last event's)."""
        return replay(self.topo, self.event_log(), None if as_of is None else at(as_of))


def rows(result: ReplayResult, table: str, **where: Any) -> list[dict[str, Any]]:
    """The rows of ``table`` whose columns equal every ``where`` value."""
    return [r for r in result.tables[table] if all(r.get(k) == v for k, v in where.items())]


def one(result: ReplayResult, table: str, **where: Any) -> dict[str, Any]:
    found = rows(result, table, **where)
    assert len(found) == 1, f"{len(found)} rows of {table} match {where}: {found}"
    return found[0]


def event_log_from_lines(lines: Iterable[str], topo: Topology, source: str = "<memory>") -> EventLog:
    """An in-memory log, one text per line, read and validated as a file's lines are."""
    return EventLog.build(((source, i, make_seq(0, i), t) for i, t in enumerate(lines, start=1)), topo)
