"""The description text of one ``MSExchangeIS Public Store`` replication event.

Exchange builds the description from a message template and the event's insertion strings;
labels (``Type:``, ``CN min:``, ...) are in the template, so only rendered exports carry them.
``parse_description`` reads a rendered description in any of the layouts of
``shared/design/exchange-events.md`` (5.x to 2010); ``label_insertion_strings`` rebuilds one from
bare insertion strings where their shapes can be recognised. Pure functions: text in, values out.

Every number stays as the server printed it (``Cn``: REPLID and GLOBCNT); REPLIDs are local to
the server that printed them and are mapped to stores later (``identity.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Type codes (the key of every replication event) and their pfscope message types.
TYPE_NAMES: dict[int, str] = {
    0x2: "hierarchy",
    0x4: "content",
    0x8: "backfill_request",
    0x10: "status",
    0x20: "status_request",
    0x80000002: "backfill_response",
    0x80000004: "backfill_response",
}
HIERARCHY_TYPES = frozenset({0x2, 0x80000002})

# Outgoing event IDs; the incoming ID of a kind is its outgoing ID plus 10.
OUTGOING_IDS = frozenset({3014, 3016, 3017, 3018, 3019, 3020, 3021})
INCOMING_IDS = frozenset(i + 10 for i in OUTGOING_IDS)
ERROR_IDS = frozenset({3005, 3079, 3085, 3089, 3092, 3093})


class DescriptionError(ValueError):
    """A description that is not a usable replication event; ``str()`` is the reason."""


@dataclass(frozen=True, slots=True)
class Cn:
    """``REPLID-GLOBCNT`` as printed; the REPLID is local to the printing server."""

    replid: int
    globcnt: int

    def __str__(self) -> str:
        return f"{self.replid:X}-{self.globcnt:X}"


CnRange = tuple[Cn, Cn]


@dataclass(frozen=True, slots=True)
class Rfi:
    """One replication folder information entry of a hierarchy message: a folder and its path."""

    fid: Cn
    pfid: Cn
    offset: int
    path: str | None


@dataclass
class ReplicationEvent:
    """What one description says, in the printing server's numbering."""

    type_code: int
    msg_id: str
    direction: str | None = None  # from the first line, when it says; the event ID decides
    database: str | None = None
    folders: list[tuple[Cn, str]] = field(default_factory=list)
    cn_min: Cn | None = None
    cn_max: Cn | None = None
    cnset: list[CnRange] | None = None
    cnset_fai: list[CnRange] | None = None
    rfis: list[Rfi] = field(default_factory=list)
    idcn_deleted: list[CnRange] | None = None
    server_dn: str | None = None
    message_type_label: bool = False  # "Outgoing message type:" (2003 layouts)
    short_rfis: bool = False  # "1: fid,pfid,offset" (5.5 layouts)

    @property
    def type_name(self) -> str:
        return TYPE_NAMES[self.type_code]

    def meaning(self) -> tuple[object, ...]:
        """What the event says, without how it was laid out (first line, labels): two exports
        of one event, rendered or as bare insertion strings, mean the same."""
        return (self.type_code, self.msg_id, self.database, tuple(self.folders), self.cn_min, self.cn_max,
                tuple(self.cnset or ()), tuple(self.cnset_fai or ()), tuple(self.rfis),
                tuple(self.idcn_deleted or ()), self.server_dn)


