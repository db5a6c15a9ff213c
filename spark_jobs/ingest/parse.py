"""The description text of one ``MSExchangeIS Public Store`` replication event.

Exchange builds the description from a message template and the event's insertion strings;
labels (``Type:``, ``CN min:``, ...) are in the template, so only rendered exports carry them.
``parse_description`` reads a rendered description in any published layout, 5.0 to 2010: the
grammar, and the published texts it was written from (tests/fixtures/exchange/), are in
docs/exchange-event-grammar.md. Each line is understood, kept in ``ignored`` when it carries
nothing, or the description is refused naming the line; ``label_insertion_strings`` rebuilds a
description from bare insertion strings where their shapes can be recognised; ``error_details``
reads what the store pages show of a replication error. Pure functions: text in, values out.

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
# 3025 is Exchange 2000's incoming content event (KB 821930), not "outgoing + 10".
INCOMING_IDS = frozenset({*(i + 10 for i in OUTGOING_IDS), 3025})
# Replication errors, DS updates and general replication events, kept for the store pages.
ERROR_KINDS: dict[int, str] = {
    3002: "replication general",  # the replication agent is disabled for a store
    3005: "DS update",  # a replica of a folder was removed
    3044: "site folders",  # site folder teardown check
    3079: "replication thread error",  # with the function stack
    3084: "replication error",  # owning folders table (5.5)
    3085: "outgoing replication error",
    3086: "outgoing replication error",
    3089: "incoming replication error",
    3090: "replication error",
    3091: "incoming replication error",  # Exchange 2010
    3092: "replication event error",  # with the folder
    3093: "replication error",  # meaning varies by version: see error_details
}
# The public store logs replication (DS updates, general, errors, backfill, site folders, expiry)
# in 3000-3099: an ID no published text shows there is kept too, as a "replication event".
ERROR_IDS = frozenset(range(3000, 3100)) - OUTGOING_IDS - INCOMING_IDS


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
class MessageIdEntry:
    """One item of a 2007/2010 content message: its message id, its CN, and the line under it
    (``--- : subject : time``) as printed."""

    mid: Cn
    cn: Cn
    detail: str | None


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
    message_ids: list[MessageIdEntry] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # lines (and notes) understood to carry nothing
    message_type_label: bool = False  # "Outgoing message type:" (2003 layouts)
    type_on_first_line: bool = False  # "Outgoing Message Type 0x20" (5.x status layouts)
    short_rfis: bool = False  # "1: fid,pfid,offset" (5.5 layouts)
    rfi_count_missing: bool = False  # "RFIs:" with no count
    database_dot: bool = False  # 'Database "...".' (2003+)
    server_dn_lines: int = 0  # lines the Server DN was wrapped over, beyond the first
    run_on_lines: int = 0  # lines that ran several fields together (split and read)

    @property
    def type_name(self) -> str:
        return TYPE_NAMES[self.type_code]

    def meaning(self) -> tuple[object, ...]:
        """What the event says, without how it was laid out (first line, labels): two exports
        of one event, rendered or as bare insertion strings, mean the same."""
        return (self.type_code, self.msg_id, self.database, tuple(self.folders), self.cn_min, self.cn_max,
                tuple(self.cnset or ()), tuple(self.cnset_fai or ()), tuple(self.rfis),
                tuple(self.idcn_deleted or ()), self.server_dn, tuple(self.message_ids))


_CN = r"[0-9A-Fa-f]{1,16}-[0-9A-Fa-f]{1,16}"
_CN_RE = re.compile(rf"^\s*({_CN})\s*$")
_PAIR_RE = re.compile(rf"^\s*({_CN})\s*,\s*({_CN})\s*$")
_HEAD_RE = re.compile(r"^an?\s+(outgoing|incoming)\s+replication\s+message\s+was\s+\w+\.?$", re.I)
# "Type: 0x2", "Outgoing message type: 0x8" (2003), "Outgoing Message Type 0x20" (5.x: no colon)
_TYPE_RE = re.compile(
    r"^(?:(outgoing|incoming)\s+message\s+)?type\s*:?\s*(0x[0-9A-Fa-f]+|(?=[0-9A-Fa-f]*\d)[0-9A-Fa-f]+)\s*(\([^()]*\))?$", re.I)
_TYPE_PLACEHOLDER_RE = re.compile(r"^(?:(?:outgoing|incoming)\s+message\s+)?type\s*:?\s*(<[^<>]*>)$", re.I)
_MSGID_RE = re.compile(r"^message\s+id\s*:\s*(.*?)$", re.I)
# an SMTP id with or without its angle brackets, or an internal CN; a "(note)" may follow
_MSGID_VALUE_RE = re.compile(rf"^(<[^<>\s]+@[^<>\s]+>|[^<>\s@]+@[^<>\s@]+|{_CN})(?:\s*(\(.*\)))?$")
_DB_RE = re.compile(r"^database(?:\s*:\s*|\s+)(.*)$", re.I)
_DB_QUOTED_END_RE = re.compile(r"[\"\u201d]\.?\s*((?:cn\s*min\b).*)?$", re.I)
_DB_TAIL_RE = re.compile(r"^(.*?)\s*((?:cn\s*min\b).*)?$", re.I)
_FOLDER_RE = re.compile(r"^folders?(?:\(s\))?(?:\s+names?)?\s*:\s*(.*?)$", re.I)
_FOLDER_ITEM_RE = re.compile(rf"^\(\s*({_CN})\s*\)\s*(.*?)$")
_CNMINMAX_RE = re.compile(rf"^cn\s*min\s*:\s*({_CN})\s*(?:[,;]?\s*cn\s*max\s*:\s*({_CN}))?\s*[,;]?$", re.I)
_CNMAX_RE = re.compile(rf"^cn\s*max\s*:\s*({_CN})$", re.I)
_CNSET_RE = re.compile(r"^(,\s*)?cnset\s*(\(\s*fai\s*\))?\s*:\s*(.*?)$", re.I)
_RFIS_RE = re.compile(r"^rfis\s*:\s*(\d+)?$", re.I)
# "1) FID: a, PFID: b, Offset: c" (2000+), "1: a,b,c" (5.5); either numbering with or without the labels
_RFI_LONG_RE = re.compile(
    rf"^(\d+)\)\s*(?:fid\s*:\s*)?({_CN})\s*,\s*(?:pfid\s*:\s*)?({_CN})\s*,\s*(?:offset\s*:\s*)?([0-9A-Fa-fx]+)$",
    re.I)
_RFI_SHORT_RE = re.compile(
    rf"^(\d+)\s*:\s*(?:fid\s*:\s*)?({_CN})\s*,\s*(?:pfid\s*:\s*)?({_CN})\s*,\s*(?:offset\s*:\s*)?([0-9A-Fa-fx]+)$",
    re.I)
_MIDS_RE = re.compile(r"^message\s+ids\s*:\s*(\d+)?$", re.I)
_MID_ENTRY_RE = re.compile(rf"^(\d+)\s*:\s*({_CN})\s*,\s*({_CN})$")
_MID_DETAIL_RE = re.compile(r"^(?:-{2,}|\u2014|\u2013)\s*:")
_IDCN_RE = re.compile(r"^idcn\s*deleted\s*:\s*(.*?)$", re.I)
_SERVER_RE = re.compile(r"^server\s*:\s*(.*?)$", re.I)
_LABEL_RE = re.compile(
    r"^(?:(?:outgoing|incoming)\s+message\s+)?type\s*:?\s*(?:0x[0-9a-f]+|[0-9a-f]*\d[0-9a-f]*|<[^<>]*>)\s*(?:\([^()]*\))?$|"
    r"^message\s+ids?\s*:|"
    r"^database\b|^folders?(?:\(s\))?(?:\s+names?)?\s*:|^cn\s*m(?:in|ax)\s*:|^,?\s*cnset\b|^rfis\s*:|^idcn\s*deleted|^server\s*:|"
    r"^an?\s+(?:outgoing|incoming)\s+replication\s+message\s+was\s",
    re.I,
)
# where a line that runs several fields together (a KB's flattened copy) is split
_RUN_ON_RE = re.compile(
    r"\s+(?=(?:message\s+ids?\s*:|folders?(?:\(s\))?\s*:|database\s*(?::|[\"\u201c])|cn\s*m(?:in|ax)\s*:|"
    r",?\s*cnset\b|rfis\s*:|idcn\s*deleted\s*:|server\s*:))", re.I)
# the record's header, which Event Viewer's text copy, forum posts and the KBs print above the
# description ("Event Type: Information", "Src: MSExchangeIS Public", "Date: 2010-05-19", ...):
# it names the event, not the message, so above the description it is kept in ``ignored`` whatever
# it holds; further down (a copy that ran the next record in) only while it carries no data
_HEADER_RE = re.compile(
    r"^(?:event\s+(?:type|source|category|id)|log\s+name|source|src|category|task\s+category|level|keywords|"
    r"user|computer|date|time|logged|record\s+number|opcode|type)\s*:", re.I)
# what Windows 2003 and Exchange 2003 print under every description: never a path, a DN or a value
# ("... see Help and Support Center at ..."; Exchange 2003's own "... click http://www.microsoft.com/contentredirect.asp.")
_HELP_LINE_RE = re.compile(r"^for more information,? (?:see|click|visit|go to)\b", re.I)
_DESCRIPTION_RE = re.compile(r"^description\s*:\s*(.*)$", re.I)
# what a line the parser does not know must not carry for the description to be used
_DATA_RE = re.compile(rf"(?<![0-9A-Za-z]){_CN}(?![0-9A-Za-z])|<[^<>\s]+@[^<>\s]+>|ipm_subtree|\\", re.I)
# a label followed by a type-like value or a message id: a replication description in another language
_FOREIGN_LABEL_RE = re.compile(r"^[^:\d]{1,40}:\s*(?:0x[0-9a-f]{1,8}|<[^<>\s]+@[^<>\s]+>)\s*$", re.I)


def parse_cn(text: str) -> Cn:
    m = _CN_RE.match(text)
    if not m:
        raise DescriptionError(f"not a REPLID-GLOBCNT number: {text.strip()[:40]!r}")
    r, g = m.group(1).split("-")
    return Cn(int(r, 16), int(g, 16))


def parse_type(text: str) -> int:
    """``0x2`` (as every published text prints it), ``2``; a value printed without ``0x`` is read
    as decimal when that names a Type, else as hexadecimal (``80000002``, KB 221778's ``10``)."""
    t = text.strip().lower()
    if t.startswith("0x"):
        return int(t, 16)
    if t.isdigit() and int(t) in TYPE_NAMES:
        return int(t)
    return int(t, 16)


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


def _join_dn(dn: str, more: str) -> str:
    """A legacy DN wrapped over lines: the break falls before or after a ``/`` or ``=`` (joined
    as is) or at a space (joined with one)."""
    if not dn or more[:1] in "/=" or dn[-1:] in "/=":
        return dn + more
    return f"{dn} {more}"


_DN_DONE_RE = re.compile(r"/cn\s*=\s*microsoft\s+public\s+mdb$", re.I)  # the public store object
_DN_END_RE = re.compile(r"/cn\s*=\s*microsoft\s+public\s+mdb(?:-\d+)?(?=[\s.]|$)", re.I)


def _dn_continues(dn: str, line: str) -> bool:
    if _LABEL_RE.match(line) or _TYPE_RE.match(line):
        return False
    if not dn:
        return True
    return not (_DN_DONE_RE.search(dn) or _DATA_RE.search(line) or "://" in line or line.endswith("."))


def _offset(text: str) -> int:
    try:
        return int(text, 16) if text.lower().startswith("0x") else int(text)
    except ValueError:
        raise DescriptionError(f"RFI offset {text[:20]!r} is not a number") from None


def parse_description(text: str) -> ReplicationEvent:
    """A rendered description to its values, or ``DescriptionError`` saying why not.

    Every line is understood or kept in ``ignored``; a line the parser does not know that
    carries a CN, a folder path or a message id makes the description unusable (data would be
    lost without a word). The grammar is in docs/exchange-event-grammar.md."""
    lines = [ln.strip() for ln in re.split(r"\r\n|\r|\n", text)]
    lines = [ln for ln in lines if ln != ""]
    help_lines = [ln for ln in lines if _HELP_LINE_RE.match(ln)]
    lines = [ln for ln in lines if not _HELP_LINE_RE.match(ln)]
    if not lines and help_lines:
        raise DescriptionError("no Type line")
    if not lines:
        raise DescriptionError("empty description")
    ev = ReplicationEvent(type_code=0, msg_id="")
    type_code: int | None = None
    msg_id: str | None = None
    unknown: list[str] = []
    known = 0
    i = 0
    n = len(lines)
    while i < n:
        s = lines[i]
        i += 1
        first = s[:1].lower()  # cheap dispatch: only the patterns a line can start like are tried
        if first == "a" and (m := _HEAD_RE.match(s)):
            ev.direction = "out" if m.group(1).lower() == "outgoing" else "in"
        elif first in "toi" and (m := _TYPE_RE.match(s)):
            type_code = parse_type(m.group(2))
            if m.group(3):
                ev.ignored.append(m.group(3))  # "Type: 0x2 (hierarchy)": the note carries nothing
            ev.message_type_label = m.group(1) is not None
            ev.type_on_first_line = m.group(1) is not None and ":" not in s
            if m.group(1):
                ev.direction = "out" if m.group(1).lower() == "outgoing" else "in"
        elif first in "toi" and (m := _TYPE_PLACEHOLDER_RE.match(s)):
            raise DescriptionError(f"a template, not an event: the Type value is a placeholder ({s[:60]!r})")
        elif first == "m" and (m := _MIDS_RE.match(s)):
            i = _message_ids(lines, i, m.group(1), ev)
        elif first == "m" and (m := _MSGID_RE.match(s)):
            value = m.group(1)
            if not value and i < n and not _LABEL_RE.match(lines[i]):
                value = lines[i]
                i += 1
            vm = _MSGID_VALUE_RE.match(value)
            if not vm:
                raise DescriptionError(f"Message ID: {value[:60]!r} is neither an internal ID (REPLID-GLOBCNT) "
                                       "nor an SMTP id <...@...>")
            msg_id = vm.group(1)
            if vm.group(2):
                ev.ignored.append(vm.group(2))
        elif first == "d" and (m := _DB_RE.match(s)):
            tail = _database(m.group(1), ev)
            if tail:
                _cn_range(tail, ev)
        elif first == "f" and (m := _FOLDER_RE.match(s)):
            items = [m.group(1)] if m.group(1) else []
            while i < n and _FOLDER_ITEM_RE.match(lines[i]):
                items.append(lines[i])
                i += 1
            if not items:
                raise DescriptionError("Folder: no '(FID) path'")
            for item in items:
                fm = _FOLDER_ITEM_RE.match(item)
                if not fm:
                    raise DescriptionError(f"Folder: not '(FID) path': {item[:60]!r}")
                ev.folders.append((parse_cn(fm.group(1)), fm.group(2)))
            fid, path = ev.folders[-1]
            if not path and i < n and not (_LABEL_RE.match(lines[i]) or _TYPE_RE.match(lines[i])):
                ev.folders[-1] = (fid, lines[i])  # the path wrapped onto the next line (KB 203170)
                i += 1
        elif first == "c" and (_CNMINMAX_RE.match(s) or _CNMAX_RE.match(s)):
            _cn_range(s, ev)
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
            i = _rfis(lines, i, m.group(1), ev)
        elif first == "i" and (m := _IDCN_RE.match(s)):
            block = [m.group(1)] if m.group(1) else []
            while i < n and _is_pair_line(lines[i]):
                block.append(lines[i])
                i += 1
            ev.idcn_deleted = _pairs(block, "IDCN deleted")
        elif first == "s" and (m := _SERVER_RE.match(s)):
            dn = m.group(1)
            # the DN runs on (wrapped) until it names the store (".../CN=Microsoft Public MDB"),
            # a label, or a line that is no DN fragment (a sentence, a CN, a path)
            while i < n and _dn_continues(dn, lines[i]):
                dn = _join_dn(dn, lines[i])
                ev.server_dn_lines += 1
                i += 1
            if (end := _DN_END_RE.search(dn)) and dn[end.end():].strip() not in ("", "."):
                # a web copy ran the next record into the DN ("...PUBLIC MDB Event Type: Warning"):
                # the DN ends at the store; what follows is read as a line of its own
                lines.insert(i, dn[end.end():].strip())
                n = len(lines)
                dn = dn[:end.end()]
                ev.run_on_lines += 1
            if end and dn[end.end():].strip() == ".":
                dn = dn[:end.end()]  # "...PUBLIC MDB." ends a sentence, not the DN
            ev.server_dn = dn or None
        elif (m := _DESCRIPTION_RE.match(s)) and m.group(1):
            lines[i - 1] = m.group(1)  # "Description: An incoming ..." (KB 177673): read what follows
            ev.ignored.append("Description:")
            i -= 1
            continue
        elif _HEADER_RE.match(s) and (not _DATA_RE.search(s) or (known == 0 and type_code is None and msg_id is None)):
            ev.ignored.append(s)  # above the description anything goes (dates, "DC-01"); below it, no data
            continue
        else:
            parts = _RUN_ON_RE.split(s)
            if len(parts) > 1 and (_LABEL_RE.match(parts[0]) or _TYPE_RE.match(parts[0])):
                lines[i - 1:i] = parts  # fields run together on one line: read them one by one
                n = len(lines)
                i -= 1
                ev.run_on_lines += 1
                continue
            unknown.append(s)
            continue
        known += 1
    if type_code is None and not known and any(
            _FOREIGN_LABEL_RE.match(x) or any(ord(c) > 127 and c.isalpha() for c in x) for x in lines):
        raise DescriptionError("the description's language is not known (no 'Type:' or 'Message ID:' "
                               "label): only English descriptions are read")
    for line in unknown:
        if _DATA_RE.search(line):
            raise DescriptionError(f"a line not understood carries CNs, folders or message ids: {line[:120]!r}")
    if type_code is None:
        raise DescriptionError("no Type line")
    ev.ignored.extend(unknown)
    ev.ignored.extend(help_lines)
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


def _database(rest: str, ev: ReplicationEvent) -> str | None:
    """``Database "SG\\Store"``, ``Database "SG\\Store".`` (2003+), ``Database: name``; a CN
    range printed on the same line (2000) is returned for the caller to read."""
    rest = rest.strip()
    if rest[:1] in "\"\u201c":
        m = _DB_QUOTED_END_RE.search(rest, 1)
        if not m:
            raise DescriptionError(f"Database: no closing quote: {rest[:60]!r}")
        ev.database = rest[1:m.start()]
        ev.database_dot = rest[m.start() + 1:m.start() + 2] == "."
        return m.group(1)
    m = _DB_TAIL_RE.match(rest)
    assert m is not None
    ev.database = m.group(1) or None
    return m.group(2)


def _cn_range(s: str, ev: ReplicationEvent) -> None:
    s = s.strip()
    if m := _CNMINMAX_RE.match(s):
        ev.cn_min = parse_cn(m.group(1))
        if m.group(2):
            ev.cn_max = parse_cn(m.group(2))
    elif m := _CNMAX_RE.match(s):
        ev.cn_max = parse_cn(m.group(1))
    else:
        raise DescriptionError(f"CN range: not 'CN min: R-G CN max: R-G': {s[:60]!r}")


def _rfis(lines: list[str], i: int, count_text: str | None, ev: ReplicationEvent) -> int:
    """``RFIs: n`` (the count may be missing) then ``n) FID: a, PFID: b, Offset: c`` (2000+) or
    ``n: a,b,c`` (5.5) entries, each followed by the folder's path unless the next line is an
    entry or a label."""
    n = len(lines)
    found = 0
    while i < n:
        e = lines[i]
        rm = _RFI_LONG_RE.match(e)
        short = False
        if not rm:
            rm = _RFI_SHORT_RE.match(e)
            short = rm is not None
        if not rm:
            if count_text is not None and found < int(count_text) and not _LABEL_RE.match(e):
                raise DescriptionError(f"RFI {found + 1}: not 'n) FID: ..., PFID: ..., Offset: ...' "
                                       f"nor 'n: fid,pfid,offset': {e[:60]!r}")
            break
        ev.short_rfis = ev.short_rfis or short
        i += 1
        path: str | None = None
        if i < n:
            nxt = lines[i]
            if not (_RFI_LONG_RE.match(nxt) or _RFI_SHORT_RE.match(nxt) or _LABEL_RE.match(nxt)):
                path = nxt
                i += 1
        ev.rfis.append(Rfi(parse_cn(rm.group(2)), parse_cn(rm.group(3)), _offset(rm.group(4)), path))
        found += 1
    if count_text is None:
        ev.rfi_count_missing = True
    elif found != int(count_text):
        raise DescriptionError(f"RFIs: {int(count_text)} announced, {found} found")
    return i


def _message_ids(lines: list[str], i: int, count_text: str | None, ev: ReplicationEvent) -> int:
    """2007/2010 content: ``Message IDs: n`` then ``k: MID, CN`` entries, each optionally
    followed by a ``--- : subject : time`` line (kept as printed)."""
    n = len(lines)
    while i < n and (m := _MID_ENTRY_RE.match(lines[i])):
        i += 1
        detail: str | None = None
        if i < n and _MID_DETAIL_RE.match(lines[i]):
            detail = lines[i]
            i += 1
        ev.message_ids.append(MessageIdEntry(parse_cn(m.group(2)), parse_cn(m.group(3)), detail))
    if count_text is not None and int(count_text) != len(ev.message_ids):
        raise DescriptionError(f"Message IDs: {int(count_text)} announced, {len(ev.message_ids)} listed "
                               "(the description is cut short)")
    return i


_ERR_CODE_RE = re.compile(r"\berror\s+\(?(0x[0-9A-Fa-f]+|\d+)\)?", re.I)
_ERR_DB_RE = re.compile(r"(?:database|store)\s+[\"\u201c]([^\"\u201d]*)[\"\u201d]", re.I)
_ERR_FOLDER_RE = re.compile(rf"\(\s*({_CN})\s*\)")
_3093_MEANINGS = (
    ("startup status message", "5.x: the startup status messages were not sent (ReplStartupStatus disabled, KB 177251)"),
    ("reading property", "5.x: a property of the owning-folders table could not be read"),
)


def error_details(event_id: int, text: str) -> dict[str, str]:
    """What a store page shows of a replication error or DS-update event: its kind, and the
    error code, database and folder when the text prints them."""
    out = {"kind": ERROR_KINDS.get(event_id, "replication event")}
    if m := _ERR_CODE_RE.search(text):
        out["error_code"] = m.group(1)
    if m := _ERR_DB_RE.search(text):
        out["database"] = m.group(1)
    if m := _ERR_FOLDER_RE.search(text):
        out["folder"] = m.group(1)
    if event_id == 3093:
        low = text.lower()
        out["meaning"] = next((mean for key, mean in _3093_MEANINGS if key in low),
                              "replication error; what 3093 means varies by Exchange version")
    return out


_NOT_FOUND_XP_RE = re.compile(
    r"^\s*the description for event id \(\s*\d+\s*\) in source \(.*?\) cannot be found\..*?"
    r"the following information is part of the event:\s?(.*)$", re.I | re.S)
_NOT_FOUND_RE = re.compile(r"^\s*the description for event id\b.{0,80}\bcannot be found\.", re.I | re.S)


def description_not_found(text: str) -> tuple[bool, list[str] | None]:
    """Windows' own text when the exporting machine lacks Exchange's message file: (True, the
    insertion strings) where they can be told apart (XP/2003 print them after "The following
    information is part of the event:", comma and space between), (True, None) where not
    (Vista and later print one a line, and a multi-line CN set cannot be told from two strings);
    (False, None) for a real description."""
    if m := _NOT_FOUND_XP_RE.match(text):
        tail = m.group(1).strip()
        tail = tail[:-1] if tail.endswith(".") else tail
        return True, tail.split(", ") if tail else None
    return bool(_NOT_FOUND_RE.match(text)), None


def server_from_dn(dn: str) -> str | None:
    """The server named by the ``Server:`` line: a legacy Exchange DN (``.../CN=SERVERS/CN=<server>/CN=...``),
    an LDAP DN (``CN=<store>,...,CN=<server>,CN=Servers,...``, as the directory prints it), or a
    bare host name (``EX2010``, ``ex2010.corp.example``: its first label)."""
    if m := re.search(r"/\s*cn\s*=\s*servers\s*/\s*cn\s*=\s*([^/]+)", dn, re.I):
        return m.group(1).strip().upper()
    if m := re.search(r"(?:^|,)\s*cn\s*=\s*([^,=]+?)\s*,\s*cn\s*=\s*servers\s*(?:,|$)", dn, re.I):
        return m.group(1).strip().upper()
    host = dn.strip()
    if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*", host):
        return host.split(".")[0].upper()
    return None


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
