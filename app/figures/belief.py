"""A store's belief beside what is so, in words (replication-model.md, "What a store believes,
and what is so").

A replica's ``unique_count`` and ``missing_count`` are its store's belief (its state table and
backfill entries); ``really_unique_count``, ``at_risk_count``, ``lacks_count`` and
``not_told_count`` are what is so, from every store's log. An administrator reads a number as a
fact about their servers, so every text here that shows a belief names whose it is and says what
is so beside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from pfscope.app.figures.text import plural


def count(value: Any) -> int:
    """A published count as an int: a null (a run published before the column) is 0."""
    if value is None:
        return 0
    try:
        return 0 if pd.isna(value) else int(value)
    except (TypeError, ValueError):
        return 0


def _cns(value: Any) -> str:
    return value if isinstance(value, str) else ""


def believed_unique_text(store: str, believed: int, really: int, where: str = "", cnset: Any = None) -> str:
    """What ``store`` believes only it holds, and how much of that really is only there:
    "PFJNB02 believes 6 CNs are only there; all 6 are on other replicas". ``where``: e.g.
    ", in 5 folders"; ``cnset``: the believed CNs, said after the count. Empty when it believes
    nothing is only there."""
    if believed <= 0:
        return ""
    what = f" ({_cns(cnset)})" if _cns(cnset) else ""
    head = f"{store} believes {plural(believed, 'CN')}{what} {'is' if believed == 1 else 'are'} only there{where}"
    elsewhere = believed - really
    if really <= 0:
        tail = (
            "it is on another replica"
            if believed == 1
            else "both are on other replicas"
            if believed == 2
            else f"all {believed:,} are on other replicas"
        )
    elif elsewhere > 0:
        tail = f"{elsewhere:,} of them {'is' if elsewhere == 1 else 'are'} on other replicas"
    else:
        tail = "it is right" if believed == 1 else "it is right about all of them"
    return f"{head}; {tail}"


def held_alone_text(store: str, at_risk: int, cnset: Any, why: str) -> str:
    """Content at risk in words: "PFJNB01 holds PFJNB01:119 alone: at risk while it is down"
    (``why``: "while it is down", "until another replica holds it"). Empty when nothing is."""
    if at_risk <= 0:
        return ""
    what = _cns(cnset) or plural(at_risk, "CN")
    size = f" ({plural(at_risk, 'CN')})" if _cns(cnset) and at_risk > 1 else ""
    return f"{store} holds {what}{size} alone: at risk {why}"


@dataclass(frozen=True)
class Lacks:
    """What a replica lacks of what the stores on its folder's list hold, in two parts: known
    missing (its backfill entries are for them) and not told yet (it does not know it lacks them)."""

    total: int
    known: int
    not_told: int
    cnset: str = ""
    known_cnset: str = ""
    not_told_cnset: str = ""

    @classmethod
    def of(cls, replica: Mapping[str, Any]) -> Lacks:
        """From a ``replicas`` row; a run published before ``lacks_count`` counts known missing only."""
        known = count(replica.get("missing_count"))
        if replica.get("lacks_count") is None or pd.isna(replica.get("lacks_count")):
            return cls(
                known, known, 0, _cns(replica.get("missing_cnset")), _cns(replica.get("missing_cnset"))
            )
        total = count(replica.get("lacks_count"))
        not_told = min(count(replica.get("not_told_count")), total)
        return cls(
            total,
            total - not_told,
            not_told,
            _cns(replica.get("lacks_cnset")),
            _cns(replica.get("missing_cnset")),
            _cns(replica.get("not_told_cnset")),
        )


def lacks_summary(lacks: Lacks) -> str:
    """One short cell: "7: 3 known missing, 4 not told yet", "3, all known missing", "1, not told
    yet", "nothing"."""
    if lacks.total <= 0:
        return "nothing"
    if lacks.not_told <= 0:
        return f"{plural(lacks.total, 'CN')}, {'known' if lacks.total == 1 else 'all known'} missing"
    if lacks.known <= 0:
        return f"{plural(lacks.total, 'CN')}, not told yet"
    return f"{plural(lacks.total, 'CN')}: {lacks.known:,} known missing, {lacks.not_told:,} not told yet"


def sync_suffix(health: Any, lacks: Lacks, store_down: bool = False) -> str:
    """What follows a replica's health words when it lacks CNs (see :func:`sync_text`); after
    "in sync (store down)" without a second bracket."""
    if lacks.total <= 0:
        return ""
    if str(health) == "in_sync":
        return (
            "" if store_down else " (no backfill entry)"
        ) + f", lacks {plural(lacks.total, 'CN')}: not told yet"
    return f", lacks {lacks_summary(lacks)}"


def sync_text(health: Any, lacks: Lacks) -> str:
    """A replica's health with what it lacks, so "in sync" never hides CNs it lacks: "in sync (no
    backfill entry), lacks 1 CN: not told yet"; "overdue, lacks 7 CNs: 3 known missing, 4 not told yet"."""
    return str(health or "").replace("_", " ") + sync_suffix(health, lacks)


def arrival_text(store: str, n: int) -> str:
    """How a store comes to hold, or to know it lacks, CNs it has not been told of."""
    it, them, s = ("it", "it", "s") if n == 1 else ("they", "them", "")
    return (
        f"{it} arrive{s}, or {store} learns of {them}, with the next message from a store that holds {them}"
    )


def not_told_text(store: str, n: int, cnset: str) -> str:
    """The part a store does not know it lacks, and how it will learn of it: "4 it has not been
    told of (PFDUB01:68-70,72): they arrive, or PFDUB02 learns of them, with the next message ..."."""
    what = f" ({cnset})" if cnset else ""
    return f"{n:,} it has not been told of{what}: {arrival_text(store, n)}"


def at_risk_total(replicas: pd.DataFrame) -> int:
    """Content at risk over ``replicas`` rows: what is so, never a store's belief."""
    if replicas.empty or "at_risk_count" not in replicas.columns:
        return 0
    return int(pd.to_numeric(replicas["at_risk_count"], errors="coerce").fillna(0).sum())
