"""From parsed Exchange records to pfscope's event log and topology.

The steps, each a pure function of what came before:

1. ``classify``: each record is a replication event (parsed), an error worth surfacing, or a
   reject with its reason; exact re-exports of one event are duplicates.
2. messages: a message's outgoing event (on its sender) and incoming events (on receivers) are
   matched by Message ID (an internal ID, printed by 5.x and 2000, only together with its sender).
3. identity: the REPLID tables (``identity.py``), then every number translated to a store.
4. events: ``send`` and ``receive`` pairs; the sender's own CNs a hierarchy or content message
   carries become ``change`` events just before it; the sender's CN set, which regular
   replication does not print, is the union of all the log shows it holding (a lower bound).
   Every line that says more than the log printed lists what in ``derived``.
5. topology: the given one completed with the stores, sites and folders the logs show.

Accounting: records read = used + errors kept + duplicates + rejected, per file and server.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import tzinfo
from typing import Any

from spark_jobs.model.cnset import EMPTY, CNSet
from spark_jobs.model.timeutil import format_ts
from spark_jobs.model.topology import HIERARCHY_FID, VERSIONS, Topology

from .formats import RawRecord, TimeTextError, parse_event_time
from .identity import ReplidMap, norm_server
from .parse import (
    ERROR_IDS,
    HIERARCHY_TYPES,
    INCOMING_IDS,
    OUTGOING_IDS,
    Cn,
    CnRange,
    DescriptionError,
    ReplicationEvent,
    description_not_found,
    error_details,
    label_insertion_strings,
    parse_description,
    server_from_dn,
    site_from_dn,
)

PROVIDER_PREFIX = "msexchangeis public"  # "MSExchangeIS Public Store"; "MSExchangeIS Public" on 5.x
PROVIDER_50 = "msexchangeis"  # Exchange 5.0 logged replication under the store's own name (KB 177673)
PROVIDER_ALIASES = (PROVIDER_50, "msexchangepublicis")  # ... and KB 203170 prints "MSExchangePublicIS"
RENDERED_HINT = (
    "export it rendered: wevtutil qe Application "
    "/q:\"*[System[Provider[@Name='MSExchangeIS Public Store']]]\" /f:RenderedXml > SERVER.xml"
)
MAX_EXPANDED_CNS = 100_000  # own CNs one message may turn into change lines
UNKNOWN_SITE = "Unknown"
ROOT_GLOBCNT = 1  # GLOBCNT 1 is the root folder (the hierarchy), whichever REPLID prints it

R_NOT_EXCHANGE = "not an MSExchangeIS Public Store event"
R_NOT_REPLICATION = "event ID {} is not a replication event"
R_NO_SERVER = "no server: the export has no computer column and the file name names none"
R_BAD_TIME = "bad time: {}"
R_UNRENDERED = "unrendered event: its insertion strings fit no known layout; " + RENDERED_HINT
R_NO_TEXT = "no description"
R_NOT_RENDERED_THERE = ("no description: the machine that exported the log lacks Exchange's message file "
                        "(\"The description for Event ID ... cannot be found\"); export on the Exchange server: "
                        + RENDERED_HINT)
R_CONFLICTING_COPY = "another event for the same message on the same server says something else"
R_SENDER_UNKNOWN = "internal Message ID and no Server line: the sender is unknown"
R_SENDER_UNKNOWN_SMTP = "no outgoing event, no Server line, and the Message ID names no known server"
R_TWO_SENDERS = "the same Message ID is logged as sent by another server"
R_ON_SENDER = "incoming event on the message's own sender"
R_BEFORE_SEND = "incoming event stamped before its outgoing event (clock skew between servers?)"
R_NO_FOLDER = "content event without a Folder line"
R_NO_RECIPIENT = "outgoing event with no matching incoming event and no known replica to send to"
R_RANGE_TOO_WIDE = "CN range of {:,} own CNs is wider than " + f"{MAX_EXPANDED_CNS:,}"


def reason_key(reason: str) -> str:
    """Reasons counted in the summary: the full phrase, less details that vary record by record."""
    for prefix in ("unreadable file", "unreadable after record", "bad time", "unreadable CSV row",
                   "unreadable .evtx record", "record XML not readable",
                   "event ID", "description: not", "description: RFI", "description: CNSET", "description: IDCN",
                   "description: a line not understood", "description: a template", "description: Message IDs:",
                   "description: Message ID:",
                   "description: Folder", "description: Database", "description: CN range"):
        if reason.startswith(prefix):
            return prefix
    return reason


def r_unmapped(server: str, replid: int) -> str:
    return f"REPLID {replid:X} printed by {server} maps to no store (add it to --replids)"


@dataclass
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


@dataclass
class IngestResult:
    events: list[dict[str, Any]]
    topology: dict[str, Any]
    rejects: list[dict[str, Any]]
    errors: list[dict[str, Any]]
    summary: dict[str, Any]


# --------------------------------------------------------------------------------------------
# 1. classify
# --------------------------------------------------------------------------------------------
def server_from_file_name(source: str) -> str | None:
    """``EX01.csv``, ``EX01_application.csv``, ``ex01-2026-11.evtx``: the server before ``_``/``-``/``.``."""
    base = re.split(r"[\\/]", source)[-1]
    m = re.match(r"([A-Za-z0-9]+)", base)
    return m.group(1).upper() if m else None


def _record_text(raw: RawRecord) -> str:
    if raw.message is not None:
        return raw.message
    return "\r\n".join(raw.strings or ())


def classify(
    records: Iterable[RawRecord], default_offset_min: int, acc: Accounting, zone: tzinfo | None = None
) -> tuple[list[Parsed], list[dict[str, Any]], list[dict[str, Any]], int]:
    """Records to (parsed replication events, errors kept, rejects, duplicates)."""
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

    for raw in records:
        acc.read[raw.source] += 1
        if raw.problem:
            reject(raw, raw.problem)
            continue
        if raw.provider is not None and not _public_store_event(raw.provider, raw.event_id):
            reject(raw, R_NOT_EXCHANGE)
            continue
        server_text = raw.server or server_from_file_name(raw.source)
        if not server_text:
            reject(raw, R_NO_SERVER)
            continue
        if not raw.server:
            acc.servers_from_file_names.add(norm_server(server_text))
        server = norm_server(server_text)
        try:
            ts, own_offset = parse_event_time(raw.time_text or "", default_offset_min, zone)
        except TimeTextError as e:
            reject(raw, R_BAD_TIME.format(e), server)
            continue
        if not own_offset:
            acc.times_without_offset += 1
        eid = raw.event_id
        if eid in ERROR_IDS:
            text = _record_text(raw)
            k = (server, eid, ts // 1_000_000, text)
            if k in error_keys:
                duplicates += 1
                acc.per_server[server]["duplicates"] += 1
                continue
            error_keys.add(k)
            errors.append({"server": server, "store": None, "ts": format_ts(ts), "event_id": eid,
                           **error_details(eid, text), "text": text, "source": raw.source, "record": raw.record})
            acc.per_server[server]["errors"] += 1
            continue
        if eid not in OUTGOING_IDS and eid not in INCOMING_IDS:
            reject(raw, R_NOT_REPLICATION.format(eid), server)
            continue
        if raw.message is not None:
            text = raw.message
            not_found, strings = description_not_found(text)
            if not_found:  # Windows could not render it: read the strings it printed, if it can be done
                labelled = label_insertion_strings(strings) if strings else None
                if labelled is None:
                    reject(raw, R_NOT_RENDERED_THERE, server)
                    continue
                text = labelled
        elif raw.strings:
            labelled = label_insertion_strings(list(raw.strings))
            if labelled is None:
                reject(raw, R_UNRENDERED, server)
                continue
            text = labelled
        else:
            reject(raw, R_NO_TEXT, server)
            continue
        try:
            ev = parse_description(text)
        except DescriptionError as e:
            reject(raw, f"description: {e}", server)
            continue
        direction = "out" if eid in OUTGOING_IDS else "in"
        p = Parsed(raw, server, ts, direction, ev)
        if direction == "out":
            p.sender = server
        elif ev.server_dn:
            p.sender = server_from_dn(ev.server_dn)
        k2 = (server, direction, ev.msg_id, p.sender or "")
        first = seen.get(k2)
        if first is not None:
            if first.ev.meaning() == ev.meaning():
                duplicates += 1
                acc.per_server[server]["duplicates"] += 1
            else:
                reject(raw, R_CONFLICTING_COPY, server)
            continue
        seen[k2] = p
        parsed.append(p)
        for line in ev.ignored:
            acc.ignored_lines[line[:120]] += 1
    return parsed, errors, rejects, duplicates


def _public_store_event(provider: str, event_id: int | None) -> bool:
    low = provider.strip().lower()
    if low.startswith(PROVIDER_PREFIX):
        return True
    return low in PROVIDER_ALIASES and event_id is not None and (
        event_id in OUTGOING_IDS or event_id in INCOMING_IDS or event_id in ERROR_IDS)


def reject_row(raw: RawRecord, reason: str, server: str | None = None) -> dict[str, Any]:
    return {"source": raw.source, "record": raw.record, "record_id": raw.record_id, "server": server or raw.server,
            "event_id": raw.event_id, "time": raw.time_text, "reason": reason, "text": _record_text(raw)}


# --------------------------------------------------------------------------------------------
# 2. messages
# --------------------------------------------------------------------------------------------
_CN_ID_RE = re.compile(r"^[0-9A-Fa-f]{1,16}-[0-9A-Fa-f]{1,16}$")
_SMTP_RE = re.compile(r"^<?[^<>@\s]+@([^<>\s]+?)>?$")


def message_keys(parsed: list[Parsed], other_servers: Iterable[str] = ()) -> tuple[
        dict[str, list[Parsed]], list[tuple[Parsed, str]]]:
    """Group events by message; SMTP ids are unique, internal (5.x, 2000) ids only per sender. The
    sender is the server of the outgoing event, else the incoming event's Server line, else the
    host of an SMTP id when that names a server the logs know."""
    known = {p.server for p in parsed} | {p.sender for p in parsed if p.sender} | set(other_servers)
    groups: dict[str, list[Parsed]] = defaultdict(list)
    bad: list[tuple[Parsed, str]] = []
    for p in parsed:
        if _SMTP_RE.match(p.ev.msg_id):
            p.key = p.ev.msg_id
        elif p.sender is None:
            bad.append((p, R_SENDER_UNKNOWN))
            continue
        else:
            p.key = f"{p.sender}/{p.ev.msg_id}"
        groups[p.key].append(p)
    out: dict[str, list[Parsed]] = {}
    for key, ps in groups.items():
        outs = [p for p in ps if p.direction == "out"]
        keep = list(ps)
        for extra in outs[1:]:
            bad.append((extra, R_TWO_SENDERS))
            keep.remove(extra)
        if outs:
            for p in keep:
                p.sender = outs[0].server  # the outgoing event names the sender for sure
        else:
            for p in list(keep):
                if p.sender is None:
                    m = _SMTP_RE.match(p.ev.msg_id)
                    host = norm_server(m.group(1)) if m else None
                    if host in known:
                        p.sender = host
                    else:
                        bad.append((p, R_SENDER_UNKNOWN_SMTP))
                        keep.remove(p)
        if keep:
            out[key] = keep
    return out, bad


# --------------------------------------------------------------------------------------------
# 3. identity
# --------------------------------------------------------------------------------------------
def _numbers(ev: ReplicationEvent) -> list[tuple[str, int]]:
    """Every printed REPLID, tagged by where it stands, for aligning two prints of one message."""
    out: list[tuple[str, int]] = []
    if ev.cn_min and ev.cn_max:
        out += [("min", ev.cn_min.replid), ("max", ev.cn_max.replid)]
    for name, pairs in (("cnset", ev.cnset), ("fai", ev.cnset_fai), ("idcn", ev.idcn_deleted)):
        for i, (lo, _hi) in enumerate(pairs or ()):
            out.append((f"{name}{i}", lo.replid))
    for i, (fid, _path) in enumerate(ev.folders):
        if fid.globcnt != ROOT_GLOBCNT:
            out.append((f"folder{i}", fid.replid))
    for i, r in enumerate(ev.rfis):
        out += [(f"rfi{i}", r.fid.replid)]
        if r.pfid.globcnt != ROOT_GLOBCNT:  # the root prints 1-1 everywhere: it aligns nothing
            out.append((f"rfip{i}", r.pfid.replid))
    return out


def infer_replids(groups: dict[str, list[Parsed]], own: dict[str, str], rmap: ReplidMap) -> None:
    """Fill ``rmap`` by the three rules of ``identity.py``, to a fixed point."""
    for server, store in own.items():
        rmap.infer(server, 1, store, "REPLID 1 is the server's own store")
    links: list[tuple[str, int, str, int]] = []
    for ps in groups.values():
        outs = [p for p in ps if p.direction == "out"]
        if not outs:
            continue
        o = outs[0]
        on = dict(_numbers(o.ev))
        for p in ps:
            if p.direction != "in":
                continue
            for tag, replid in _numbers(p.ev):
                if tag in on:
                    links.append((o.server, on[tag], p.server, replid))

    def fixpoint() -> None:
        changed = True
        while changed:
            changed = False
            for s, a, r, b in links:
                x, y = rmap.store(s, a), rmap.store(r, b)
                if x is not None and y is None:
                    changed |= rmap.infer(r, b, x, f"message logged by {s} and {r}: {s}'s REPLID {a:X}")
                elif y is not None and x is None:
                    changed |= rmap.infer(s, a, y, f"message logged by {s} and {r}: {r}'s REPLID {b:X}")
                elif x is not None and y is not None and x != y:
                    rmap.infer(r, b, x, f"message logged by {s} and {r}: {s}'s REPLID {a:X}")

    fixpoint()
    for ps in groups.values():
        for p in ps:
            if p.direction == "in" and p.ev.type_code in (0x2, 0x4) and p.ev.cn_min and p.sender in own:
                rmap.infer(p.server, p.ev.cn_min.replid, own[p.sender],
                           f"regular replication from {p.sender} carries its own changes")
    fixpoint()


class Unmapped(Exception):
    def __init__(self, server: str, replid: int):
        super().__init__(r_unmapped(server, replid))


def _store_of(rmap: ReplidMap, server: str, cn: Cn) -> str:
    s = rmap.store(server, cn.replid)
    if s is None:
        raise Unmapped(server, cn.replid)
    return s


def cnset_of(rmap: ReplidMap, server: str, pairs: Iterable[CnRange]) -> CNSet:
    acc: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for lo, hi in pairs:
        acc[_store_of(rmap, server, lo)].append((lo.globcnt, hi.globcnt))
    out = EMPTY
    for origin, ranges in acc.items():
        for lo, hi in ranges:
            out = out.union(CNSet.of(origin, max(lo, 1), hi)) if hi >= 1 else out
    return out


# --------------------------------------------------------------------------------------------
# 4. messages in pfscope's terms
# --------------------------------------------------------------------------------------------
FolderKey = tuple[str, int]  # (creating store, GLOBCNT)
ROOT: FolderKey = ("", ROOT_GLOBCNT)


@dataclass
class Msg:
    msg: str
    type: str
    type_code: int
    folder: FolderKey | None  # None: the hierarchy 1-1
    sender: str
    sent_at: int
    synthesized: bool  # no outgoing event: the send is built from the incoming ones
    changes: CNSet | None
    requested: CNSet | None
    cnset: CNSet | None  # printed (status, status request); None: to derive
    addressed: str | None  # the store an outgoing event names (2003+ backfill requests)
    receives: list[tuple[str, int]]  # (store, ts)
    records: list[Parsed]


@dataclass
class Folders:
    paths: dict[FolderKey, str] = field(default_factory=dict)
    parents: dict[FolderKey, FolderKey] = field(default_factory=dict)
    seen_at: dict[FolderKey, set[str]] = field(default_factory=lambda: defaultdict(set))

    def note(self, key: FolderKey, path: str | None, parent: FolderKey | None = None) -> None:
        if path and key not in self.paths:
            self.paths[key] = path
        if parent is not None and parent != key and key not in self.parents:
            self.parents[key] = parent


def _translate_folder(rmap: ReplidMap, server: str, fid: Cn) -> FolderKey:
    if fid.globcnt == ROOT_GLOBCNT:
        return ROOT
    return (_store_of(rmap, server, fid), fid.globcnt)


def build_messages(
    groups: dict[str, list[Parsed]], rmap: ReplidMap, own: dict[str, str], folders: Folders
) -> tuple[list[Msg], list[tuple[Parsed, str]]]:
    msgs: list[Msg] = []
    bad: list[tuple[Parsed, str]] = []
    for key, ps in groups.items():
        outs = [p for p in ps if p.direction == "out"]
        ins = [p for p in ps if p.direction == "in"]
        first = outs[0] if outs else ins[0]
        assert first.sender is not None
        sender = own[first.sender]
        ev = first.ev
        # the message's content in the numbering of the first print that maps entirely
        content: tuple[Any, ...] | None = None
        err: str | None = None
        for p in ([*outs, *ins]):
            try:
                content = _content(rmap, p, folders)
                break
            except Unmapped as e:
                err = err or str(e)
        if content is None:
            bad.extend((p, err or "unmapped") for p in ps)
            continue
        fkeys, changes, requested, printed = content
        # a status about the root folder "(1-1) IPM_SUBTREE" (5.x, KB 177251) is about the hierarchy
        fkeys = [None if k == ROOT else k for k in fkeys]
        if ev.type_code in HIERARCHY_TYPES or (all(k is None for k in fkeys) and fkeys):
            fkeys = [None]
        elif not fkeys:
            if ev.type_code in (0x4, 0x80000004):
                bad.extend((p, R_NO_FOLDER) for p in ps)
                continue
            fkeys = [None]
        sent_at = outs[0].ts if outs else min(p.ts for p in ins)
        receives: list[tuple[str, int]] = []
        kept: list[Parsed] = list(outs)
        for p in ins:
            store = own[p.server]
            if store != sender:  # it processed the message: a replica, even when its event is unusable
                for fk in fkeys:
                    if fk is not None:
                        folders.seen_at[fk].add(store)
            if store == sender:
                bad.append((p, R_ON_SENDER))
            elif p.ts < sent_at:
                bad.append((p, R_BEFORE_SEND))
            else:
                receives.append((store, p.ts))
                kept.append(p)
        if not outs and not receives:
            continue
        addressed = None
        if outs and outs[0].ev.server_dn:
            named = server_from_dn(outs[0].ev.server_dn)
            if named in own and own[named] != sender:
                addressed = own[named]
        for fk in fkeys:
            for s in {sender, *(r for r, _ in receives), *([addressed] if addressed else [])}:
                if fk is not None:
                    folders.seen_at[fk].add(s)
            msgs.append(Msg(
                msg=key if len(fkeys) == 1 else f"{key}#{fk[0]}-{fk[1]:X}" if fk else key,
                type=ev.type_name, type_code=ev.type_code, folder=fk, sender=sender, sent_at=sent_at,
                synthesized=not outs, changes=changes, requested=requested, cnset=printed,
                addressed=addressed, receives=receives, records=kept,
            ))
    return msgs, bad


def _content(rmap: ReplidMap, p: Parsed, folders: Folders) -> tuple[list[FolderKey], Any, Any, Any]:
    ev, server = p.ev, p.server
    fkeys: list[FolderKey] = []
    for fid, path in ev.folders:
        k = _translate_folder(rmap, server, fid)
        folders.note(k, path)
        fkeys.append(k)
    for r in ev.rfis:
        k = _translate_folder(rmap, server, r.fid)
        parent = _translate_folder(rmap, server, r.pfid)
        folders.note(k, r.path, parent)
    both = [*(ev.cnset or ()), *(ev.cnset_fai or ())]
    changes = requested = printed = None
    if ev.type_code in (0x2, 0x4):
        if ev.cn_min and ev.cn_max:
            changes = cnset_of(rmap, server, [(ev.cn_min, ev.cn_max)])
        else:
            changes = EMPTY
    elif ev.type_code in (0x80000002, 0x80000004):
        changes = cnset_of(rmap, server, both)
    elif ev.type_code == 0x8:
        requested = cnset_of(rmap, server, both)
    elif ev.cnset is not None or ev.cnset_fai is not None:  # status, status request: the sender's set
        printed = cnset_of(rmap, server, both)
    return fkeys, changes, requested, printed


# --------------------------------------------------------------------------------------------
# 5. canonical FIDs, the topology, the event lines
# --------------------------------------------------------------------------------------------
def _norm_path(p: str) -> str:
    return p.strip().strip("\\").lower()


def assign_fids(folders: Folders, keys: Iterable[FolderKey], topo: Topology | None,
                stores: list[str]) -> dict[FolderKey, str]:
    """A folder found in the logs keeps the given topology's FID for its path; otherwise its
    FID is ``<n>-<GLOBCNT>`` with ``n`` the creating store's rank among all stores (1-based)."""
    by_path: dict[str, str] = {}
    if topo is not None:
        counts = Counter(_norm_path(f.path) for f in topo.folders.values() if f.path)
        by_path = {_norm_path(f.path): f.fid for f in topo.folders.values() if f.path and counts[_norm_path(f.path)] == 1}
    taken = set(topo.folders) if topo is not None else set()
    taken.add(HIERARCHY_FID)
    rank = {s: i + 1 for i, s in enumerate(sorted(stores))}
    out: dict[FolderKey, str] = {}
    for k in sorted(set(keys)):
        path = folders.paths.get(k)
        if path and _norm_path(path) in by_path:
            out[k] = by_path.pop(_norm_path(path))
            continue
        n = rank.get(k[0], len(rank) + 1)
        fid = f"{n:X}-{k[1]:X}"
        while fid in taken:
            n += 0x100
            fid = f"{n:X}-{k[1]:X}"
        taken.add(fid)
        out[k] = fid
    return out


