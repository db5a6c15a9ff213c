"""The other direction: a pfscope event log rendered as Exchange would log it.

Each ``send`` becomes the outgoing event on its sender's server and each ``receive`` the incoming
event on the receiver's, in the layouts of ``shared/design/exchange-events.md``, with every
number printed in the printing server's own REPLID numbering. ``change``, ``replicas`` and
``store_status`` lines have no replication event and are not rendered. Used to test the ingester
end to end on simulated organisations, and to make sample exports.

A folder's FID ``A-B`` is taken to be created by the A-th store (sorted by name, cyclically), with
GLOBCNT B; ingest given the same topology maps it back by path.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pfscope.spark_jobs.exchange.parse import Cn, ReplicationEvent
from pfscope.spark_jobs.model.cnset import CNSet
from pfscope.spark_jobs.model.timeutil import parse_ts
from pfscope.spark_jobs.model.topology import HIERARCHY_FID, Topology, is_2003_or_later

OUT_ID = {"hierarchy": 3018, "content": 3020, "status": 3017, "status_request": 3017}
TYPE_CODE = {
    "hierarchy": 0x2,
    "content": 0x4,
    "backfill_request": 0x8,
    "status": 0x10,
    "status_request": 0x20,
}
PROVIDER = "MSExchangeIS Public Store"
CRLF = "\r\n"


@dataclass
class ExportRecord:
    """One event as a Windows export carries it: rendered text and the insertion strings."""

    server: str  # the computer name, as Windows writes it (FQDN)
    event_id: int
    ts: int  # epoch microseconds
    message: str
    strings: list[str]
    provider: str = PROVIDER


@dataclass
class Rendering:
    records: list[ExportRecord] = field(default_factory=list)
    replids: dict[str, dict[str, int]] = field(default_factory=dict)  # server -> store -> REPLID
    lossy: Counter[str] = field(default_factory=Counter)  # what the layouts could not carry

    def replid_rows(self) -> list[tuple[str, str, str]]:
        """``server, replid, store`` rows for ``--replids``."""
        rows = []
        for server, table in sorted(self.replids.items()):
            for store, r in sorted(table.items(), key=lambda kv: kv[1]):
                rows.append((server, f"{r:X}", store))
        return rows


def replid_tables(topo: Topology, seed: int = 7) -> dict[str, dict[str, int]]:
    """Per server: its own store is REPLID 1, the others a server-specific permutation of 2..n+1."""
    stores = sorted(topo.stores)
    out: dict[str, dict[str, int]] = {}
    for i, s in enumerate(stores):
        server = topo.stores[s].server
        others = [x for x in stores if x != s]
        numbers = list(range(2, len(stores) + 1))
        random.Random(seed * 1000 + i).shuffle(numbers)
        table = {s: 1, **dict(zip(others, numbers, strict=True))}
        out[server] = table
    return out


def _legacy_dn(topo: Topology, store: str) -> str:
    st = topo.stores[store]
    return (
        f"/O=CONTOSO/OU={st.site.upper()}/CN=CONFIGURATION/CN=SERVERS/CN={st.server}/CN=MICROSOFT PUBLIC MDB"
    )


def render_log(
    topo: Topology, lines: Iterable[str], *, seed: int = 7, domain: str = "contoso.example"
) -> Rendering:
    """Every send and receive of the log as Exchange events, in the log's order."""
    r = Rendering(replids=replid_tables(topo, seed))
    stores = sorted(topo.stores)
    sends: dict[str, dict[str, Any]] = {}
    paths = {f.fid: f.path for f in topo.folders.values()}
    for text in lines:
        if not text.strip():
            continue
        ev = json.loads(text)
        kind = ev["kind"]
        if kind == "send":
            sends[ev["msg"]] = ev
            store = ev["store"]
            rec = _render(topo, r, stores, paths, ev, store, incoming=False, domain=domain)
        elif kind == "receive":
            m = sends.get(ev["msg"])
            if m is None:
                r.lossy["receive of an unknown message"] += 1
                continue
            rec = _render(topo, r, stores, paths, m, ev["store"], incoming=True, domain=domain, ts=ev["ts"])
        else:
            r.lossy[f"{kind} (no Exchange event)"] += 1
            continue
        r.records.append(rec)
    return r


