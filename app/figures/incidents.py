"""What happened: the organisation's incidents in time order, from the published tables.

An operator asking "what happened this week?" needs a list they can read: tens of lines, not
the thousands of events behind them. Each kind of incident is grouped so (and every line says
how many events it stands for):

- **outages** (``store_periods``): one per period, with what it caused (:mod:`.effects`); outages
  that start within :data:`OUTAGE_TOGETHER` of each other are one incident (a site down);
- **replica-list changes** (``replica_lists`` rows with a time): changes within
  :data:`RUN_GAP` of each other are one incident ("30 folders: PF0001 added to 24");
- **mail never processed** (``messages``, :mod:`.mail`): bursts per recipient, bursts at the same
  time merged;
- **overdue entries** (when an entry's second request went out, ``backfill_requests``): runs
  per observer store, runs at the same time merged.

Pure pandas: the frames in, :class:`Incident` rows out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from pfscope.app.figures.outages import outage_duration, short_time, span_text, utc_time
from pfscope.app.figures.text import folder_label, plural

#: the kinds, in the order the timeline chart stacks them (label, glossary anchor)
KINDS: dict[str, tuple[str, str]] = {
    "outage": ("store down", "down-period"),
    "lists": ("replica lists changed", "replica-list"),
    "mail": ("mail never processed", "never-processed"),
    "overdue": ("entries overdue", "overdue"),
}
#: events of one kind this close in time are one run (one incident, or one part of one)
RUN_GAP = pd.Timedelta(hours=1)
#: overdue entries come a time-out apart: a store's entries this close are one run
OVERDUE_GAP = pd.Timedelta(hours=6)
#: a run never spans longer than this (a steady trickle is told day by day, not as one week)
RUN_SPAN = pd.Timedelta(hours=24)
#: outages that start this close together are one incident (a site or a network down)
OUTAGE_TOGETHER = pd.Timedelta(minutes=15)
#: stores or folders a line names before it says "and N more"
NAMED = 3


@dataclass(frozen=True)
class Incident:
    """One line of the organisation's timeline: when, what, who, and how many events it groups."""

    kind: str  # a key of KINDS
    start: pd.Timestamp
    end: pd.Timestamp | None  # None: still going on at the as-of
    text: str
    tier: str = "info"  # critical, warning or info
    stores: tuple[str, ...] = ()
    folders: tuple[str, ...] = ()
    events: int = 1  # what it groups: periods, folder changes, deliveries, entries
    parts: tuple[str, ...] = ()  # one line per group it merges (per store, per outage)
    href: str | None = None

    @property
    def label(self) -> str:
        return KINDS[self.kind][0]

    @property
    def ongoing(self) -> bool:
        return self.end is None

    def last(self, as_of: pd.Timestamp | None) -> pd.Timestamp:
        """Where its bar ends: its end, or the as-of while it goes on."""
        return self.end if self.end is not None else (as_of if as_of is not None else self.start)


@dataclass(frozen=True)
class Incidents:
    """The organisation's incidents in time order, and how many events they stand for."""

    items: tuple[Incident, ...] = ()
    events: dict[str, int] = field(default_factory=dict)  # kind -> events grouped into its incidents
    unknown: tuple[str, ...] = ()  # kinds the run cannot tell (published without their tables)

    def newest_first(self) -> list[Incident]:
        return sorted(self.items, key=lambda x: (x.start, x.kind), reverse=True)

    def summary(self) -> str:
        """``12 incidents, grouped from 1,532 events: 2 outages, 1 replica-list change (4 folders), ...``;
        and what the run cannot tell, said as unknown (never as "nothing")."""
        unknown = (
            " Unknown for this run (published by an earlier pfscope, without the tables): "
            + ", ".join(KINDS[k][0] for k in self.unknown)
            + "."
            if self.unknown
            else ""
        )
        if not self.items:
            told = [NONE[k] for k in KINDS if k not in self.unknown]
            return "Nothing happened in the log, up to the as-of: " + ", ".join(told) + "." + unknown
        by_kind = Counter(x.kind for x in self.items)
        parts = []
        for kind, (one, many, event_one, event_many) in NOUNS.items():
            n = by_kind.get(kind, 0)
            if not n:
                continue
            grouped = self.events.get(kind, n)
            parts.append(
                plural(n, one, many)
                + (f" ({plural(grouped, event_one, event_many)})" if grouped != n else "")
            )
        total = sum(self.events.get(k, 0) for k in KINDS)
        return (
            f"{plural(len(self.items), 'incident')}, grouped from {plural(total, 'event')}: "
            + ", ".join(parts)
            + "."
            + unknown
        )