def _own_changes(msgs: list[Msg], fids: dict[FolderKey, str], skip: set[int],
                 stats: Counter[str]) -> dict[int, list[tuple[str, str, int]]]:
    """The sender's own CNs each message shows it holding (changes it carries, its printed set),
    as change lines: CN by CN in increasing order per store and folder, each at the first message
    that shows it or a later one, so that CNs only increase in event order (the reader's rule).
    Returns, per message index, the (store, fid, cn) to write just before it."""
    first_seen: dict[tuple[str, str], dict[int, int]] = defaultdict(dict)  # cn -> message index
    for i, m in enumerate(msgs):
        if i in skip:
            continue
        fid = fids[m.folder] if m.folder is not None else HIERARCHY_FID
        shown = (m.changes or EMPTY).union(m.cnset or EMPTY).ranges(m.sender)
        width = sum(hi - lo + 1 for lo, hi in shown)
        if width > MAX_EXPANDED_CNS:
            stats["own CNs not written as changes (set too wide)"] += width
            continue
        seen = first_seen[(m.sender, fid)]
        for lo, hi in shown:
            for cn in range(lo, hi + 1):
                seen.setdefault(cn, i)
    out: dict[int, list[tuple[str, str, int]]] = defaultdict(list)
    for (store, fid), seen in first_seen.items():
        at = -1
        for cn in sorted(seen):
            at = max(at, seen[cn])  # messages are in time order: a later index is not earlier
            out[at].append((store, fid, cn))
            stats["change"] += 1
            if at != seen[cn]:
                stats["own CNs written after their first message"] += 1
    return out