def _render(
    topo: Topology,
    r: Rendering,
    stores: list[str],
    paths: dict[str, str],
    m: dict[str, Any],
    printer: str,
    *,
    incoming: bool,
    domain: str,
    ts: str | None = None,
) -> ExportRecord:
    server = topo.stores[printer].server
    table = r.replids[server]
    old = not is_2003_or_later(topo.stores[printer].version)  # 5.5/2000 layouts

    def cn(origin: str, n: int) -> str:
        return f"{table[origin]:X}-{n:X}"

    def pairs(s: CNSet) -> list[str]:
        out = [f"{cn(o, lo)},{cn(o, hi)}" for o, ranges in s.items() for lo, hi in ranges]
        return out or ["{0}"]

    def fid_text(fid: str) -> str:
        a, b = fid.split("-")
        creator = stores[(int(a, 16) - 1) % len(stores)]
        return f"{table[creator]:X}-{b}"

    mtype = m["type"]
    fid = m["fid"]
    if mtype == "backfill_response":
        code = 0x80000002 if fid == HIERARCHY_FID else 0x80000004
        out_id = 3019 if fid == HIERARCHY_FID else 3021
    elif mtype == "backfill_request":
        code, out_id = 0x8, (3014 if fid == HIERARCHY_FID else 3016)
    else:
        code, out_id = TYPE_CODE[mtype], OUT_ID[mtype]
    event_id = out_id + 10 if incoming else out_id
    msg_id = m["msg"]
    db = f"SG1\\Public Folder Database {topo.stores[m['store']].name}"
    folder = f"({fid_text(fid)}) {paths.get(fid, '')}" if fid != HIERARCHY_FID else None
    if mtype in ("hierarchy", "content"):
        changes = CNSet.parse(m["changes"])
        origins = changes.origins()
        if changes and (origins != [m["store"]] or len(changes.ranges(m["store"])) != 1):
            r.lossy["regular message whose changes are not one range of the sender's own CNs"] += 1
        lo = min((rg[0][0] for _, rg in changes.items()), default=0)
        hi = max((rg[-1][1] for _, rg in changes.items()), default=0)
        origin = m["store"] if m["store"] in origins or not origins else origins[0]
        number_lines = (
            [f"CN min: {cn(origin, lo)}", f"CN max: {cn(origin, hi)}"]
            if old
            else [f"CN min: {cn(origin, lo)}, CN max: {cn(origin, hi)}"]
        )
        strings_numbers = [cn(origin, lo), cn(origin, hi)]
        tail_sets = [("IDCN deleted: ", ["{0}"])]
    else:
        if mtype == "backfill_request":
            s = CNSet.parse(m["requested"])
        elif mtype == "backfill_response":
            s = CNSet.parse(m["changes"])
        else:
            s = CNSet.parse(m["cnset"])
        number_lines = []
        strings_numbers = []
        tail_sets = [("CNSET: ", pairs(s)), (", CNSET(FAI): ", ["{0}"])]
        if mtype == "status_request" and m.get("responders"):
            r.lossy["status request responders (not printed)"] += 1
    head = (
        "An incoming replication message was processed."
        if incoming
        else "An outgoing replication message was issued."
    )
    label = "Type"
    if topo.stores[printer].version == "2003" and mtype == "backfill_request":
        label = "Incoming message type" if incoming else "Outgoing message type"  # the 2003 layout
    text = [head, f"{label}: 0x{code:X}", f"Message ID: {msg_id}"]
    if not old:
        text.append(f'Database "{db}"')
    if folder:
        text.append(f"Folder(s): {folder}")
    text += number_lines
    for label, ps in tail_sets:
        if label.startswith("IDCN"):
            continue
        text.append(label + ps[0])
        text += ps[1:]
    text.append("RFIs: 0")
    for label, ps in tail_sets:
        if label.startswith("IDCN"):
            text.append(label + ps[0])
    dn = _legacy_dn(topo, m["store"])
    if not incoming and not old and mtype == "backfill_request" and len(m["to"]) == 1:
        dn = _legacy_dn(topo, m["to"][0])  # 2003+ print the server asked
        incoming_or_asked = True
    else:
        incoming_or_asked = incoming
    if incoming_or_asked:
        text += ["Server:", dn] if old else [f"Server: {dn}"]
    strings = [f"0x{code:X}", msg_id]
    if not old:
        strings.append(db)
    if folder:
        strings.append(folder)
    strings += strings_numbers
    sets = [CRLF.join(ps) for label, ps in tail_sets if not label.startswith("IDCN")]
    strings += sets
    strings.append("0")
    strings += [CRLF.join(ps) for label, ps in tail_sets if label.startswith("IDCN")]
    if incoming_or_asked:
        strings.append(dn)
    return ExportRecord(f"{server}.{domain}", event_id, parse_ts(ts or m["ts"]), CRLF.join(text), strings)