#: per kind, that none happened
NONE: dict[str, str] = {
    "outage": "no store was down",
    "lists": "no replica list changed",
    "mail": "every message was processed",
    "overdue": "no entry became overdue",
}

#: the published tables each kind is read from
KIND_TABLES: dict[str, tuple[str, ...]] = {
    "outage": ("store_periods",),
    "lists": ("replica_lists",),
    "mail": ("messages",),
    "overdue": ("backfill_entries", "backfill_requests"),
}


def unknown_kinds(absent: Iterable[str]) -> tuple[str, ...]:
    """The kinds a run cannot tell: one of their tables is ``absent`` from it (a run published
    by an earlier pfscope)."""
    gone = set(absent)
    return tuple(k for k, tables in KIND_TABLES.items() if gone.intersection(tables))


#: per kind: the incident (one, many) and the event it groups (one, many)
NOUNS: dict[str, tuple[str, str, str, str]] = {
    "outage": ("outage", "outages", "period", "periods"),
    "lists": ("replica-list change", "replica-list changes", "folder changed", "folders changed"),
    "mail": ("burst of mail never processed", "bursts of mail never processed", "delivery", "deliveries"),
    "overdue": ("run of entries overdue", "runs of entries overdue", "entry", "entries"),
}


def _run_numbers(keys: np.ndarray, ns: np.ndarray, gap: int, span: int) -> np.ndarray:
    """Run numbers over rows sorted by key then time (see :func:`runs`)."""
    out = np.zeros(len(ns), dtype="int64")
    run, first, prev, key = -1, 0, 0, None
    for i in range(len(ns)):
        t, k = int(ns[i]), keys[i]
        if k != key or t - prev > gap or t - first > span:
            run, first, key = run + 1, t, k
        out[i] = run
        prev = t
    return out


def runs(
    times: Sequence[Any] | pd.Series, gap: pd.Timedelta = RUN_GAP, span: pd.Timedelta = RUN_SPAN
) -> np.ndarray:
    """Run numbers for times in ascending order: a new run when the gap to the previous time is
    more than ``gap``, or the run would span more than ``span``."""
    ns = pd.DatetimeIndex(
        pd.to_datetime(
            times if isinstance(times, pd.Series) else pd.Series(list(times), dtype=object), utc=True
        )
    ).asi8
    return _run_numbers(np.zeros(len(ns), dtype="int64"), ns, gap.value, span.value)


def keyed_runs(
    frame: pd.DataFrame, key: str, at: str, gap: pd.Timedelta = RUN_GAP, span: pd.Timedelta = RUN_SPAN
) -> pd.Series:
    """``frame``'s rows in runs per ``key`` (see :func:`runs`): a run number per row, distinct
    across keys."""
    if frame.empty:
        return pd.Series([], index=frame.index, dtype="int64")
    ordered = frame.sort_values([key, at], kind="stable")
    ns = pd.DatetimeIndex(pd.to_datetime(ordered[at], utc=True)).asi8
    numbers = _run_numbers(ordered[key].astype(str).to_numpy(), ns, gap.value, span.value)
    return pd.Series(numbers, index=ordered.index).reindex(frame.index)


def merge_spans(spans: pd.DataFrame, gap: pd.Timedelta = RUN_GAP, span: pd.Timedelta = RUN_SPAN) -> pd.Series:
    """Group numbers for spans (``start``, ``end``) that overlap or come within ``gap`` of each
    other, a group starting no more than ``span`` after its first: per-store runs at the same time
    become one incident."""
    if spans.empty:
        return pd.Series([], index=spans.index, dtype="int64")
    ordered = spans.sort_values(["start", "end"], kind="stable")
    groups = []
    group, first, reach = -1, None, None
    for s, e in zip(ordered["start"], ordered["end"], strict=True):
        if first is None or s - reach > gap or s - first > span:
            group, first, reach = group + 1, s, e
        reach = max(reach, e)
        groups.append(group)
    return pd.Series(groups, index=ordered.index, dtype="int64").reindex(spans.index)


def named(counts: Counter[str] | dict[str, int], unit: str = "", limit: int = NAMED) -> str:
    """``PF0001 (24 folders), PF0002 (6 folders), PF0003 and 3 more``: the largest first, then by
    name; a count of one goes unsaid."""
    items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = [f"{k} ({v:,}{unit})" if v != 1 else f"{k}" for k, v in items[:limit]]
    more = len(items) - limit
    return ", ".join(shown) + (f" and {more:,} more" if more > 0 else "")


def names(values: Iterable[str], limit: int = NAMED) -> str:
    """``PFS1, PFS2, PFS3 and 4 more``."""
    items = sorted(set(values))
    more = len(items) - limit
    return ", ".join(items[:limit]) + (f" and {more:,} more" if more > 0 else "")


