"""The description text of one ``MSExchangeIS Public Store`` replication event.

Exchange builds the description from a message template and the event's insertion strings;
labels (``Type:``, ``CN min:``, ...) are in the template, so only rendered exports carry them.
``parse_description`` reads a rendered description in any published layout, 5.0 to 2010: the
grammar, and the published texts it was written from (tests/fixtures/exchange/), are in
docs/exchange-event-grammar.md. Each line is understood, kept in ``ignored`` when it carries
nothing, or the description is refused naming the line; ``server_from_dn`` and ``site_from_dn``
read its Server line. Pure functions: text in, values out.

What a description says is in ``values`` (``Cn``, ``ReplicationEvent``, the type codes and event
IDs); ``unrendered`` rebuilds a description from bare insertion strings where their shapes can be
recognised (``label_insertion_strings``); ``error_events`` reads what the store pages show of a
replication error (``error_details``). Their public names are re-exported here.
"""

from __future__ import annotations

import functools
import re
import sys
from dataclasses import dataclass, field

from pfscope.spark_jobs.exchange.error_events import ERROR_KINDS, error_details
from pfscope.spark_jobs.exchange.records import shared
from pfscope.spark_jobs.exchange.unrendered import description_not_found, label_insertion_strings
from pfscope.spark_jobs.exchange.values import (
    CN,
    ERROR_IDS,
    FOLDER_ITEM_RE,
    HIERARCHY_TYPES,
    INCOMING_IDS,
    OUTGOING_IDS,
    PAIR_RE,
    TYPE_NAMES,
    Cn,
    CnOutOfRange,
    CnRange,
    DescriptionError,
    MessageIdEntry,
    ReplicationEvent,
    Rfi,
    parse_cn,
)

__all__ = [
    "ERROR_IDS",
    "ERROR_KINDS",
    "HIERARCHY_TYPES",
    "INCOMING_IDS",
    "OUTGOING_IDS",
    "TYPE_NAMES",
    "Cn",
    "CnRange",
    "DescriptionError",
    "MessageIdEntry",
    "ReplicationEvent",
    "Rfi",
    "description_not_found",
    "error_details",
    "label_insertion_strings",
    "parse_cn",
    "parse_description",
    "server_from_dn",
    "site_from_dn",
]

