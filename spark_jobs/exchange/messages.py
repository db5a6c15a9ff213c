"""Records grouped into messages (matched by Message ID), then each message in pfscope's terms."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pfscope.spark_jobs.exchange.classify import Parsed
from pfscope.spark_jobs.exchange.identity import ReplidMap, norm_server
from pfscope.spark_jobs.exchange.parse import HIERARCHY_TYPES, server_from_dn
from pfscope.spark_jobs.exchange.reasons import (
    R_BEFORE_SEND,
    R_NO_FOLDER,
    R_ON_SENDER,
    R_SENDER_UNKNOWN,
    R_SENDER_UNKNOWN_SMTP,
    R_TWO_SENDERS,
)
from pfscope.spark_jobs.exchange.translate import ROOT, FolderKey, Unmapped, cnset_of, translate_folder
from pfscope.spark_jobs.model.cnset import EMPTY, CNSet

_SMTP_RE = re.compile(r"^<?[^<>@\s]+@([^<>\s]+?)>?$")


def message_key(msg_id: str, sender: str | None) -> str | None:
    """The message a record belongs to, as far as the record alone says: an SMTP id is unique,
    an internal (5.x, 2000) id only with its sender; None when the sender is unknown."""
    if _SMTP_RE.match(msg_id):
        return msg_id
    if sender is None:
        return None
    return f"{sender}/{msg_id}"


def message_keys(
    parsed: list[Parsed], other_servers: Iterable[str] = ()
) -> tuple[dict[str, list[Parsed]], list[tuple[Parsed, str]]]:
    """Group events by message; SMTP ids are unique, internal (5.x, 2000) ids only per sender. The
    sender is the server of the outgoing event, else the incoming event's Server line, else the
    host of an SMTP id when that names a server the logs know."""
    known = {p.server for p in parsed} | {p.sender for p in parsed if p.sender} | set(other_servers)
    groups: dict[str, list[Parsed]] = defaultdict(list)
    bad: list[tuple[Parsed, str]] = []
    for p in parsed:
        key = message_key(p.ev.msg_id, p.sender)
        if key is None:
            bad.append((p, R_SENDER_UNKNOWN))
            continue
        p.key = key
        groups[key].append(p)
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
    #: its place in the order messages are built (the reference: its index; the Spark job: its
    #: group's first record, its folder's position): what orders messages sent at one time
    order: tuple[int, ...] = ()


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
        for p in [*outs, *ins]:
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
            msgs.append(
                Msg(
                    msg=key if len(fkeys) == 1 else f"{key}#{fk[0]}-{fk[1]:X}" if fk else key,
                    type=ev.type_name,
                    type_code=ev.type_code,
                    folder=fk,
                    sender=sender,
                    sent_at=sent_at,
                    synthesized=not outs,
                    changes=changes,
                    requested=requested,
                    cnset=printed,
                    addressed=addressed,
                    receives=receives,
                    records=kept,
                )
            )
    return msgs, bad


def _content(rmap: ReplidMap, p: Parsed, folders: Folders) -> tuple[list[FolderKey], Any, Any, Any]:
    ev, server = p.ev, p.server
    fkeys: list[FolderKey] = []
    for fid, path in ev.folders:
        k = translate_folder(rmap, server, fid)
        folders.note(k, path)
        fkeys.append(k)
    for r in ev.rfis:
        k = translate_folder(rmap, server, r.fid)
        parent = translate_folder(rmap, server, r.pfid)
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