_CN = r"[0-9A-Fa-f]{1,16}-[0-9A-Fa-f]{1,16}"
_CN_RE = re.compile(rf"^\s*({_CN})\s*$")
_PAIR_RE = re.compile(rf"^\s*({_CN})\s*,\s*({_CN})\s*$")
_TYPE_RE = re.compile(r"^(?:(?:outgoing|incoming)\s+message\s+)?type\s*:\s*(0x[0-9A-Fa-f]+|\d+)\s*$", re.I)
_MSGID_RE = re.compile(r"^message\s+id\s*:\s*(.*?)\s*$", re.I)
_DB_RE = re.compile(r"^database(?:\s*:\s*|\s+)\"?(.*?)\"?\s*$", re.I)
_FOLDER_RE = re.compile(r"^folders?(?:\(s\))?\s*:\s*(.*?)\s*$", re.I)
_FOLDER_ITEM_RE = re.compile(rf"^\(\s*({_CN})\s*\)\s*(.*?)\s*$")
_CNMINMAX_RE = re.compile(rf"^cn\s+min\s*:\s*({_CN})\s*(?:,\s*cn\s+max\s*:\s*({_CN}))?\s*$", re.I)
_CNMAX_RE = re.compile(rf"^cn\s+max\s*:\s*({_CN})\s*$", re.I)
_CNSET_RE = re.compile(r"^(,\s*)?cnset(\(fai\))?\s*:\s*(.*?)\s*$", re.I)
_RFIS_RE = re.compile(r"^rfis\s*:\s*(\d+)\s*$", re.I)
_RFI_LONG_RE = re.compile(
    rf"^(\d+)\)\s*fid\s*:\s*({_CN})\s*,\s*pfid\s*:\s*({_CN})\s*,\s*offset\s*:\s*([0-9A-Fa-fx]+)\s*$", re.I
)
_RFI_SHORT_RE = re.compile(rf"^(\d+)\s*:\s*({_CN})\s*,\s*({_CN})\s*,\s*([0-9A-Fa-fx]+)\s*$")
_IDCN_RE = re.compile(r"^idcn\s+deleted\s*:\s*(.*?)\s*$", re.I)
_SERVER_RE = re.compile(r"^server\s*:\s*(.*?)\s*$", re.I)
_LABEL_RE = re.compile(
    r"^(?:(?:outgoing|incoming)\s+message\s+)?type\s*:|^message\s+id\s*:|^database\b|^folders?(?:\(s\))?\s*:|"
    r"^cn\s+m(?:in|ax)\s*:|^,?\s*cnset|^rfis\s*:|^idcn\s+deleted|^server\s*:",
    re.I,
)


def parse_cn(text: str) -> Cn:
    m = _CN_RE.match(text)
    if not m:
        raise DescriptionError(f"not a REPLID-GLOBCNT number: {text.strip()[:40]!r}")
    r, g = m.group(1).split("-")
    return Cn(int(r, 16), int(g, 16))


def parse_type(text: str) -> int:
    t = text.strip().lower()
    return int(t, 16) if t.startswith("0x") else int(t)


def _pairs(lines: list[str], where: str) -> list[CnRange]:
    """``low,high`` pairs, one a line; ``{0}`` (or nothing) is the empty set."""
    out: list[CnRange] = []
    for line in lines:
        s = line.strip()
        if not s or s == "{0}":
            continue
        m = _PAIR_RE.match(s)
        if not m:
            raise DescriptionError(f"{where}: not a 'low,high' pair: {s[:40]!r}")
        lo, hi = parse_cn(m.group(1)), parse_cn(m.group(2))
        if lo.replid != hi.replid or lo.globcnt > hi.globcnt:
            raise DescriptionError(f"{where}: bad range {lo}-{hi}")
        out.append((lo, hi))
    return out


def _is_pair_line(s: str) -> bool:
    s = s.strip()
    return s == "{0}" or bool(_PAIR_RE.match(s))