_HEAD_RE = re.compile(r"^an?\s+(outgoing|incoming)\s+replication\s+message\s+was\s+\w+\.?$", re.I)
# "Type: 0x2", "Outgoing message type: 0x8" (2003), "Outgoing Message Type 0x20" (5.x: no colon)
_TYPE_RE = re.compile(
    r"^(?:(outgoing|incoming)\s+message\s+)?type\s*:?\s*(0x[0-9A-Fa-f]+|(?=[0-9A-Fa-f]*\d)[0-9A-Fa-f]+)\s*(\([^()]*\))?$",
    re.I,
)
_TYPE_PLACEHOLDER_RE = re.compile(r"^(?:(?:outgoing|incoming)\s+message\s+)?type\s*:?\s*(<[^<>]*>)$", re.I)
_MSGID_RE = re.compile(r"^message\s+id\s*:\s*(.*?)$", re.I)
# an SMTP id with or without its angle brackets, or an internal CN; a "(note)" may follow
_MSGID_VALUE_RE = re.compile(rf"^(<[^<>\s]+@[^<>\s]+>|[^<>\s@]+@[^<>\s@]+|{CN})(?:\s*(\(.*\)))?$")
_DB_RE = re.compile(r"^database(?:\s*:\s*|\s+)(.*)$", re.I)
_DB_QUOTED_END_RE = re.compile(r"[\"\u201d]\.?\s*((?:cn\s*min\b).*)?$", re.I)
_DB_TAIL_RE = re.compile(r"^(.*?)\s*((?:cn\s*min\b).*)?$", re.I)
_FOLDER_RE = re.compile(r"^folders?(?:\(s\))?(?:\s+names?)?\s*:\s*(.*?)$", re.I)
_CNMINMAX_RE = re.compile(rf"^cn\s*min\s*:\s*({CN})\s*(?:[,;]?\s*cn\s*max\s*:\s*({CN}))?\s*[,;]?$", re.I)
_CNMAX_RE = re.compile(rf"^cn\s*max\s*:\s*({CN})$", re.I)
_CNSET_RE = re.compile(r"^(,\s*)?cnset\s*(\(\s*fai\s*\))?\s*:\s*(.*?)$", re.I)
_RFIS_RE = re.compile(r"^rfis\s*:\s*(\d+)?$", re.I)
# "1) FID: a, PFID: b, Offset: c" (2000+), "1: a,b,c" (5.5); either numbering with or without the labels
_RFI_LONG_RE = re.compile(
    rf"^(\d+)\)\s*(?:fid\s*:\s*)?({CN})\s*,\s*(?:pfid\s*:\s*)?({CN})\s*,\s*(?:offset\s*:\s*)?([0-9A-Fa-fx]+)$",
    re.I,
)
_RFI_SHORT_RE = re.compile(
    rf"^(\d+)\s*:\s*(?:fid\s*:\s*)?({CN})\s*,\s*(?:pfid\s*:\s*)?({CN})\s*,\s*(?:offset\s*:\s*)?([0-9A-Fa-fx]+)$",
    re.I,
)
_MIDS_RE = re.compile(r"^message\s+ids\s*:\s*(\d+)?$", re.I)
_MID_ENTRY_RE = re.compile(rf"^(\d+)\s*:\s*({CN})\s*,\s*({CN})$")
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
    r",?\s*cnset\b|rfis\s*:|idcn\s*deleted\s*:|server\s*:))",
    re.I,
)
# the record's header, which Event Viewer's text copy, forum posts and the KBs print above the
# description ("Event Type: Information", "Src: MSExchangeIS Public", "Date: 2010-05-19", ...):
# it names the event, not the message, so above the description it is kept in ``ignored`` whatever
# it holds; further down (a copy that ran the next record in) only while it carries no data
_HEADER_RE = re.compile(
    r"^(?:event\s+(?:type|source|category|id)|log\s+name|source|src|category|task\s+category|level|keywords|"
    r"user|computer|date|time|logged|record\s+number|opcode|type)\s*:",
    re.I,
)
# what Windows 2003 and Exchange 2003 print under every description: never a path, a DN or a value
# ("... see Help and Support Center at ..."; Exchange 2003's own "... click http://www.microsoft.com/contentredirect.asp.")
_HELP_LINE_RE = re.compile(r"^for more information,? (?:see|click|visit|go to)\b", re.I)
_LINE_BREAK_RE = re.compile(r"\r\n|\r|\n")
_DESCRIPTION_RE = re.compile(r"^description\s*:\s*(.*)$", re.I)
# what a line the parser does not know must not carry for the description to be used
_DATA_RE = re.compile(rf"(?<![0-9A-Za-z]){CN}(?![0-9A-Za-z])|<[^<>\s]+@[^<>\s]+>|ipm_subtree|\\", re.I)
# a label followed by a type-like value or a message id: a replication description in another language
_FOREIGN_LABEL_RE = re.compile(r"^[^:\d]{1,40}:\s*(?:0x[0-9a-f]{1,8}|<[^<>\s]+@[^<>\s]+>)\s*$", re.I)


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
        m = PAIR_RE.match(s)
        if not m:
            raise DescriptionError(f"{where}: not a 'low,high' pair: {s[:40]!r}")
        lo, hi = parse_cn(m.group(1)), parse_cn(m.group(2))
        if lo.replid != hi.replid or lo.globcnt > hi.globcnt:
            raise DescriptionError(f"{where}: bad range {lo}-{hi}")
        out.append((lo, hi))
    return out


def _is_pair_line(s: str) -> bool:
    s = s.strip()
    return s == "{0}" or bool(PAIR_RE.match(s))


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
    """A rendered description to its values, or ``DescriptionError`` saying why not; a number
    out of pfscope's range rejects the record, naming the description's field that prints it."""
    try:
        return _parse_description(text)
    except CnOutOfRange as e:
        raise DescriptionError(f"number out of range in field {_field_of(text, e.cn)}: {e}") from None


def _field_of(text: str, cn: str) -> str:
    """The label of the line that prints ``cn`` (or of the labelled line its block starts at)."""
    label = "?"
    for line in re.split(r"\r\n|\r|\n", text):
        for part in _RUN_ON_RE.split(line.strip()) or [line]:
            if m := re.match(r"\s*,?\s*([A-Za-z][A-Za-z ()]{0,30}?)\s*:", part):
                label = m.group(1)
            if m := re.search(r"\b(CN (?:min|max))\s*:\s*" + re.escape(cn), part, re.I):
                return m.group(1)
            if cn in part:
                return label
    return label


