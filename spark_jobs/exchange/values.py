"""What a replication event's description says, as values: type codes, event IDs, printed numbers.

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
# The public store logs replication (DS updates, general, errors, backfill, site folders, expiry)
# in 3000-3099: an ID no published text shows there is kept too, as a "replication event".
ERROR_IDS = frozenset(range(3000, 3100)) - OUTGOING_IDS - INCOMING_IDS


class DescriptionError(ValueError):
    """A description that is not a usable replication event; ``str()`` is the reason."""


MAX_GLOBCNT = 2**48 - 1  # a GLOBCNT is 6 bytes; pfscope's reader refuses larger CNs


class CnOutOfRange(DescriptionError):
    """A printed number whose GLOBCNT is above ``MAX_GLOBCNT``; ``cn`` is the text printed."""

    def __init__(self, cn: str):
        super().__init__(f"{cn} is above {MAX_GLOBCNT:X} (2**48-1)")
        self.cn = cn


@dataclass(frozen=True, slots=True)
class Cn:
    """``REPLID-GLOBCNT`` as printed; the REPLID is local to the printing server."""

    replid: int
    globcnt: int

    # pickled as a call (events cross to Spark's workers and back as pickles): a slotted
    # dataclass's default state pickles twice the bytes, and unpickles a third slower
    def __reduce__(self) -> tuple[object, ...]:
        return Cn, (self.replid, self.globcnt)

    def __repr__(self) -> str:  # the dataclass's text, without its guard against cycles (a Cn has none)
        return f"Cn(replid={self.replid!r}, globcnt={self.globcnt!r})"

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

    def __reduce__(self) -> tuple[object, ...]:
        return MessageIdEntry, (self.mid, self.cn, self.detail)


@dataclass(frozen=True, slots=True)
class Rfi:
    """One replication folder information entry of a hierarchy message: a folder and its path."""

    fid: Cn
    pfid: Cn
    offset: int
    path: str | None

    def __reduce__(self) -> tuple[object, ...]:
        return Rfi, (self.fid, self.pfid, self.offset, self.path)


@dataclass(slots=True)
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

    def __reduce__(self) -> tuple[object, ...]:  # as ``Cn``'s
        return ReplicationEvent, tuple(getattr(self, f) for f in _EVENT_FIELDS)

    @property
    def type_name(self) -> str:
        return TYPE_NAMES[self.type_code]

    def meaning(self) -> tuple[object, ...]:
        """What the event says, without how it was laid out (first line, labels): two exports
        of one event, rendered or as bare insertion strings, mean the same."""
        return (
            self.type_code,
            self.msg_id,
            self.database,
            tuple(self.folders),
            self.cn_min,
            self.cn_max,
            tuple(self.cnset or ()),
            tuple(self.cnset_fai or ()),
            tuple(self.rfis),
            tuple(self.idcn_deleted or ()),
            self.server_dn,
            tuple(self.message_ids),
        )


_EVENT_FIELDS = ReplicationEvent.__slots__

# a printed number (``REPLID-GLOBCNT``), a pair of them, a ``(FID) path`` item: every reader's grammar
CN = r"[0-9A-Fa-f]{1,16}-[0-9A-Fa-f]{1,16}"
CN_RE = re.compile(rf"^\s*({CN})\s*$")
PAIR_RE = re.compile(rf"^\s*({CN})\s*,\s*({CN})\s*$")
FOLDER_ITEM_RE = re.compile(rf"^\(\s*({CN})\s*\)\s*(.*?)$")


def parse_cn(text: str) -> Cn:
    m = CN_RE.match(text)
    if not m:
        raise DescriptionError(f"not a REPLID-GLOBCNT number: {text.strip()[:40]!r}")
    r, g = m.group(1).split("-")
    if int(g, 16) > MAX_GLOBCNT:
        raise CnOutOfRange(m.group(1))
    return Cn(int(r, 16), int(g, 16))