def parse_description(text: str) -> ReplicationEvent:
    """A rendered description to its values, or ``DescriptionError`` saying why not."""
    lines = [ln.rstrip() for ln in re.split(r"\r\n|\r|\n", text)]
    lines = [ln for ln in lines if ln.strip() != ""]
    if not lines:
        raise DescriptionError("empty description")
    direction: str | None = None
    head = lines[0].lower()
    if "outgoing replication message" in head:
        direction = "out"
    elif "incoming replication message" in head:
        direction = "in"

    type_code: int | None = None
    msg_id: str | None = None
    ev = ReplicationEvent(type_code=0, msg_id="", direction=direction)
    i = 0
    n = len(lines)
    while i < n:
        s = lines[i].strip()
        i += 1
        first = s[:1].lower()  # cheap dispatch: only the patterns a line can start like are tried
        if first in "toi" and (m := _TYPE_RE.match(s)):
            type_code = parse_type(m.group(1))
            low = s.lower()
            ev.message_type_label = "message type" in low
            if low.startswith("outgoing"):
                ev.direction = "out"
            elif low.startswith("incoming"):
                ev.direction = "in"
        elif first == "m" and (m := _MSGID_RE.match(s)):
            msg_id = m.group(1) or (lines[i].strip() if i < n else "")
            if not m.group(1):
                i += 1
        elif first == "d" and (m := _DB_RE.match(s)):
            ev.database = m.group(1)
        elif first == "f" and (m := _FOLDER_RE.match(s)):
            items = [m.group(1)] if m.group(1) else []
            while i < n and _FOLDER_ITEM_RE.match(lines[i].strip()):
                items.append(lines[i].strip())
                i += 1
            for item in items:
                fm = _FOLDER_ITEM_RE.match(item)
                if not fm:
                    raise DescriptionError(f"Folder: not '(FID) path': {item[:60]!r}")
                ev.folders.append((parse_cn(fm.group(1)), fm.group(2)))
        elif first == "c" and (m := _CNMINMAX_RE.match(s)):
            ev.cn_min = parse_cn(m.group(1))
            if m.group(2):
                ev.cn_max = parse_cn(m.group(2))
        elif first == "c" and (m := _CNMAX_RE.match(s)):
            ev.cn_max = parse_cn(m.group(1))
        elif first in "c," and (m := _CNSET_RE.match(s)):
            fai = m.group(2) is not None
            block = [m.group(3)] if m.group(3) else []
            while i < n and _is_pair_line(lines[i]):
                block.append(lines[i])
                i += 1
            pairs = _pairs(block, "CNSET(FAI)" if fai else "CNSET")
            if fai:
                ev.cnset_fai = pairs
            else:
                ev.cnset = pairs
        elif first == "r" and (m := _RFIS_RE.match(s)):
            count = int(m.group(1))
            for k in range(count):
                if i >= n:
                    raise DescriptionError(f"RFIs: {count} announced, {k} found")
                e = lines[i].strip()
                rm = _RFI_LONG_RE.match(e)
                if not rm:
                    rm = _RFI_SHORT_RE.match(e)
                    ev.short_rfis = ev.short_rfis or rm is not None
                if not rm:
                    raise DescriptionError(f"RFI {k + 1}: not 'n) FID: ..., PFID: ..., Offset: ...' "
                                           f"nor 'n: fid,pfid,offset': {e[:60]!r}")
                i += 1
                path: str | None = None
                if i < n:
                    nxt = lines[i].strip()
                    if not (_RFI_LONG_RE.match(nxt) or _RFI_SHORT_RE.match(nxt) or _LABEL_RE.match(nxt)):
                        path = nxt
                        i += 1
                off = rm.group(4)
                offset = int(off, 16) if off.lower().startswith("0x") else int(off)
                ev.rfis.append(Rfi(parse_cn(rm.group(2)), parse_cn(rm.group(3)), offset, path))
        elif first == "i" and (m := _IDCN_RE.match(s)):
            block = [m.group(1)] if m.group(1) else []
            while i < n and _is_pair_line(lines[i]):
                block.append(lines[i])
                i += 1
            ev.idcn_deleted = _pairs(block, "IDCN deleted")
        elif first == "s" and (m := _SERVER_RE.match(s)):
            dn = m.group(1)
            if not dn and i < n:
                dn = lines[i].strip()
                i += 1
            ev.server_dn = dn or None
        # any other line (the first sentence, free text) carries nothing the model needs
    if type_code is None:
        raise DescriptionError("no Type line")
    if type_code not in TYPE_NAMES:
        raise DescriptionError(f"unknown Type 0x{type_code:X}")
    if not msg_id:
        raise DescriptionError("no Message ID")
    ev.type_code = type_code
    ev.msg_id = msg_id
    if (ev.cn_min is None) != (ev.cn_max is None):
        raise DescriptionError("CN min without CN max (or the reverse)")
    if ev.cn_min and ev.cn_max and (ev.cn_min.replid != ev.cn_max.replid or ev.cn_min.globcnt > ev.cn_max.globcnt):
        raise DescriptionError(f"CN min {ev.cn_min} and CN max {ev.cn_max} are not a range")
    return ev