def _parse_description(text: str) -> ReplicationEvent:
    """A rendered description to its values, or ``DescriptionError`` saying why not.

    Every line is understood or kept in ``ignored``; a line the parser does not know that
    carries a CN, a folder path or a message id makes the description unusable (data would be
    lost without a word). The grammar is in docs/exchange-event-grammar.md."""
    lines, help_lines = _description_lines(text)
    ev = ReplicationEvent(type_code=0, msg_id="")
    read = _read_lines(lines, ev)
    ev.type_code, ev.msg_id = _type_and_id(lines, read)
    ev.ignored.extend(read.unknown)
    ev.ignored.extend(help_lines)
    _check_cn_range(ev)
    return ev


@dataclass
class _Read:
    """What the lines said beyond the event's own fields: the Type and Message ID are checked
    once every line is read, and the lines not understood are judged by what they carry."""

    type_code: int | None = None
    msg_id: str | None = None
    known: int = 0  # lines that started a field
    unknown: list[str] = field(default_factory=list)  # lines not understood, in order


def _description_lines(text: str) -> tuple[list[str], list[str]]:
    """The description's non-blank lines, stripped, and apart from them the help lines Windows
    prints under it (they carry nothing, and alone they are no description)."""
    lines: list[str] = []
    help_lines: list[str] = []
    for ln in _LINE_BREAK_RE.split(text):
        if ln := ln.strip():
            (help_lines if _HELP_LINE_RE.match(ln) else lines).append(ln)
    if not lines and help_lines:
        raise DescriptionError("no Type line")
    if not lines:
        raise DescriptionError("empty description")
    return lines, help_lines


def _read_lines(lines: list[str], ev: ReplicationEvent) -> _Read:
    """Each line in turn, a field's (read into ``ev`` with the lines it runs over) or another;
    ``lines`` may change as they are read (a line that ran several together is split)."""
    read = _Read()
    i = 0
    while i < len(lines):
        s = lines[i]
        after = _field(lines, i + 1, s, ev, read)
        if after is None:
            i = _other_line(lines, i + 1, s, ev, read)
        else:
            read.known += 1
            i = after
    return read


def _field(lines: list[str], i: int, s: str, ev: ReplicationEvent, read: _Read) -> int | None:
    """The field ``s`` starts (``lines[i - 1]``) read into ``ev`` (or ``read``), and the index of
    the first line after it; None when ``s`` starts no field."""
    first = s[:1].lower()  # cheap dispatch: only the patterns a line can start like are tried
    if first == "a" and (m := _HEAD_RE.match(s)):
        ev.direction = _direction(m.group(1))
    elif first in "toi" and (m := _TYPE_RE.match(s)):
        read.type_code = _type_line(s, m, ev)
    elif first in "toi" and _TYPE_PLACEHOLDER_RE.match(s):
        raise DescriptionError(f"a template, not an event: the Type value is a placeholder ({s[:60]!r})")
    elif first == "m" and (m := _MIDS_RE.match(s)):
        return _message_ids(lines, i, m.group(1), ev)
    elif first == "m" and (m := _MSGID_RE.match(s)):
        read.msg_id, i = _message_id(lines, i, m.group(1), ev)
    elif first == "d" and (m := _DB_RE.match(s)):
        if tail := _database(m.group(1), ev):
            _cn_range(tail, ev)
    elif first == "f" and (m := _FOLDER_RE.match(s)):
        return _folders(lines, i, m.group(1), ev)
    elif first == "c" and (_CNMINMAX_RE.match(s) or _CNMAX_RE.match(s)):
        _cn_range(s, ev)
    elif first in "c," and (m := _CNSET_RE.match(s)):
        return _cnset(lines, i, m.group(2) is not None, m.group(3), ev)
    elif first == "r" and (m := _RFIS_RE.match(s)):
        return _rfis(lines, i, m.group(1), ev)
    elif first == "i" and (m := _IDCN_RE.match(s)):
        block, i = _pair_block(lines, i, m.group(1))
        ev.idcn_deleted = _pairs(block, "IDCN deleted")
    elif first == "s" and (m := _SERVER_RE.match(s)):
        return _server(lines, i, m.group(1), ev)
    else:
        return None
    return i


