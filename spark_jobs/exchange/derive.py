"""The event lines in time order: the sender's own CNs as changes, sends (CN sets derived), receives."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pfscope.spark_jobs.exchange.messages import Msg
from pfscope.spark_jobs.exchange.reasons import MAX_EXPANDED_CNS, R_NO_RECIPIENT, R_RANGE_TOO_WIDE
from pfscope.spark_jobs.exchange.translate import FolderKey
from pfscope.spark_jobs.model.cnset import EMPTY, CNSet
from pfscope.spark_jobs.model.timeutil import format_ts
from pfscope.spark_jobs.model.topology import HIERARCHY_FID

Key = tuple[int, ...]  # a line's place in the event log: (ts, rank, its message's sent_at, order..., seq)


@dataclass
class Derived:
    """The event lines of some folders' messages, each with its place in the whole log (``Key``);
    so the lines of all folders, derived apart, merge by key into the reference's order."""

    lines: list[tuple[Key, dict[str, Any]]]  # in key order
    bad: list[tuple[Msg, str]]  # in the messages' time order
    stats: Counter[str]  # in the order each was first counted
    firsts: dict[str, Key]  # where each statistic was first counted, to merge folders' in that order


def _place(m: Msg) -> Key:
    return (m.sent_at, *m.order)


def _own_changes(
    msgs: list[Msg], fids: dict[FolderKey, str], skip: set[int], count: Callable[[str, int, Key], None]
) -> dict[int, list[tuple[str, str, int]]]:
    """The sender's own CNs each message shows it holding (changes it carries, its printed set),
    as change lines: CN by CN in increasing order per store and folder, each at the first message
    that shows it or a later one, so that CNs only increase in event order (the reader's rule).
    Returns, per message index, the (store, fid, cn) to write just before it."""
    first_seen: dict[tuple[str, str], dict[int, int]] = defaultdict(dict)  # cn -> message index
    for i, m in enumerate(msgs):
        if i in skip:
            continue
        fid = fids[m.folder] if m.folder is not None else HIERARCHY_FID
        shown = (m.changes or EMPTY).union(m.cnset or EMPTY).ranges(m.sender)
        width = sum(hi - lo + 1 for lo, hi in shown)
        if width > MAX_EXPANDED_CNS:
            count("own CNs not written as changes (set too wide)", width, (0,))
            continue
        seen = first_seen[(m.sender, fid)]
        for lo, hi in shown:
            for cn in range(lo, hi + 1):
                seen.setdefault(cn, i)
    out: dict[int, list[tuple[str, str, int]]] = defaultdict(list)
    for (store, fid), seen in first_seen.items():
        at = -1
        for cn in sorted(seen):
            at = max(at, seen[cn])  # messages are in time order: a later index is not earlier
            out[at].append((store, fid, cn))
            count("change", 1, (1,))
            if at != seen[cn]:
                count("own CNs written after their first message", 1, (2,))
    return out


def derive_events(
    msgs: list[Msg], fids: dict[FolderKey, str], replicas: dict[str, list[str]], all_stores: list[str]
) -> tuple[list[dict[str, Any]], list[tuple[Msg, str]], Counter[str]]:
    """The event lines, in time order: derived changes, sends (with derived CN sets), receives."""
    for n, m in enumerate(msgs):
        m.order = (n,)
    d = derive_keyed(msgs, fids, replicas, all_stores)
    return [line for _, line in d.lines], d.bad, d.stats


