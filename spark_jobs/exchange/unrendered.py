"""Descriptions Windows did not render: its "cannot be found" text; bare insertion strings relabelled."""

from __future__ import annotations

import re

from pfscope.spark_jobs.exchange.values import CN_RE, FOLDER_ITEM_RE, PAIR_RE

_NOT_FOUND_XP_RE = re.compile(
    r"^\s*the description for event id \(\s*\d+\s*\) in source \(.*?\) cannot be found\..*?"
    r"the following information is part of the event:\s?(.*)$",
    re.I | re.S,
)
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
    if k < len(it) and (_STR_SMTP_ID_RE.match(it[k]) or CN_RE.match(it[k])):
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
        if FOLDER_ITEM_RE.match(t.splitlines()[0] if t else ""):
            out.append("Folder(s): " + t)
        elif _STR_DN_RE.match(t):
            out.append(f"Server: {t}")
        elif CN_RE.match(t):
            cns.append(t)
        elif t == "{0}" or (t and all(PAIR_RE.match(x) for x in t.splitlines() if x.strip())):
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
    labels = (
        ["CNSET: ", "CNSET(FAI): ", "IDCN deleted: "]
        if len(sets) == 3
        else (["CNSET: ", "CNSET(FAI): "] if len(sets) == 2 else (["IDCN deleted: "] if cns else ["CNSET: "]))
    )
    if len(sets) > len(labels):
        return None
    for label, s in zip(labels, sets, strict=False):
        out.append(label + s)
    return "\r\n".join(out)