def _other_line(lines: list[str], i: int, s: str, ev: ReplicationEvent, read: _Read) -> int:
    """A line that starts no field (``lines[i - 1]``), and the index of the next line to read:
    a ``Description:`` label (what follows it is read), the record's header, fields run together
    (split, each read), or a line not understood."""
    if (m := _DESCRIPTION_RE.match(s)) and m.group(1):
        lines[i - 1] = m.group(1)  # "Description: An incoming ..." (KB 177673): read what follows
        ev.ignored.append("Description:")
        return i - 1
    if _HEADER_RE.match(s) and (
        not _DATA_RE.search(s) or (read.known == 0 and read.type_code is None and read.msg_id is None)
    ):
        ev.ignored.append(s)  # above the description anything goes (dates, "DC-01"); below it, no data
        return i
    parts = _RUN_ON_RE.split(s)
    if len(parts) > 1 and (_LABEL_RE.match(parts[0]) or _TYPE_RE.match(parts[0])):
        lines[i - 1 : i] = parts  # fields run together on one line: read them one by one
        ev.run_on_lines += 1
        return i - 1
    read.unknown.append(s)
    return i


def _type_and_id(lines: list[str], read: _Read) -> tuple[int, str]:
    """The Type and Message ID every description has, once the lines not understood are known
    to carry nothing (a description in another language is named as such)."""
    if (
        read.type_code is None
        and not read.known
        and any(_FOREIGN_LABEL_RE.match(x) or any(ord(c) > 127 and c.isalpha() for c in x) for x in lines)
    ):
        raise DescriptionError(
            "the description's language is not known (no 'Type:' or 'Message ID:' "
            "label): only English descriptions are read"
        )
    for line in read.unknown:
        if _DATA_RE.search(line):
            raise DescriptionError(
                f"a line not understood carries CNs, folders or message ids: {line[:120]!r}"
            )
    if read.type_code is None:
        raise DescriptionError("no Type line")
    if read.type_code not in TYPE_NAMES:
        raise DescriptionError(f"unknown Type 0x{read.type_code:X}")
    if not read.msg_id:
        raise DescriptionError("no Message ID")
    return read.type_code, read.msg_id


def _check_cn_range(ev: ReplicationEvent) -> None:
    """CN min and CN max come together, as one origin's range."""
    if (ev.cn_min is None) != (ev.cn_max is None):
        raise DescriptionError("CN min without CN max (or the reverse)")
    if (
        ev.cn_min
        and ev.cn_max
        and (ev.cn_min.replid != ev.cn_max.replid or ev.cn_min.globcnt > ev.cn_max.globcnt)
    ):
        raise DescriptionError(f"CN min {ev.cn_min} and CN max {ev.cn_max} are not a range")


def _direction(word: str) -> str:
    return "out" if word.lower() == "outgoing" else "in"


def _type_line(s: str, m: re.Match[str], ev: ReplicationEvent) -> int:
    """``Type: 0x2``, ``Outgoing message type: 0x8`` (2003), ``Outgoing Message Type 0x20`` (5.x):
    the code, and how the line was laid out."""
    type_code = parse_type(m.group(2))
    if m.group(3):
        ev.ignored.append(m.group(3))  # "Type: 0x2 (hierarchy)": the note carries nothing
    ev.message_type_label = m.group(1) is not None
    ev.type_on_first_line = m.group(1) is not None and ":" not in s
    if m.group(1):
        ev.direction = _direction(m.group(1))
    return type_code


def _message_id(lines: list[str], i: int, value: str, ev: ReplicationEvent) -> tuple[str, int]:
    """``Message ID: <...@...>`` or an internal ID, on the label's line or the next; a note after
    it is kept in ``ignored``. The id, and the index of the line after it."""
    if not value and i < len(lines) and not _LABEL_RE.match(lines[i]):
        value = lines[i]
        i += 1
    vm = _MSGID_VALUE_RE.match(value)
    if not vm:
        raise DescriptionError(
            f"Message ID: {value[:60]!r} is neither an internal ID (REPLID-GLOBCNT) nor an SMTP id <...@...>"
        )
    if vm.group(2):
        ev.ignored.append(vm.group(2))
    return vm.group(1), i