def derive_keyed(
    msgs: list[Msg], fids: dict[FolderKey, str], replicas: dict[str, list[str]], all_stores: list[str]
) -> Derived:
    """``derive_events`` over the messages of some folders (each folder's all: a folder's lines
    depend only on its own messages), each line keyed by its place in the whole log."""
    stats: Counter[str] = Counter()
    firsts: dict[str, Key] = {}

    def count(name: str, n: int, first: Key) -> None:
        stats[name] += n
        firsts.setdefault(name, first)

    bad: list[tuple[Msg, str]] = []
    skipped: set[int] = set()
    msgs = sorted(msgs, key=_place)
    tos: dict[int, tuple[list[str], list[str]]] = {}
    for i, m in enumerate(msgs):
        fid = fids[m.folder] if m.folder is not None else HIERARCHY_FID
        if m.changes is not None and m.type in ("hierarchy", "content"):
            width = sum(hi - lo + 1 for lo, hi in m.changes.ranges(m.sender))
            if width > MAX_EXPANDED_CNS:
                bad.append((m, R_RANGE_TOO_WIDE.format(width)))
                skipped.add(i)
                continue
        to = sorted({s for s, _ in m.receives} | ({m.addressed} if m.addressed else set()))
        derived: list[str] = []
        if m.synthesized:
            derived += ["event", "ts"]
        if not to:
            pool = all_stores if fid == HIERARCHY_FID else replicas.get(fid, [])
            to = sorted(s for s in pool if s != m.sender)
            derived.append("to")
            if not to:
                bad.append((m, R_NO_RECIPIENT))
                skipped.add(i)
                continue
        tos[i] = (to, derived)
    own = _own_changes(msgs, fids, skipped, count)

    timeline: list[tuple[int, int, int, str, str | None, int]] = []
    for i, m in enumerate(msgs):
        if i in skipped:
            continue
        # at one time: receives of earlier messages, then sends (a store answers what it has
        # processed), then receives of messages sent at that very time
        timeline.append((m.sent_at, 1, i, "send", None, 0))
        for j, (receiver, ts) in enumerate(m.receives):
            timeline.append((ts, 0 if ts > m.sent_at else 2, i, "receive", receiver, j))
    timeline.sort(key=lambda t: (t[0], t[1], t[2]))
    held: dict[tuple[str, str], CNSet] = defaultdict(lambda: EMPTY)  # lower bound of owned
    lines: list[tuple[Key, dict[str, Any]]] = []
    for ts, rank, i, what, store, j in timeline:
        m = msgs[i]
        at = (ts, rank, *_place(m))
        fid = fids[m.folder] if m.folder is not None else HIERARCHY_FID
        t = format_ts(ts)
        if what == "receive":
            assert store is not None
            lines.append(((*at, j), {"ts": t, "store": store, "kind": "receive", "msg": m.msg}))
            count("receive", 1, (3, *at, j))
            if m.changes:
                held[(store, fid)] = held[(store, fid)].union(m.changes)
            continue
        k = (m.sender, fid)
        for s_, f_, cn in own.get(i, ()):
            lines.append(
                (
                    (*at, len(lines)),
                    {
                        "ts": t,
                        "store": s_,
                        "kind": "change",
                        "fid": f_,
                        "cn": cn,
                        "derived": ["event"],
                        "implied_by": m.msg,
                    },
                )
            )
            held[(s_, f_)] = held[(s_, f_)].add(s_, cn)
        to, derived = tos[i]
        derived = list(derived)
        if m.changes:
            held[k] = held[k].union(m.changes)
        if m.cnset is not None:
            held[k] = held[k].union(m.cnset)
            cnset = m.cnset
        else:
            cnset = held[k]
            derived.append("cnset")
        line: dict[str, Any] = {
            "ts": t,
            "store": m.sender,
            "kind": "send",
            "msg": m.msg,
            "type": m.type,
            "fid": fid,
            "to": to,
            "cnset": cnset.text(),
        }
        if m.type in ("hierarchy", "content", "backfill_response"):
            line["changes"] = (m.changes or EMPTY).text()
        if m.type == "backfill_request":
            line["requested"] = (m.requested or EMPTY).text()
            if len(to) == 1:
                line["source"] = to[0]
        if m.type == "status_request":
            line["responders"] = []
            derived.append("responders")
        if derived:
            line["derived"] = derived
        send_at = (*at, len(lines))
        lines.append((send_at, line))
        count("send", 1, (3, *send_at))
        for n, d in enumerate(derived):
            count(f"send {d} derived", 1, (3, *send_at, n + 1))
    return Derived(lines, bad, stats, firsts)
