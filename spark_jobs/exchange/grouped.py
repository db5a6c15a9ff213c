"""The build steps as Spark's workers run them: one message's records, then one folder's messages.

The rules are the reference's own (``message_keys``, ``group_links``, ``group_hints``,
``build_messages``, ``derive_keyed``, ``version_hints``), run on one group; these functions only
turn a group's results into flat rows, each with its place in the reference's order (``sort``:
its group's first record, then its position), so that merging them gives what the reference
finds over the whole share. Rows carry no Spark type: the job declares their schemas.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import Any, cast

from pfscope.spark_jobs.exchange.classify import Parsed
from pfscope.spark_jobs.exchange.derive import derive_keyed
from pfscope.spark_jobs.exchange.event_files import LINE_JSON, placement
from pfscope.spark_jobs.exchange.identity import ReplidMap
from pfscope.spark_jobs.exchange.inferred import version_hints
from pfscope.spark_jobs.exchange.messages import Folders, Msg, build_messages, message_keys
from pfscope.spark_jobs.exchange.parse import server_from_dn, site_from_dn
from pfscope.spark_jobs.exchange.stage import parsed_from_row
from pfscope.spark_jobs.exchange.translate import FolderKey, group_hints, group_links

#: the columns of a kept record that rebuild its ``Parsed`` (``stage.parsed_from_row``)
RECORD_COLUMNS = [
    "source",
    "record",
    "file_idx",
    "fmt",
    "raw_server",
    "provider",
    "event_id",
    "time_text",
    "record_id",
    "server",
    "ts",
    "direction",
    "ev",
    "sender",
]


def _reject(p: Parsed, reason: str, phase: int, sort: list[int]) -> dict[str, Any]:
    raw = p.raw
    return {
        "out": "reject",
        "phase": phase,
        "sort": sort,
        "g_file": sort[0],  # the file its place starts with
        "source": raw.source,
        "record": raw.record,
        "record_id": raw.record_id,
        "server": p.server,
        "event_id": raw.event_id,
        "time_text": raw.time_text,
        "reason": reason,
    }


def _grouped(
    rows: list[dict[str, Any]], known: set[str]
) -> tuple[list[int], str | None, list[Parsed], list[tuple[Parsed, str]]]:
    """One message key's kept records (in input order) through ``message_keys``: the group's place
    (its first record), its key and records (none when all were rejected), and the rejected."""
    ps = [parsed_from_row(r, r["source"], r["record"]) for r in rows]
    groups, bad = message_keys(ps, known)
    key, kept = next(iter(groups.items()), (None, []))
    return [rows[0]["file_idx"], rows[0]["record"]], key, kept, bad


class MessageGrouper:
    """What the REPLID table needs of one message (``group``: one message key's kept records; the
    records without a key come as one group): the records ``message_keys`` rejects, its links
    (without a link repeated at once, which changes nothing), each hint at its first place in it
    (a hint repeated later changes nothing) and the servers it names. Every row is the group's
    own, so what the groups say together is an aggregate over their rows (``build_steps``)."""

    def __init__(self, known: set[str]):
        self.known = known

    def group(self, rows: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        g, _key, kept, bad = _grouped(rows, self.known)
        unkeyed = rows[0]["msg_key"] is None  # rejected before any group is made: in input order
        for n, (p, reason) in enumerate(bad):
            yield (
                _reject(p, reason, 0, [rows[n]["file_idx"], p.raw.record])
                if unkeyed
                else _reject(p, reason, 1, [*g, n])
            )
        place = {"g_file": g[0], "g_rec": g[1]}
        last = None
        for n, link in enumerate(group_links(kept)):
            if link != last:
                yield {
                    "out": "link",
                    **place,
                    "seq": n,
                    "s": link[0],
                    "a": link[1],
                    "r": link[2],
                    "b": link[3],
                }
            last = link
        hints: dict[tuple[str, int, str], int] = {}
        for n, hint in enumerate(group_hints(kept)):
            hints.setdefault(hint, n)
        for (server, replid, sender), n in hints.items():
            yield {"out": "hint", **place, "seq": n, "s": server, "a": replid, "r": sender}
        servers = {p.server for p in kept} | {p.sender for p in kept if p.sender}
        servers |= {n for p in kept if p.ev.server_dn for n in [server_from_dn(p.ev.server_dn)] if n}
        if servers:
            yield {"out": "servers", **place, "names": sorted(servers)}


def _ref(p: Parsed) -> tuple[Any, ...]:
    """A record as a message keeps it past this step: what its reject row needs, as plain values."""
    raw = p.raw
    return (raw.source, raw.record, raw.record_id, p.server, raw.event_id, raw.time_text)


def _folder_cols(k: FolderKey | None, prefix: str = "f") -> dict[str, Any]:
    return {f"{prefix}s": None if k is None else k[0], f"{prefix}g": None if k is None else k[1]}


class MessageBuilder:
    """``build_messages`` over one message group (``group``: one message key's kept records, which
    go through ``message_keys`` again): each message (one per folder, pickled), the records it
    rejects; a row per record (used or not, the site its Server line names, its version hints);
    and a row per folder it speaks of (its path, parent and the stores it was seen at). Every row
    is the group's own: what the groups say together of folders and servers is an aggregate over
    their rows (``build_steps``), each first in the reference's order."""

    def __init__(self, known: set[str], rmap: ReplidMap, own: dict[str, str]):
        self.known, self.rmap, self.own = known, rmap, own

    def group(self, rows: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        g, key, ps, _bad = _grouped(rows, self.known)
        if key is None:
            return
        folders = Folders()
        msgs, bad = build_messages({key: ps}, self.rmap, self.own, folders)
        place = {"g_file": g[0], "g_rec": g[1]}
        for n, (p, reason) in enumerate(bad):
            yield _reject(p, reason, 2, [*g, n])
        for n, m in enumerate(msgs):
            m.records = [_ref(p) for p in m.records]  # type: ignore[misc]  # shipped as plain tuples
            yield {
                "out": "msg",
                **_folder_cols(m.folder),
                "sent_at": m.sent_at,
                **place,
                "seq": n,
                "synthesized": m.synthesized,
                "received": bool(m.receives),
                "msg": pickle.dumps(m, protocol=pickle.HIGHEST_PROTOCOL),
            }
        for k in folders.paths.keys() | folders.parents.keys() | folders.seen_at.keys():
            yield {
                "out": "folder",
                **_folder_cols(k),
                **_folder_cols(folders.parents.get(k), "p"),
                **place,
                "text": folders.paths.get(k),
                "stores": sorted(folders.seen_at.get(k, ())),
            }
        rejected = {id(p) for p, _ in bad}
        for n, p in enumerate(ps):
            dn = p.ev.server_dn
            named, site = (server_from_dn(dn), site_from_dn(dn)) if dn else (None, None)
            yield {
                "out": "record",
                "source": p.raw.source,
                "record": p.raw.record,
                "server": p.server,
                "direction": p.direction,
                "text": f"0x{p.ev.type_code:X}",
                **place,
                "seq": n,
                "used": id(p) not in rejected,
                "s": named if named and site else None,
                "site": site if named and site else None,
                "flags": list(version_hints(p)),
            }


def _message(row: dict[str, Any]) -> Msg:
    """A message as ``MessageBuilder`` pickled it, with its place in the order messages are built:
    its group's place and its position there, as the row (not the pickle) says."""
    m: Msg = pickle.loads(row["msg"])
    m.order = (row["g_file"], row["g_rec"], row["seq"])
    return m


class FolderDeriver:
    """``derive_keyed`` over one partition's folders (``group``: one folder's messages, as
    ``MessageBuilder`` keeps them): each line as JSON with its place in the log and its file by
    block and folder as far as it says (``event_files.placement``), the records it rejects, and its
    statistics, each with where it was first counted: every row its folder's own, so that a
    folder's rows can be kept from a run to the next."""

    def __init__(self, fids: dict[FolderKey, str], replicas: dict[str, list[str]], all_stores: list[str]):
        self.fids, self.replicas, self.all_stores = fids, replicas, all_stores

    def group(self, rows: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        d = derive_keyed([_message(r) for r in rows], self.fids, self.replicas, self.all_stores)
        for k, line in d.lines:
            at = placement(line)
            yield {
                "out": "line",
                "sort": list(k),
                "text": LINE_JSON.encode(line),
                "name": at.name,
                "mkey": at.msg,
                "skey": at.send and at.send[0],
                "sname": at.send and at.send[1],
            }
        for m, reason in d.bad:
            refs = cast("list[tuple[Any, ...]]", m.records)  # ``_ref``'s tuples, as MessageBuilder ships them
            for j, (source, record, record_id, server, event_id, time_text) in enumerate(refs):
                yield {
                    "out": "reject",
                    "phase": 3,
                    "sort": [m.sent_at, *m.order, j],
                    "source": source,
                    "record": record,
                    "record_id": record_id,
                    "server": server,
                    "event_id": event_id,
                    "time_text": time_text,
                    "reason": reason,
                }
        for name, n in d.stats.items():
            yield {"out": "stat", "text": name, "seq": n, "sort": list(d.firsts[name])}