def _folders(lines: list[str], i: int, first: str, ev: ReplicationEvent) -> int:
    """``Folder: (FID) path``, or the label then ``(FID) path`` lines; a last path wrapped onto
    the next line (KB 203170) is read from it."""
    items = [first] if first else []
    while i < len(lines) and FOLDER_ITEM_RE.match(lines[i]):
        items.append(lines[i])
        i += 1
    if not items:
        raise DescriptionError("Folder: no '(FID) path'")
    for item in items:
        fm = FOLDER_ITEM_RE.match(item)
        if not fm:
            raise DescriptionError(f"Folder: not '(FID) path': {item[:60]!r}")
        ev.folders.append((parse_cn(fm.group(1)), sys.intern(fm.group(2))))
    fid, path = ev.folders[-1]
    if not path and i < len(lines) and not (_LABEL_RE.match(lines[i]) or _TYPE_RE.match(lines[i])):
        ev.folders[-1] = (fid, sys.intern(lines[i]))  # the path wrapped onto the next line (KB 203170)
        i += 1
    return i


def _pair_block(lines: list[str], i: int, first: str) -> tuple[list[str], int]:
    """A CN set's lines: what its label's line holds, then the ``low,high`` (or ``{0}``) lines
    that follow; and the index of the line after them."""
    block = [first] if first else []
    while i < len(lines) and _is_pair_line(lines[i]):
        block.append(lines[i])
        i += 1
    return block, i


def _cnset(lines: list[str], i: int, fai: bool, first: str, ev: ReplicationEvent) -> int:
    """``CNSET:`` or ``CNSET(FAI):`` and its pairs."""
    block, i = _pair_block(lines, i, first)
    pairs = _pairs(block, "CNSET(FAI)" if fai else "CNSET")
    if fai:
        ev.cnset_fai = pairs
    else:
        ev.cnset = pairs
    return i


def _server(lines: list[str], i: int, dn: str, ev: ReplicationEvent) -> int:
    """The ``Server:`` line's DN, which runs on (wrapped) until it names the store
    (".../CN=Microsoft Public MDB"), a label, or a line that is no DN fragment (a sentence, a CN,
    a path); the index of the line after it."""
    while i < len(lines) and _dn_continues(dn, lines[i]):
        dn = _join_dn(dn, lines[i])
        ev.server_dn_lines += 1
        i += 1
    if (end := _DN_END_RE.search(dn)) and dn[end.end() :].strip() not in ("", "."):
        # a web copy ran the next record into the DN ("...PUBLIC MDB Event Type: Warning"):
        # the DN ends at the store; what follows is read as a line of its own
        lines.insert(i, dn[end.end() :].strip())
        dn = dn[: end.end()]
        ev.run_on_lines += 1
    if end and dn[end.end() :].strip() == ".":
        dn = dn[: end.end()]  # "...PUBLIC MDB." ends a sentence, not the DN
    ev.server_dn = shared(dn or None)
    return i


def _database(rest: str, ev: ReplicationEvent) -> str | None:
    """``Database "SG\\Store"``, ``Database "SG\\Store".`` (2003+), ``Database: name``; a CN
    range printed on the same line (2000) is returned for the caller to read."""
    rest = rest.strip()
    if rest[:1] in '"\u201c':
        m = _DB_QUOTED_END_RE.search(rest, 1)
        if not m:
            raise DescriptionError(f"Database: no closing quote: {rest[:60]!r}")
        ev.database = sys.intern(rest[1 : m.start()])
        ev.database_dot = rest[m.start() + 1 : m.start() + 2] == "."
        return m.group(1)
    m = _DB_TAIL_RE.match(rest)
    assert m is not None
    ev.database = shared(m.group(1) or None)
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
                raise DescriptionError(
                    f"RFI {found + 1}: not 'n) FID: ..., PFID: ..., Offset: ...' "
                    f"nor 'n: fid,pfid,offset': {e[:60]!r}"
                )
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
        raise DescriptionError(
            f"Message IDs: {int(count_text)} announced, {len(ev.message_ids)} listed "
            "(the description is cut short)"
        )
    return i


@functools.lru_cache(maxsize=4096)  # a log names few DNs, each on thousands of records
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


@functools.lru_cache(maxsize=4096)
def site_from_dn(dn: str) -> str | None:
    """The ``OU=`` of a legacy DN: the site on 5.5, the administrative group later."""
    m = re.search(r"/ou=([^/]+)", dn, re.I)
    return m.group(1).strip() if m else None
