"""Every number a record prints, in store terms: REPLIDs inferred from messages both ends logged,
then CN ranges and folder IDs translated to the stores they belong to."""

from __future__ import annotations

from array import array
from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import Protocol

from pfscope.spark_jobs.exchange.classify import Parsed
from pfscope.spark_jobs.exchange.identity import ReplidMap
from pfscope.spark_jobs.exchange.parse import Cn, CnRange, ReplicationEvent
from pfscope.spark_jobs.exchange.reasons import r_unmapped
from pfscope.spark_jobs.model.cnset import EMPTY, CNSet

ROOT_GLOBCNT = 1  # GLOBCNT 1 is the root folder (the hierarchy), whichever REPLID prints it

FolderKey = tuple[str, int]  # (creating store, GLOBCNT)
ROOT: FolderKey = ("", ROOT_GLOBCNT)


def _numbers(ev: ReplicationEvent) -> list[tuple[tuple[str, int], int]]:
    """Every printed REPLID, tagged by where it stands (a field and a position in it), for aligning
    two prints of one message."""
    out: list[tuple[tuple[str, int], int]] = []
    if ev.cn_min and ev.cn_max:
        out += [(("min", 0), ev.cn_min.replid), (("max", 0), ev.cn_max.replid)]
    for name, pairs in (("cnset", ev.cnset), ("fai", ev.cnset_fai), ("idcn", ev.idcn_deleted)):
        for i, (lo, _hi) in enumerate(pairs or ()):
            out.append(((name, i), lo.replid))
    for i, (fid, _path) in enumerate(ev.folders):
        if fid.globcnt != ROOT_GLOBCNT:
            out.append((("folder", i), fid.replid))
    for i, r in enumerate(ev.rfis):
        out.append((("rfi", i), r.fid.replid))
        if r.pfid.globcnt != ROOT_GLOBCNT:  # the root prints 1-1 everywhere: it aligns nothing
            out.append((("rfip", i), r.pfid.replid))
    return out


Link = tuple[str, int, str, int]  # (sender, its REPLID, receiver, its REPLID): one number printed by both
Hint = tuple[str, int, str]  # (receiver, the REPLID of the CN range it printed, the sender's server)


def group_links(ps: list[Parsed]) -> list[Link]:
    """One message's links: its outgoing event's numbers aligned with each incoming event's."""
    outs = [p for p in ps if p.direction == "out"]
    if not outs:
        return []
    o = outs[0]
    on = dict(_numbers(o.ev))
    links: list[Link] = []
    for p in ps:
        if p.direction != "in":
            continue
        for tag, replid in _numbers(p.ev):
            if tag in on:
                links.append((o.server, on[tag], p.server, replid))
    return links


def group_hints(ps: list[Parsed]) -> list[Hint]:
    """Rule 3's evidence in one message: the incoming regular replication events (sender known)."""
    return [
        (p.server, p.ev.cn_min.replid, p.sender)
        for p in ps
        if p.direction == "in" and p.ev.type_code in (0x2, 0x4) and p.ev.cn_min and p.sender is not None
    ]


def infer_replids(groups: dict[str, list[Parsed]], own: dict[str, str], rmap: ReplidMap) -> None:
    """Fill ``rmap`` by the three rules of ``identity.py``, to a fixed point."""
    solve_replids(
        [k for ps in groups.values() for k in group_links(ps)],
        [h for ps in groups.values() for h in group_hints(ps)],
        own,
        rmap,
    )


class Links(Protocol):
    """Every message's links in the messages' order: walked in order, then picked by place."""

    def __iter__(self) -> Iterator[Link]: ...

    def __getitem__(self, i: int) -> Link: ...


def solve_replids(links: Links, hints: Iterable[Hint], own: dict[str, str], rmap: ReplidMap) -> None:
    """The three rules over every message's links and hints, in the messages' order. A hint
    repeated later changes nothing (its REPLID is known by then), so ``hints`` may hold each only at
    its first place."""
    for server, store in own.items():
        rmap.infer(server, 1, store, "REPLID 1 is the server's own store")
    pending = _fixpoint(links, None, rmap)
    for server, replid, sender in hints:
        if sender in own:
            rmap.infer(
                server, replid, own[sender], f"regular replication from {sender} carries its own changes"
            )
    _fixpoint(links, pending, rmap)


def _fixpoint(links: Links, walk: Iterable[int] | None, rmap: ReplidMap) -> array[int]:
    """Walk the links at ``walk`` (all when None) in order, round after round, until a round infers
    nothing; the places of the links neither of whose numbers is known yet. A link with a number known is settled
    once walked: both are known then, and known numbers never change, so walking it again would
    infer nothing, and its conflict (if the two disagree) is already reported."""
    left = array("q")
    changed = True
    while changed:
        changed = False
        left = array("q")
        places = enumerate(links) if walk is None else ((i, links[i]) for i in walk)
        for i, (s, a, r, b) in places:
            x, y = rmap.store(s, a), rmap.store(r, b)
            if x is None:
                if y is None:
                    left.append(i)
                else:
                    changed |= rmap.infer(s, a, y, f"message logged by {s} and {r}: {r}'s REPLID {b:X}")
            elif y is None:
                changed |= rmap.infer(r, b, x, f"message logged by {s} and {r}: {s}'s REPLID {a:X}")
            elif x != y:
                rmap.infer(r, b, x, f"message logged by {s} and {r}: {s}'s REPLID {a:X}")
        walk = left
    return left


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
        for first, last in ranges:  # globcnts (``lo`` and ``hi`` above are CNs)
            out = out.union(CNSet.of(origin, max(first, 1), last)) if last >= 1 else out
    return out


def translate_folder(rmap: ReplidMap, server: str, fid: Cn) -> FolderKey:
    if fid.globcnt == ROOT_GLOBCNT:
        return ROOT
    return (_store_of(rmap, server, fid), fid.globcnt)