# -- outages -------------------------------------------------------------------------------------


def outage_incidents(
    periods: pd.DataFrame, as_of: Any, effects: dict[tuple[str, pd.Timestamp], str] | None = None
) -> list[Incident]:
    """One incident per down period (``store``, ``down_at``, ``up_at``), or per outages that
    start together; ``effects``: (store, down_at) -> what the period caused, in words."""
    ref = utc_time(as_of)
    rows = []
    for r in periods.to_dict("records"):
        start = utc_time(r.get("down_at"))
        if start is not None:
            rows.append((start, utc_time(r.get("up_at")), str(r["store"])))
    rows.sort(key=lambda x: (x[0], x[2]))
    out: list[Incident] = []
    i = 0
    while i < len(rows):
        j = i + 1
        while j < len(rows) and rows[j][0] - rows[i][0] <= OUTAGE_TOGETHER:
            j += 1
        group = rows[i:j]
        lines = []
        for start, end, store in group:
            line = _outage_line(store, start, end, ref)
            caused = (effects or {}).get((store, start))
            lines.append(f"{line}: {caused}" if caused else line)
        ongoing = any(end is None for _, end, _ in group)
        ends = [end for _, end, _ in group if end is not None]
        stores = tuple(store for _, _, store in group)
        text = lines[0] if len(group) == 1 else f"{len(group)} stores down together ({names(stores)})"
        out.append(
            Incident(
                kind="outage",
                start=group[0][0],
                end=None if ongoing else max(ends),
                text=text,
                tier="critical" if ongoing else "warning",
                stores=stores,
                events=len(group),
                parts=tuple(lines) if len(group) > 1 else (),
                href=f"/store/{stores[0]}" if len(group) == 1 else None,
            )
        )
        i = j
    return out


def _outage_line(store: str, start: pd.Timestamp, end: pd.Timestamp | None, ref: pd.Timestamp | None) -> str:
    if end is None:
        took = outage_duration((ref - start).total_seconds()) if ref is not None and ref >= start else ""
        return f"{store} down since {short_time(start)}, still down at the as-of" + (
            f" ({took})" if took else ""
        )
    return f"{store} down {outage_duration((end - start).total_seconds())}, {span_text(start, end)}"


# -- replica-list changes --------------------------------------------------------------------------


def list_changes(lists: pd.DataFrame) -> pd.DataFrame:
    """Each replica-list change (``replica_lists`` rows with a time) with the stores it added and
    removed against the folder's list before it (the topology's, for the first change)."""
    cols = ["fid", "at", "added", "removed"]
    if lists.empty:
        return pd.DataFrame(columns=cols)
    frame = lists.assign(_at=pd.to_datetime(lists["at"], utc=True))
    frame = frame.assign(_first=frame["_at"].isna()).sort_values(
        ["fid", "_first", "_at", "seq"], ascending=[True, False, True, True], kind="stable"
    )
    rows = []
    current: Any = None
    before: set[str] | None = None
    # one pass over the rows in order (a groupby per folder costs seconds at 100,000 folders)
    for fid, at, replicas in zip(frame["fid"], frame["_at"], frame["replicas"], strict=True):
        if fid != current:
            current, before = fid, None
        now = {str(s) for s in (replicas if replicas is not None else [])}
        if not pd.isna(at) and (before is None or now != before):
            rows.append(
                {
                    "fid": str(fid),
                    "at": at,
                    "added": sorted(now - (before or set())),
                    "removed": sorted((before or set()) - now),
                }
            )
        before = now
    out = pd.DataFrame(rows, columns=cols)
    return out.sort_values(["at", "fid"], kind="stable").reset_index(drop=True)


def _per_store(counts: Counter[str], folders: int) -> str:
    """``PF0001 (to 24 folders), PF0002 (to 6)``, or just the names for one folder."""
    if folders == 1:
        return names(counts, limit=NAMED * 2)
    return named(counts, " folders")


def list_incidents(changes: pd.DataFrame, paths: dict[str, Any] | None = None) -> list[Incident]:
    """Changes within :data:`RUN_GAP` of each other as one incident: the folders and, per store,
    how many lists it joined or left."""
    if changes.empty:
        return []
    out = []
    for _, part in changes.groupby(runs(changes["at"]), sort=True):
        start, end = part["at"].min(), part["at"].max()
        added = Counter(s for lst in part["added"] for s in lst)
        removed = Counter(s for lst in part["removed"] for s in lst)
        fids = tuple(dict.fromkeys(part["fid"]))
        what = []
        if added:
            what.append("added " + _per_store(added, len(fids)))
        if removed:
            what.append("removed " + _per_store(removed, len(fids)))
        if len(fids) == 1:
            label = folder_label(fids[0], (paths or {}).get(fids[0]))
            head = f"Replica list of {fids[0]}" + (f" ({label})" if label else "") + " changed"
        else:
            head = f"Replica lists of {len(fids):,} folders changed"
        text = head + (": " + "; ".join(what) if what else "")
        out.append(
            Incident(
                kind="lists",
                start=start,
                end=end,
                text=text,
                stores=tuple(sorted(set(added) | set(removed))),
                folders=fids,
                events=len(part),
                href=f"/folder/{fids[0]}" if len(fids) == 1 else None,
            )
        )
    return out


