"""From parsed Exchange records to pfscope's event log and topology: the steps, run in order.

The steps, each a pure function of what came before, each in its own module:

1. ``classify``: each record is a replication event (parsed), an error worth surfacing, or a
   reject with its reason (``reasons``); exact re-exports of one event are duplicates.
2. ``messages``: a message's outgoing event (on its sender) and incoming events (on receivers) are
   matched by Message ID (an internal ID, printed by 5.x and 2000, only together with its sender);
   once step 3 has translated its numbers, each message is put in pfscope's terms.
3. ``translate``: the REPLID tables (``identity.py``), then every number translated to a store.
4. ``derive``: ``send`` and ``receive`` pairs; the sender's own CNs a hierarchy or content message
   carries become ``change`` events just before it; the sender's CN set, which regular
   replication does not print, is the union of all the log shows it holding (a lower bound).
   Every line that says more than the log printed lists what in ``derived``.
5. ``inferred``: the given topology completed with the stores, sites and folders the logs show.

Accounting: records read = used + errors kept + duplicates + rejected, per file and server.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import tzinfo
from typing import Any

from pfscope.spark_jobs.exchange.classify import (
    Accounting,
    Classified,
    Parsed,
    classify,
    classify_one,
    gather,
)
from pfscope.spark_jobs.exchange.derive import derive_events
from pfscope.spark_jobs.exchange.derive_apart import WrittenLines, derive_written
from pfscope.spark_jobs.exchange.formats import RawRecord
from pfscope.spark_jobs.exchange.identity import ReplidMap, norm_server
from pfscope.spark_jobs.exchange.inferred import assign_fids, build_topology, guess_version
from pfscope.spark_jobs.exchange.messages import Folders, Msg, build_messages, message_keys
from pfscope.spark_jobs.exchange.parse import server_from_dn, site_from_dn
from pfscope.spark_jobs.exchange.reasons import reason_key, reject_row
from pfscope.spark_jobs.exchange.translate import ROOT, FolderKey, infer_replids
from pfscope.spark_jobs.model.topology import VERSIONS, Topology

__all__ = [
    "Accounting",
    "Built",
    "Folders",
    "IngestResult",
    "Msg",
    "Parsed",
    "assign_fids",
    "build_events",
    "build_messages",
    "build_topology",
    "classify",
    "derive_events",
    "guess_version",
    "infer_replids",
    "ingest_classified",
    "ingest_records",
    "message_keys",
    "reason_key",
    "reject_row",
    "summarize",
]


@dataclass
class IngestResult:
    events: list[dict[str, Any]]  # none when the lines were derived in parts: ``written`` holds them
    topology: dict[str, Any]
    rejects: list[dict[str, Any]]
    errors: list[dict[str, Any]]
    summary: dict[str, Any]
    written: WrittenLines | None = None


@dataclass
class Built:
    """Steps 2-5 over the parsed events: what they write, reject, and what the summary needs."""

    events: list[dict[str, Any]]  # none when the lines were derived in parts: ``written`` holds them
    topology: dict[str, Any]
    rejects: list[dict[str, Any]]  # rejected after step 1, in the order they were found
    own: dict[str, str]  # each server's own store
    summary: dict[str, Any]  # the parts of the summary steps 2-5 know
    written: WrittenLines | None = None  # the lines' texts and files, when derived in parts


def summary_part(
    used: int,
    stats: Counter[str],
    counts: Sequence[int],
    own: dict[str, str],
    rmap: ReplidMap,
    added: dict[str, Any],
) -> dict[str, Any]:
    """The parts of the summary steps 2-5 know: records used, lines written and derived, messages
    (all, sent and never received, received and never sent), stores, REPLIDs, what was inferred."""
    return {
        "used": used,
        "events_written": {k: v for k, v in stats.items() if k in ("send", "receive", "change")},
        "derived": {k: v for k, v in stats.items() if k not in ("send", "receive", "change")},
        "messages": {
            "total": counts[0],
            "outgoing_without_incoming": counts[1],
            "incoming_without_outgoing": counts[2],
        },
        "stores": own,
        "replids": rmap.report(),
        "inferred": {
            "stores_added_to_topology": added["stores"],
            "sites_added": added["sites"],
            "folders_added": added["folders"],
        },
    }


def ingest_records(
    records: Iterable[RawRecord],
    *,
    replids: dict[tuple[str, int], str] | None = None,
    topology: Topology | None = None,
    default_offset_min: int = 0,
    zone: tzinfo | None = None,
) -> IngestResult:
    return ingest_classified(
        ((raw, classify_one(raw, default_offset_min, zone)) for raw in records),
        replids=replids,
        topology=topology,
        default_offset_min=default_offset_min,
        zone=zone,
    )


def ingest_classified(
    classified: Iterable[Classified],
    *,
    replids: dict[tuple[str, int], str] | None = None,
    topology: Topology | None = None,
    default_offset_min: int = 0,
    zone: tzinfo | None = None,
    parts: Callable[[int], int] | None = None,
) -> IngestResult:
    """Steps 1-5 over each record's outcome (``classify_one``, read with ``default_offset_min``
    and ``zone``, which the summary names). ``parts`` (given the messages, how many parts to
    derive them in) derives the lines in parts, written (``derive_apart``)."""
    acc = Accounting()
    parsed, errors, rejects, duplicates = gather(classified, acc)
    built = build_events(
        parsed, {e["server"] for e in errors}, acc, replids=replids, topology=topology, parts=parts
    )
    for e in errors:  # the dashboard's store page shows them by store
        e["store"] = built.own.get(e["server"], e["server"])
    rejects.extend(built.rejects)
    summary = summarize(
        acc,
        built,
        errors=len(errors),
        duplicates=duplicates,
        rejected=len(rejects),
        default_offset_min=default_offset_min,
        zone=zone,
    )
    return IngestResult(built.events, built.topology, rejects, errors, summary, built.written)


def build_events(
    parsed: list[Parsed],
    error_servers: set[str],
    acc: Accounting,
    *,
    replids: dict[tuple[str, int], str] | None = None,
    topology: Topology | None = None,
    parts: Callable[[int], int] | None = None,
) -> Built:
    """Steps 2 to 5 over step 1's parsed events (in input order, duplicates gone); ``acc``
    counts the records rejected here. ``error_servers``: the servers of the errors kept;
    ``parts``: as ``ingest_classified`` says."""
    rejected = _Rejected(acc)
    groups, bad = message_keys(parsed, error_servers)
    rejected.add_all(bad)
    own = _own_stores(groups, error_servers, replids, topology)
    rmap = ReplidMap(given=dict(replids or {}))
    infer_replids(groups, own, rmap)

    folders = Folders()
    msgs, bad2 = build_messages(groups, rmap, own, folders)
    rejected.add_all(bad2)
    all_stores = sorted(set(own.values()) | (set(topology.stores) if topology else set()))
    keys = (
        {m.folder for m in msgs if m.folder is not None} | set(folders.paths) | set(folders.parents.values())
    )
    fids = assign_fids(folders, (k for k in keys if k != ROOT), topology, all_stores)
    replicas = _replica_lists(fids, folders, topology)
    n_parts = 1 if parts is None else parts(len(msgs))
    written = None
    if n_parts > 1:
        lines: list[dict[str, Any]] = []
        written, bad3, stats = derive_written(msgs, fids, replicas, all_stores, n_parts)
    else:
        lines, bad3, stats = derive_events(msgs, fids, replicas, all_stores)
    rejected.add_all((p, reason) for m, reason in bad3 for p in m.records)

    sites, versions = _sites_and_versions(groups)
    topo_json, added = build_topology(topology, own, sites, versions, folders, fids, replicas)
    used = _account_used(groups, rejected.ids, acc)
    counts = (
        len(msgs),
        sum(1 for m in msgs if not m.synthesized and not m.receives),
        sum(1 for m in msgs if m.synthesized),
    )
    part = summary_part(used, stats, counts, own, rmap, added)
    assert all(v in VERSIONS for v in versions.values())
    return Built(lines, topo_json, rejected.rows, own, part, written)


class _Rejected:
    """The records the build steps reject, each once, in the order found, counted in ``acc``."""

    def __init__(self, acc: Accounting):
        self.acc = acc
        self.rows: list[dict[str, Any]] = []
        self.ids: set[int] = set()

    def add_all(self, found: Iterable[tuple[Parsed, str]]) -> None:
        for p, reason in found:
            if id(p) in self.ids:
                continue
            self.ids.add(id(p))
            self.rows.append(reject_row(p.raw, reason, p.server))
            self.acc.reasons[reason_key(reason)] += 1
            self.acc.per_server[p.server]["rejected"] += 1


def _own_stores(
    groups: dict[str, list[Parsed]],
    error_servers: set[str],
    replids: dict[tuple[str, int], str] | None,
    topology: Topology | None,
) -> dict[str, str]:
    """Each server the share names (as a record's server, a sender, in a Server DN, or by an error
    kept), with its own store: ``--replids``' REPLID 1, else the topology's, else its name."""
    topo_by_server: dict[str, str] = {}
    if topology is not None:
        for s in topology.stores.values():
            topo_by_server.setdefault(norm_server(s.server), s.name)
    servers = {p.server for ps in groups.values() for p in ps} | {
        p.sender for ps in groups.values() for p in ps if p.sender
    }
    servers |= error_servers
    servers |= {
        n
        for ps in groups.values()
        for p in ps
        if p.ev.server_dn
        for n in [server_from_dn(p.ev.server_dn)]
        if n
    }
    given = dict(replids or {})
    return {
        server: given.get((server, 1)) or topo_by_server.get(server) or server for server in sorted(servers)
    }


def _replica_lists(
    fids: dict[FolderKey, str], folders: Folders, topology: Topology | None
) -> dict[str, list[str]]:
    """Each folder's replica list: the topology's, else the stores the logs show it at."""
    replicas: dict[str, list[str]] = {}
    for k, fid in fids.items():
        given_f = topology.folders.get(fid) if topology else None
        if given_f is not None:
            replicas[fid] = list(given_f.replicas)
        else:
            replicas[fid] = sorted(folders.seen_at.get(k, set()))
    return replicas


def _sites_and_versions(groups: dict[str, list[Parsed]]) -> tuple[dict[str, str], dict[str, str]]:
    """The sites the Server DNs name, and each server's Exchange version by its records: for the
    stores the topology lacks."""
    sites: dict[str, str] = {}
    by_server: dict[str, list[Parsed]] = defaultdict(list)
    for ps in groups.values():
        for p in ps:
            by_server[p.server].append(p)
            dn = p.ev.server_dn
            named, site = (server_from_dn(dn), site_from_dn(dn)) if dn else (None, None)
            if named and site:
                sites.setdefault(named, site)
    return sites, {s: guess_version(ps) for s, ps in by_server.items()}


def _account_used(groups: dict[str, list[Parsed]], rejected: set[int], acc: Accounting) -> int:
    """A record is used when it is in a message and was not rejected: counted by server and type."""
    used_records = {id(p): p for ps in groups.values() for p in ps if id(p) not in rejected}
    for p in used_records.values():
        code = f"0x{p.ev.type_code:X}"
        acc.per_server[p.server][f"{p.direction} {code}"] += 1
        acc.per_type[code][p.direction] += 1
    return len(used_records)


def summarize(
    acc: Accounting,
    built: Built,
    *,
    errors: int,
    duplicates: int,
    rejected: int,
    default_offset_min: int = 0,
    zone: tzinfo | None = None,
) -> dict[str, Any]:
    """The summary, in its order: the accounting of every record, then what steps 2-5 found."""
    part = built.summary
    used = part["used"]
    read = sum(acc.read.values())
    summary: dict[str, Any] = {
        "records_read": read,
        "used": used,
        "errors_kept": errors,
        "duplicates": duplicates,
        "rejected": rejected,
        "accounted": read == used + errors + duplicates + rejected,
        "files": dict(sorted(acc.read.items())),
        "per_type": {k: dict(v) for k, v in sorted(acc.per_type.items())},
        "per_server": {k: dict(sorted(v.items())) for k, v in sorted(acc.per_server.items())},
        "reject_reasons": dict(acc.reasons.most_common()),
        **{k: v for k, v in part.items() if k != "used"},
    }
    summary["inferred"]["servers_named_from_file_names"] = sorted(acc.servers_from_file_names)
    summary["times_without_offset"] = acc.times_without_offset
    summary["description_lines_ignored"] = {
        "count": sum(acc.ignored_lines.values()) if acc.ignored_total is None else acc.ignored_total,
        "lines": dict(acc.ignored_lines.most_common(20)),
    }
    if acc.times_without_offset:
        how = (
            f"in time zone {zone}"
            if zone is not None
            else f"as UTC{default_offset_min:+d} minutes (--time-offset)"
        )
        summary["notes"] = [f"{acc.times_without_offset} times had no UTC offset and were read {how}"]
    return summary