# --------------------------------------------------------------------------------------------
# One description in any published layout (docs/exchange-event-grammar.md)
# --------------------------------------------------------------------------------------------
LAYOUTS = (
    "2007",
    "2007-incoming-guide",
    "2010-backfill",
    "2003-backfill-request",
    "2000",
    "5.5",
    "5.x-status",
)


def _pair_lines(pairs: list[tuple[Cn, Cn]] | None, c: Callable[[Cn], str] = str) -> list[str]:
    return [f"{c(lo)},{c(hi)}" for lo, hi in pairs or []] or ["{0}"]


def wrap_dn(dn: str, cuts: Iterable[int]) -> list[str]:
    """A legacy DN broken over lines as the KB copies show it: before a ``/`` or ``=`` or at a
    space; cut positions that are none of these are skipped."""
    out: list[str] = []
    start = 0
    for c in sorted(set(cuts)):
        if not start < c < len(dn):
            continue
        prev, here = dn[c - 1], dn[c]
        if (
            here in "/="
            and prev != " "
            and dn[c - 1 : c + 1].strip() == dn[c - 1 : c + 1]
            and (c + 1 >= len(dn) or dn[c + 1] != " ")
        ):
            out.append(dn[start:c])
            start = c
        elif here == " " and prev not in " /=" and c + 1 < len(dn) and dn[c + 1] not in " /=":
            out.append(dn[start:c])
            start = c + 1
    out.append(dn[start:])
    return out


def render_description(
    ev: ReplicationEvent,
    layout: str,
    *,
    newline: str = CRLF,
    outgoing: bool = True,
    dn_cuts: Iterable[int] = (),
    blank_lines: bool = False,
    lower_hex: bool = False,
) -> str:
    """``ev`` printed in one of ``LAYOUTS``; ``parse_description`` reads every field back."""

    def c(x: Cn) -> str:
        return str(x).lower() if lower_hex else str(x)

    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}")
    gap = [""] if blank_lines else []
    head = (
        "An outgoing replication message was issued."
        if outgoing
        else "An incoming replication message was processed."
    )
    code = f"0x{ev.type_code:X}"
    out: list[str] = []
    if layout == "5.x-status":
        out.append(f"{'Outgoing' if outgoing else 'Incoming'} Message Type {code}")
    elif layout == "2003-backfill-request":
        out += [head, f"{'Outgoing' if outgoing else 'Incoming'} message type: {code}"]
    else:
        out += [head, *gap, f"Type: {code}"]
    out.append(f"Message ID: {ev.msg_id}")
    short = layout in ("5.5", "5.x-status")
    for k, (fid, path) in enumerate(ev.folders):
        label = "Folder(s): " if short else "Folder: "
        out.append(f"{label if k == 0 else ''}({c(fid)}) {path}")
    cn_line = None
    if ev.cn_min is not None and ev.cn_max is not None:
        if layout in ("2000", "2007-incoming-guide"):
            cn_line = f"CN min: {c(ev.cn_min)} CN max:{' ' if layout != '2000' else ''}{c(ev.cn_max)}"
        elif not short:
            cn_line = f"CN min: {c(ev.cn_min)}, CN max: {c(ev.cn_max)}"
    if ev.database is not None:
        dot = "." if layout in ("2010-backfill", "2003-backfill-request", "2000") else ""
        db = f'Database "{ev.database}"{dot}'
        if layout == "2000" and cn_line:
            db, cn_line = f"{db} {cn_line}", ""  # the range on the Database line (KB 821930)
        out += [*gap, db]
    if cn_line:
        out.append(cn_line)
    elif cn_line is None and ev.cn_min is not None and ev.cn_max is not None:
        out += [f"CN min: {c(ev.cn_min)}", f"CN max: {c(ev.cn_max)}"]
    if ev.cnset is not None:
        ps = _pair_lines(ev.cnset, c)
        out += [f"CNSET: {ps[0]}", *ps[1:], *gap]
    if ev.cnset_fai is not None:
        ps = _pair_lines(ev.cnset_fai, c)
        label = {
            "5.5": ", CNSET(FAI): ",
            "5.x-status": ", CNSET(FAI): ",
            "2010-backfill": "CNSET (FAI): ",
        }.get(layout, "CNSET(FAI): ")
        out += [f"{label}{ps[0]}", *ps[1:], *gap]
    if ev.rfis or layout not in ("2003-backfill-request", "2010-backfill"):
        out.append("RFIs:" if layout == "2007-incoming-guide" else f"RFIs: {len(ev.rfis)}")
        for k, r in enumerate(ev.rfis, 1):
            out.append(
                f"{k}: {c(r.fid)},{c(r.pfid)},{r.offset}"
                if short
                else f"{k}) FID: {c(r.fid)}, PFID: {c(r.pfid)}, Offset: {r.offset}"
            )
            if r.path is not None:
                out.append(r.path)
    if ev.message_ids:
        out.append(f"Message IDs: {len(ev.message_ids)}")
        for k, m in enumerate(ev.message_ids, 1):
            out.append(f"{k}: {c(m.mid)}, {c(m.cn)}")
            if m.detail is not None:
                out.append(m.detail)
    if ev.idcn_deleted is not None:
        ps = _pair_lines(ev.idcn_deleted, c)
        out += ["IDCN Deleted:", *ps] if short else [f"IDCN deleted: {ps[0]}", *ps[1:]]
    if ev.server_dn is not None:
        parts = wrap_dn(ev.server_dn, dn_cuts)
        out += (
            [*gap, "Server:", *parts]
            if short or (len(parts) > 1 and layout == "2000")
            else [f"Server: {parts[0]}", *parts[1:]]
        )
    return newline.join(out)