def derive_events(msgs: list[Msg], fids: dict[FolderKey, str], replicas: dict[str, list[str]],
                  all_stores: list[str]) -> tuple[list[dict[str, Any]], list[tuple[Msg, str]], Counter[str]]:
    """The event lines, in time order: derived changes, sends (with derived CN sets), receives."""
    stats: Counter[str] = Counter()
    bad: list[tuple[Msg, str]] = []
    skipped: set[int] = set()
    msgs = sorted(msgs, key=lambda m: m.sent_at)
    tos: dict[int, tuple[list[str], list[str]]] = {}
    for i, m in enumerate(msgs):
        fid = fids[m.folder] if m.folder is not None else HIERARCHY_FID
        if m.changes is not None and m.type in ("hierarchy", "content"):
            width = sum(hi - lo + 1 for lo, hi in m.changes.ranges(m.sender))
            if width > MAX_EXPANDED_CNS:
                bad.append((m, R_RANGE_TOO_WIDE.format(width)))
                skipped.add(i)
                continue
        to = sorted({s for s, _ in m.receives} | ({m.addressed} if m.addressed else set()))
        derived: list[str] = []
        if m.synthesized:
            derived += ["event", "ts"]
        if not to:
            pool = all_stores if fid == HIERARCHY_FID else replicas.get(fid, [])
            to = sorted(s for s in pool if s != m.sender)
            derived.append("to")
            if not to:
                bad.append((m, R_NO_RECIPIENT))
                skipped.add(i)
                continue
        tos[i] = (to, derived)
    own = _own_changes(msgs, fids, skipped, stats)

    timeline: list[tuple[int, int, int, str, str | None]] = []
    for i, m in enumerate(msgs):
        if i in skipped:
            continue
        # at one time: receives of earlier messages, then sends (a store answers what it has
        # processed), then receives of messages sent at that very time
        timeline.append((m.sent_at, 1, i, "send", None))
        for store, ts in m.receives:
            timeline.append((ts, 0 if ts > m.sent_at else 2, i, "receive", store))
    timeline.sort(key=lambda t: (t[0], t[1], t[2]))
    held: dict[tuple[str, str], CNSet] = defaultdict(lambda: EMPTY)  # lower bound of owned
    lines: list[dict[str, Any]] = []
    for ts, _rank, i, what, store in timeline:
        m = msgs[i]
        fid = fids[m.folder] if m.folder is not None else HIERARCHY_FID
        t = format_ts(ts)
        if what == "receive":
            assert store is not None
            lines.append({"ts": t, "store": store, "kind": "receive", "msg": m.msg})
            stats["receive"] += 1
            if m.changes:
                held[(store, fid)] = held[(store, fid)].union(m.changes)
            continue
        k = (m.sender, fid)
        for s_, f_, cn in own.get(i, ()):
            lines.append({"ts": t, "store": s_, "kind": "change", "fid": f_, "cn": cn,
                          "derived": ["event"], "implied_by": m.msg})
            held[(s_, f_)] = held[(s_, f_)].add(s_, cn)
        to, derived = tos[i]
        derived = list(derived)
        if m.changes:
            held[k] = held[k].union(m.changes)
        if m.cnset is not None:
            held[k] = held[k].union(m.cnset)
            cnset = m.cnset
        else:
            cnset = held[k]
            derived.append("cnset")
        line: dict[str, Any] = {"ts": t, "store": m.sender, "kind": "send", "msg": m.msg, "type": m.type,
                                "fid": fid, "to": to, "cnset": cnset.text()}
        if m.type in ("hierarchy", "content", "backfill_response"):
            line["changes"] = (m.changes or EMPTY).text()
        if m.type == "backfill_request":
            line["requested"] = (m.requested or EMPTY).text()
            if len(to) == 1:
                line["source"] = to[0]
        if m.type == "status_request":
            line["responders"] = []
            derived.append("responders")
        if derived:
            line["derived"] = derived
        lines.append(line)
        stats["send"] += 1
        for d in derived:
            stats[f"send {d} derived"] += 1
    return lines, bad, stats