# -- overdue entries -------------------------------------------------------------------------------


def overdue_incidents(entries: pd.DataFrame, first_sources: pd.DataFrame | None = None) -> list[Incident]:
    """When entries became overdue (``overdue_at``: their second request), in runs per observer
    (:data:`OVERDUE_GAP`), runs at the same time merged into one incident. ``entries``:
    entry_id, observer, fid, overdue_at, state; ``first_sources``: entry_id, source (the stores
    their first request went to, which did not fill them)."""
    late = entries[entries["overdue_at"].notna()]
    if late.empty:
        return []
    late = late.assign(at=pd.to_datetime(late["overdue_at"], utc=True))
    sources: dict[str, list[str]] = {}
    if first_sources is not None and not first_sources.empty:
        for e, s in zip(first_sources["entry_id"], first_sources["source"], strict=True):
            sources.setdefault(str(e), []).append(str(s))
    late = late.assign(_run=keyed_runs(late, "observer", "at", OVERDUE_GAP))
    spans = late.groupby("_run").agg(start=("at", "min"), end=("at", "max"), observer=("observer", "first"))
    spans = spans.assign(group=merge_spans(spans, OVERDUE_GAP))
    ids = late.groupby("_run", sort=False)["entry_id"].agg(list)
    out = []
    for _, group in spans.groupby("group", sort=True):
        ordered = group.sort_values(["start", "observer"])
        rows = late[late["_run"].isin(ordered.index)]
        parts = tuple(
            _overdue_line(str(r.observer), r.start, r.end, ids[run], sources)
            for run, r in zip(ordered.index, ordered.itertuples(), strict=True)
        )
        stores = tuple(sorted(set(rows["observer"].astype(str))))
        still = int((rows["state"] == "open").sum())
        asked = Counter(s for e in rows["entry_id"] for s in dict.fromkeys(sources.get(str(e), [])))
        who = f"of {stores[0]}" if len(stores) == 1 else f"at {len(stores):,} stores ({names(stores)})"
        them = "it" if len(rows) == 1 else "them"
        text = (
            f"{plural(len(rows), 'entry', 'entries')} {who} became overdue (second request)"
            + (
                f": the first request, to {named(asked, ' of them' if len(rows) > 1 else '')}, did not fill {them}"
                if asked
                else ""
            )
            + "; "
            + (f"{still:,} still open at the as-of" if still else "none still open at the as-of")
        )
        out.append(
            Incident(
                kind="overdue",
                start=group["start"].min(),
                end=group["end"].max(),
                text=text,
                tier="warning" if still else "info",
                stores=stores,
                folders=tuple(dict.fromkeys(rows["fid"].astype(str))),
                events=len(rows),
                parts=parts if len(parts) > 1 else (),
                href="/backfill?overdue=1" + (f"&observer={stores[0]}" if len(stores) == 1 else ""),
            )
        )
    return out


def _overdue_line(
    store: str, start: pd.Timestamp, end: pd.Timestamp, entries: list[str], sources: dict[str, list[str]]
) -> str:
    asked = Counter(s for e in entries for s in dict.fromkeys(sources.get(str(e), [])))
    return f"{store}: {plural(len(entries), 'entry', 'entries')}, {span_text(start, end)}" + (
        f", first asked {named(asked, ' of them')}" if asked else ""
    )


def first_request_sources(requests: pd.DataFrame) -> pd.DataFrame:
    """The stores each entry's first request went to (``backfill_requests`` attempt 1)."""
    first = requests[pd.to_numeric(requests["attempt"], errors="coerce") == 1]
    return first[["entry_id", "source"]].drop_duplicates().reset_index(drop=True)


def timeline(items: Iterable[Incident], events: dict[str, int], unknown: Sequence[str] = ()) -> Incidents:
    """The incidents in time order (start, then kind); ``unknown``: the kinds the run cannot tell."""
    order = {k: i for i, k in enumerate(KINDS)}
    ordered = sorted(items, key=lambda x: (x.start, order[x.kind], x.text))
    return Incidents(tuple(ordered), {k: v for k, v in events.items() if v}, tuple(unknown))
