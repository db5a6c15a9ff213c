"""The build steps as Spark's workers run them: one message's records, then one folder's messages.

The rules are the reference's own (``message_keys``, ``group_links``, ``group_hints``,
``build_messages``, ``derive_keyed``, ``version_hints``), run on one group; these functions only
turn a group's results into flat rows, each with its place in the reference's order (``sort``:
its group's first record, then its position), so that merging them gives what the reference
finds over the whole share. Rows carry no Spark type: the job declares their schemas.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Iterator
from typing import Any

from .classify import Parsed
from .derive import derive_keyed
from .identity import ReplidMap
from .inferred import version_hints
from .messages import Folders, Msg, build_messages, message_keys
from .parse import server_from_dn, site_from_dn
from .stage import parsed_from_row
from .translate import FolderKey, group_hints, group_links

#: the columns of a kept record that rebuild its ``Parsed`` (``stage.parsed_from_row``)
RECORD_COLUMNS = ["source", "record", "file_idx", "fmt", "raw_server", "provider", "event_id", "time_text",
                  "record_id", "server", "ts", "direction", "ev", "sender"]


def _reject(p: Parsed, reason: str, phase: int, sort: list[int]) -> dict[str, Any]:
    raw = p.raw
    return {"out": "reject", "phase": phase, "sort": sort, "source": raw.source, "record": raw.record,
            "record_id": raw.record_id, "server": p.server, "event_id": raw.event_id, "time_text": raw.time_text,
            "reason": reason}


def message_group(rows: list[dict[str, Any]], known: set[str]) -> Iterator[dict[str, Any]]:
    """One message key's kept records (in input order): ``message_keys`` over them, then what the
    REPLID inference needs (links, without a link repeated at once, which changes nothing; hints)
    and the records that stay in the message (``member``), their sender settled."""
    ps = [parsed_from_row(r, r["source"], r["record"]) for r in rows]
    ev = {id(p): r["ev"] for p, r in zip(ps, rows, strict=True)}
    g = [rows[0]["file_idx"], rows[0]["record"]]
    groups, bad = message_keys(ps, known)
    for n, (p, reason) in enumerate(bad):
        yield _reject(p, reason, 1, [*g, n])
    for key, kept in groups.items():
        for n, p in enumerate(kept):
            raw, dn = p.raw, p.ev.server_dn
            named = server_from_dn(dn) if dn else None
            v2003, v2007, v55 = version_hints(p)
            yield {"out": "member", "key": key, "g_file": g[0], "g_rec": g[1], "seq": n, "source": raw.source,
                   "record": raw.record, "fmt": raw.fmt, "raw_server": raw.server, "provider": raw.provider,
                   "event_id": raw.event_id, "time_text": raw.time_text, "record_id": raw.record_id,
                   "server": p.server, "ts": p.ts, "direction": p.direction, "ev": ev[id(p)], "sender": p.sender,
                   "dn_server": named or None, "site": (site_from_dn(dn) or None) if named else None,
                   "v2003": v2003, "v2007": v2007, "v55": v55}
        last = None
        for n, link in enumerate(group_links(kept)):
            if link != last:
                yield {"out": "link", "g_file": g[0], "g_rec": g[1], "seq": n, "s": link[0], "a": link[1],
                       "r": link[2], "b": link[3]}
            last = link
        for n, (server, replid, sender) in enumerate(group_hints(kept)):
            yield {"out": "hint", "g_file": g[0], "g_rec": g[1], "seq": n, "s": server, "a": replid, "r": sender}


def _light(p: Parsed) -> Parsed:
    """A record as a message keeps it past this step: what its reject row needs (no event)."""
    return Parsed(p.raw, p.server, p.ts, p.direction, None, p.sender, p.key)  # type: ignore[arg-type]


def _folder_cols(k: FolderKey | None, prefix: str = "f") -> dict[str, Any]:
    return {f"{prefix}s": None if k is None else k[0], f"{prefix}g": None if k is None else k[1]}


def message_built(rows: list[dict[str, Any]], rmap: ReplidMap, own: dict[str, str]) -> Iterator[dict[str, Any]]:
    """One message's member records (in order): ``build_messages`` over them; its messages (one
    per folder, pickled), rejects, what it says of folders, and its records still used."""
    g = [rows[0]["g_file"], rows[0]["g_rec"]]
    key = rows[0]["key"]
    ps = [parsed_from_row(r, r["source"], r["record"]) for r in rows]
    for p in ps:
        p.key = key
    folders = Folders()
    msgs, bad = build_messages({key: ps}, rmap, own, folders)
    for n, (p, reason) in enumerate(bad):
        yield _reject(p, reason, 2, [*g, n])
    for n, m in enumerate(msgs):
        m.order = (g[0], g[1], n)
        m.records = [_light(p) for p in m.records]
        yield {"out": "msg", **_folder_cols(m.folder), "sent_at": m.sent_at, "g_file": g[0], "g_rec": g[1],
               "seq": n, "synthesized": m.synthesized, "received": bool(m.receives),
               "msg": pickle.dumps(m, protocol=pickle.HIGHEST_PROTOCOL)}
    for k, path in folders.paths.items():
        yield {"out": "path", **_folder_cols(k), "g_file": g[0], "g_rec": g[1], "text": path}
    for k, parent in folders.parents.items():
        yield {"out": "parent", **_folder_cols(k), **_folder_cols(parent, "p"), "g_file": g[0], "g_rec": g[1]}
    for k, stores in folders.seen_at.items():
        for s in stores:
            yield {"out": "seen", **_folder_cols(k), "text": s}
    rejected = {id(p) for p, _ in bad}
    for n, p in enumerate(ps):
        if id(p) not in rejected:
            yield {"out": "used", "source": p.raw.source, "record": p.raw.record, "server": p.server,
                   "direction": p.direction, "text": f"0x{p.ev.type_code:X}", "g_file": g[0], "g_rec": g[1],
                   "seq": n}


def folder_derived(msgs: list[Msg], fids: dict[FolderKey, str], replicas: dict[str, list[str]],
                   all_stores: list[str]) -> Iterator[dict[str, Any]]:
    """One folder's messages: ``derive_keyed``'s lines (JSON, with their place in the log), the
    records it rejects, and its statistics with where each was first counted."""
    d = derive_keyed(msgs, fids, replicas, all_stores)
    for k, line in d.lines:
        yield {"out": "line", "sort": list(k), "text": json.dumps(line, ensure_ascii=False, separators=(",", ":"))}
    for m, reason in d.bad:
        for j, p in enumerate(m.records):
            yield _reject(p, reason, 3, [m.sent_at, *m.order, j])
    for name, n in d.stats.items():
        yield {"out": "stat", "text": name, "seq": n, "sort": list(d.firsts[name])}