def guess_version(ps: list[Parsed]) -> str:
    """From a server's own (outgoing) events: the ``Outgoing message type`` label is 2003's,
    SMTP Message IDs (or a Database line without an internal Message ID) 2007's; the short RFI layout, the type on the first line
    or a 5.x source name 5.5's;
    otherwise internal IDs: 2000."""
    own = [p for p in ps if p.direction == "out"] or ps
    if any(p.ev.message_type_label and not _CN_ID_RE.match(p.ev.msg_id) for p in own):
        return "2003"  # 5.x's "Outgoing Message Type 0x20" comes with an internal Message ID
    if any("@" in p.ev.msg_id or (p.ev.database and not _CN_ID_RE.match(p.ev.msg_id)) for p in own):
        return "2007"  # 2000 prints a Database line too, with internal Message IDs (KB 821930)
    if any(p.ev.short_rfis or p.ev.type_on_first_line
           or (p.raw.provider or "").lower().strip() in ("msexchangeis public", *PROVIDER_ALIASES) for p in own):
        return "5.5"
    return "2000"


def build_topology(
    topo: Topology | None, own: dict[str, str], sites: dict[str, str], versions: dict[str, str],
    folders: Folders, fids: dict[FolderKey, str], replicas: dict[str, list[str]],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The given topology completed with what the logs show; and a note of what was added."""
    base: dict[str, Any] = topo.to_json() if topo else {"sites": [], "costs": [], "stores": [], "folders": []}
    have_stores = {s["name"] for s in base["stores"]}
    added: dict[str, Any] = {"stores": [], "sites": [], "folders": 0}
    for server in sorted(own):
        store = own[server]
        if store in have_stores:
            continue
        site = sites.get(server, UNKNOWN_SITE)
        if site not in base["sites"]:
            base["sites"].append(site)
            added["sites"].append(site)
        version = versions.get(server, "2000")
        base["stores"].append({"name": store, "server": server, "site": site, "version": version,
                               "preferred_backfill_source": None})
        have_stores.add(store)
        added["stores"].append({"store": store, "server": server, "site": site, "version": version})
    have_folders = {f["fid"] for f in base["folders"]}
    fid_of = dict(fids)
    for k, fid in sorted(fids.items(), key=lambda kv: kv[1]):
        if fid in have_folders:
            continue
        parent_key = folders.parents.get(k)
        if parent_key is None:
            parent = None
        elif parent_key == ROOT:  # GLOBCNT 1 is the root folder: the hierarchy
            parent = HIERARCHY_FID
        else:
            parent = fid_of.get(parent_key)
        base["folders"].append({"fid": fid, "path": folders.paths.get(k, ""), "parent": parent,
                                "replicas": replicas.get(fid, [])})
        have_folders.add(fid)
        added["folders"] += 1
    known = {f["fid"] for f in base["folders"]} | {HIERARCHY_FID}
    for f in base["folders"]:
        if f["parent"] is not None and f["parent"] not in known:
            f["parent"] = None
    return base, added


def ingest_records(
    records: Iterable[RawRecord],
    *,
    replids: dict[tuple[str, int], str] | None = None,
    topology: Topology | None = None,
    default_offset_min: int = 0,
    zone: tzinfo | None = None,
) -> IngestResult:
    acc = Accounting()
    parsed, errors, rejects, duplicates = classify(records, default_offset_min, acc, zone)

    rejected_ids: set[int] = set()

    def reject_parsed(p: Parsed, reason: str) -> None:
        if id(p) in rejected_ids:
            return
        rejected_ids.add(id(p))
        rejects.append(reject_row(p.raw, reason, p.server))
        acc.reasons[reason_key(reason)] += 1
        acc.per_server[p.server]["rejected"] += 1

    groups, bad = message_keys(parsed, (e["server"] for e in errors))
    for p, reason in bad:
        reject_parsed(p, reason)

    # stores: each server's own store
    topo_by_server: dict[str, str] = {}
    if topology is not None:
        for s in topology.stores.values():
            topo_by_server.setdefault(norm_server(s.server), s.name)
    servers = {p.server for ps in groups.values() for p in ps} | {
        p.sender for ps in groups.values() for p in ps if p.sender}
    servers |= {e["server"] for e in errors}
    servers |= {n for ps in groups.values() for p in ps if p.ev.server_dn
                for n in [server_from_dn(p.ev.server_dn)] if n}
    given = dict(replids or {})
    own: dict[str, str] = {}
    for server in sorted(servers):
        own[server] = given.get((server, 1)) or topo_by_server.get(server) or server
    rmap = ReplidMap(given=given)
    infer_replids(groups, own, rmap)
    for e in errors:  # the dashboard's store page shows them by store
        e["store"] = own.get(e["server"], e["server"])

    folders = Folders()
    msgs, bad2 = build_messages(groups, rmap, own, folders)
    for p, reason in bad2:
        reject_parsed(p, reason)

    all_stores = sorted(set(own.values()) | (set(topology.stores) if topology else set()))
    keys = {m.folder for m in msgs if m.folder is not None} | set(folders.paths) | set(folders.parents.values())
    fids = assign_fids(folders, (k for k in keys if k != ROOT), topology, all_stores)
    replicas: dict[str, list[str]] = {}
    for k, fid in fids.items():
        given_f = topology.folders.get(fid) if topology else None
        if given_f is not None:
            replicas[fid] = list(given_f.replicas)
        else:
            replicas[fid] = sorted(folders.seen_at.get(k, set()))
    lines, bad3, stats = derive_events(msgs, fids, replicas, all_stores)
    for m, reason in bad3:
        for p in m.records:
            reject_parsed(p, reason)

    # sites and versions of the stores the topology lacks
    sites: dict[str, str] = {}
    by_server: dict[str, list[Parsed]] = defaultdict(list)
    for ps in groups.values():
        for p in ps:
            by_server[p.server].append(p)
            dn = p.ev.server_dn
            named, site = (server_from_dn(dn), site_from_dn(dn)) if dn else (None, None)
            if named and site:
                sites.setdefault(named, site)
    versions = {s: guess_version(ps) for s, ps in by_server.items()}
    topo_json, added = build_topology(topology, own, sites, versions, folders, fids, replicas)

    # accounting: a record is used when it is in a message and was not rejected
    used_records = {id(p): p for ps in groups.values() for p in ps if id(p) not in rejected_ids}
    for p in used_records.values():
        code = f"0x{p.ev.type_code:X}"
        acc.per_server[p.server][f"{p.direction} {code}"] += 1
        acc.per_type[code][p.direction] += 1
    used = len(used_records)
    read = sum(acc.read.values())
    summary: dict[str, Any] = {
        "records_read": read,
        "used": used,
        "errors_kept": len(errors),
        "duplicates": duplicates,
        "rejected": len(rejects),
        "accounted": read == used + len(errors) + duplicates + len(rejects),
        "files": dict(sorted(acc.read.items())),
        "per_type": {k: dict(v) for k, v in sorted(acc.per_type.items())},
        "per_server": {k: dict(sorted(v.items())) for k, v in sorted(acc.per_server.items())},
        "reject_reasons": dict(acc.reasons.most_common()),
        "events_written": {k: v for k, v in stats.items() if k in ("send", "receive", "change")},
        "derived": {k: v for k, v in stats.items() if k not in ("send", "receive", "change")},
        "messages": {
            "total": len(msgs),
            "outgoing_without_incoming": sum(1 for m in msgs if not m.synthesized and not m.receives),
            "incoming_without_outgoing": sum(1 for m in msgs if m.synthesized),
        },
        "stores": own,
        "replids": rmap.report(),
        "inferred": {
            "stores_added_to_topology": added["stores"],
            "sites_added": added["sites"],
            "folders_added": added["folders"],
            "servers_named_from_file_names": sorted(acc.servers_from_file_names),
        },
        "times_without_offset": acc.times_without_offset,
        "description_lines_ignored": {
            "count": sum(acc.ignored_lines.values()),
            "lines": dict(acc.ignored_lines.most_common(20)),
        },
    }
    if acc.times_without_offset:
        how = f"in time zone {zone}" if zone is not None else \
            f"as UTC{default_offset_min:+d} minutes (--time-offset)"
        summary["notes"] = [f"{acc.times_without_offset} times had no UTC offset and were read {how}"]
    assert all(v in VERSIONS for v in versions.values())
    return IngestResult(lines, topo_json, rejects, errors, summary)