# How the published texts frame a description: the record's header above it (Event Viewer's text
# copy on Windows 2003 and on Vista and later, the KBs' "Src:" blocks), indentation (a KB's
# spaces, a forum post's tabs) and Windows 2003's help line under it. None of it is the message.
HEADERS: dict[str, tuple[str, ...]] = {
    "none": (),
    "kb": (
        "Event ID: {id}",
        "Src: MSExchangeIS Public",
        "Type: Information",
        "Category: Replication Incoming",
        "Description:",
    ),
    "2003": (
        "Event Type:\tInformation",
        "Event Source:\tMSExchangeIS Public Store",
        "Event Category:\tReplication Outgoing Messages",
        "Event ID:\t{id}",
        "Date:\t\t5/19/2010",
        "Time:\t\t4:16:12 PM",
        "User:\t\tN/A",
        "Computer:\tFE-01",
        "Description:",
    ),
    "vista": (
        "Log Name:      Application",
        "Source:        MSExchangeIS Public Store",
        "Date:          2010-05-19T16:16:12.000",
        "Event ID:      {id}",
        "Task Category: Replication Outgoing Messages",
        "Level:         Information",
        "Keywords:      Classic",
        "User:          N/A",
        "Computer:      DC-01.corp.example",
        "Description:",
    ),
}
HELP_LINE = "For more information, see Help and Support Center at http://go.microsoft.com/fwlink/events.asp."


def frame_description(
    text: str,
    header: str = "none",
    *,
    event_id: int = 3018,
    indent: str = "",
    help_line: bool = False,
    newline: str = CRLF,
) -> tuple[str, list[str]]:
    """``text`` as a pasted record shows it; also the lines the parser is to keep in ``ignored``
    (stripped, in the order it meets them: header lines first, the bare "Description:" and the
    help line among the lines it did not know, at the end)."""
    head = [h.format(id=event_id) for h in HEADERS[header]]
    lines = [*head, *re.split(r"\r\n|\r|\n", text), *(["", HELP_LINE] if help_line else [])]
    framed = newline.join(indent + ln if ln else ln for ln in lines)
    labels = [h.strip() for h in head if h != "Description:"]
    unknown = [*(["Description:"] if "Description:" in head else []), *([HELP_LINE] if help_line else [])]
    return framed, [*labels, *unknown]