def server_from_dn(dn: str) -> str | None:
    """The server named by a legacy Exchange DN (``.../CN=SERVERS/CN=<server>/CN=...``)."""
    m = re.search(r"/cn=servers/cn=([^/]+)", dn, re.I)
    return m.group(1).strip().upper() if m else None


def site_from_dn(dn: str) -> str | None:
    """The ``OU=`` of a legacy DN: the site on 5.5, the administrative group later."""
    m = re.search(r"/ou=([^/]+)", dn, re.I)
    return m.group(1).strip() if m else None


# --------------------------------------------------------------------------------------------
# Insertion strings without labels (plain XML, raw .evtx)
# --------------------------------------------------------------------------------------------
_STR_TYPE_RE = re.compile(r"^0x[0-9A-Fa-f]{1,8}$")
_STR_SMTP_ID_RE = re.compile(r"^<[^<>\s]+@[^<>\s]+>$")
_STR_DN_RE = re.compile(r"^/o=", re.I)
_STR_INT_RE = re.compile(r"^\d+$")


def label_insertion_strings(strings: list[str]) -> str | None:
    """Rebuild a labelled description from bare insertion strings, by the shape of each, in the
    order the templates print them; None when the shapes do not fit a known layout.

    A string that already carries labels (some versions pass the whole text as one string) is
    returned as it is."""
    joined = "\r\n".join(strings)
    if re.search(r"(^|\n)\s*(?:(?:outgoing|incoming)\s+message\s+)?type\s*:", joined, re.I):
        return joined
    out: list[str] = []
    it = [s.strip() for s in strings]
    k = 0
    if k < len(it) and _STR_TYPE_RE.match(it[k]):
        out.append(f"Type: {it[k]}")
        k += 1
    else:
        return None
    if k < len(it) and (_STR_SMTP_ID_RE.match(it[k]) or _CN_RE.match(it[k])):
        out.append(f"Message ID: {it[k]}")
        k += 1
    else:
        return None
    cns: list[str] = []
    sets: list[str] = []
    while k < len(it):
        s = strings[k].strip("\r\n")
        t = it[k]
        k += 1
        if _FOLDER_ITEM_RE.match(t.splitlines()[0] if t else ""):
            out.append("Folder(s): " + t)
        elif _STR_DN_RE.match(t):
            out.append(f"Server: {t}")
        elif _CN_RE.match(t):
            cns.append(t)
        elif t == "{0}" or (t and all(_PAIR_RE.match(x) for x in t.splitlines() if x.strip())):
            sets.append(s)
        elif _STR_INT_RE.match(t):
            count = int(t)
            block = strings[k].strip("\r\n") if count and k < len(strings) else ""
            if count:
                k += 1
            out.append(f"RFIs: {count}")
            if block:
                out.append(block)
        elif t and not cns and not sets:
            out.append(f'Database "{t}"')
        elif t:
            return None
    if len(cns) == 2:
        out.append(f"CN min: {cns[0]}, CN max: {cns[1]}")
    elif cns:
        return None
    labels = ["CNSET: ", "CNSET(FAI): ", "IDCN deleted: "] if len(sets) == 3 else (
        ["CNSET: ", "CNSET(FAI): "] if len(sets) == 2 else (["IDCN deleted: "] if cns else ["CNSET: "]))
    if len(sets) > len(labels):
        return None
    for label, s in zip(labels, sets, strict=False):
        out.append(label + s)
    return "\r\n".join(out)
