"""The verdict: one line per unhealthy replica of a folder, as of the run: what it lacks (what it
knows it is missing, and what it has not been told of), why, what happens next and when (the
answer an on-call administrator wants before any table)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from pfscope.app.figures.belief import (
    Lacks,
    arrival_text,
    believed_unique_text,
    count,
    held_alone_text,
    not_told_text,
)
from pfscope.app.figures.forecast import forecast_by_store, forecast_text
from pfscope.app.figures.text import down_text, fmt_time, plural
from pfscope.spark_jobs.model.rules.health import entry_overdue

#: severity tiers, most urgent first: content only one store holds; a backfill that is failing
#: or a store that is down; a backfill under way
TIERS = ("critical", "warning", "info")


@dataclass(frozen=True)
class Verdict:
    store: str
    tier: str
    text: str
    #: the CNs the replica lacks (what is so), for a link to their trace; empty when none
    lacks_cnset: str = ""
    #: the forecast the line ends with (before its full stop), for a link to its explanation;
    #: empty when the replica has none
    forecast: str = ""

    def head(self) -> str:
        """The line up to its forecast (the whole line when it has none)."""
        tail = self.forecast + "."
        return self.text[: -len(tail)] if self.forecast and self.text.endswith(tail) else self.text


def _next_line(store: str, nxt: pd.DataFrame, down: bool) -> str:
    """What happens next: the next request's due time and stores, or why none comes."""
    if nxt.empty:
        return "no replica is believed to hold them, so no request will go out until one says it does"
    first = nxt.sort_values(["due_at", "entry_id", "rank"]).iloc[0]
    sources = ", ".join(dict.fromkeys(nxt.sort_values(["due_at", "rank"])["source"]))
    if down:
        return f"its next request (to {sources}) waits until {store} comes back up"
    return f"next request {fmt_time(first['due_at'])} to {sources}"


def _lacks_line(store: str, lacks: Lacks, known: list[str]) -> str:
    """What a replica lacks, in its two parts: "lacks 7 CNs (…): 3 it knows of (…: backfill in 1
    open entry; next request …), 4 it has not been told of (…): they arrive, or …"."""
    head = f"lacks {plural(lacks.total, 'CN')}" + (f" ({lacks.cnset})" if lacks.cnset else "")
    backfill = "; ".join(known)
    if lacks.not_told <= 0:
        return f"{head}, {'it knows of it' if lacks.total == 1 else 'all of which it knows of'}: {backfill}"
    told = not_told_text(store, lacks.not_told, lacks.not_told_cnset)
    if lacks.known <= 0:
        return f"{head}: not told yet: {arrival_text(store, lacks.not_told)}" + (
            f"; {backfill}" if backfill else ""
        )
    cns = f"{lacks.known_cnset}: " if lacks.known_cnset else ""
    return f"{head}: {lacks.known:,} it knows of ({cns}{backfill}), {told}"


def folder_verdicts(
    replicas: pd.DataFrame,
    entries: pd.DataFrame,
    next_requests: pd.DataFrame,
    stores: pd.DataFrame,
    as_of: Any,
    forecast: pd.DataFrame | None = None,
) -> list[Verdict]:
    """One :class:`Verdict` per replica that is not in sync, lacks CNs (known missing or not told
    yet) or whose store is down, most urgent first. ``entries``: the folder's backfill entries;
    ``next_requests``: its next requests. What is at risk and what a replica lacks are what is so;
    what a store believes only it holds is said to be its belief. Each line ends with the
    replica's forecast (``forecast``: the folder's rows), when it has one."""
    status = stores.set_index("store") if not stores.empty else pd.DataFrame()
    ahead = forecast_by_store(forecast) if forecast is not None else {}
    out: list[Verdict] = []
    for r in replicas.sort_values("store").to_dict("records"):
        store = str(r["store"])
        down = not status.empty and store in status.index and status.loc[store, "status"] == "down"
        since = (
            down_text(status.loc[store, "down_since"], as_of)
            if down and "down_since" in status.columns
            else ""
        )
        health = str(r["health"])
        mine = (
            entries[(entries["observer"] == store) & (entries["state"] == "open")]
            if not entries.empty
            else entries
        )
        nxt = next_requests[next_requests["observer"] == store] if not next_requests.empty else next_requests
        lacks = Lacks.of(r)
        at_risk, believed, really = (
            count(r.get(c)) for c in ("at_risk_count", "unique_count", "really_unique_count")
        )
        belief = believed_unique_text(store, believed, really, cnset=r.get("unique_cnset"))
        parts: list[str] = []
        tier = "info"
        if health == "delete_pending":
            tier = "critical" if at_risk else "warning"
            parts.append(f"left the replica list {fmt_time(r.get('delete_pending_since'))}")
            parts.append(
                held_alone_text(store, at_risk, r.get("at_risk_cnset"), "until another replica holds it")
                or "nothing only it holds"
            )
            if belief:
                parts.append(f"{belief}: it is deleted once it believes none is")
        elif health in ("overdue", "backfilling") or (health != "deleted" and lacks.total > 0):
            known: list[str] = []
            if not mine.empty:
                known.append(f"backfill in {plural(len(mine), 'open entry', 'open entries')}")
            retried = (
                mine[[entry_overdue(int(n or 0)) for n in mine["requests"].fillna(0)]]
                if not mine.empty
                else mine
            )
            if not retried.empty:
                tier = "warning"
                last = retried["last_request_at"].max()
                known.append(
                    f"its first request did not fill {'it' if len(retried) == 1 else 'them'}: "
                    f"{plural(int(retried['requests'].max()), 'request')} so far, the last "
                    f"{fmt_time(last)}"
                )
            if not mine.empty:
                known.append(_next_line(store, nxt, down))
            line = _lacks_line(store, lacks, known) if lacks.total > 0 else "; ".join(known)
            parts.append(f"in sync (no backfill entry), {line}" if health == "in_sync" else line)
        elif not down:
            continue
        if down:
            tier = "critical" if tier == "critical" or at_risk else "warning"
            parts.insert(0, f"store down {since}".rstrip() + ": its health here is as last known")
            if health not in ("delete_pending", "deleted"):
                parts.append(held_alone_text(store, at_risk, r.get("at_risk_cnset"), "while it is down"))
                if belief:
                    parts.append(belief + ("" if at_risk else ": nothing here is at risk"))
        ahead_text = forecast_text(ahead.get(store))
        parts.append(ahead_text)
        out.append(
            Verdict(
                store, tier, f"{store}: " + "; ".join(p for p in parts if p) + ".", lacks.cnset, ahead_text
            )
        )
    out.sort(key=lambda v: (TIERS.index(v.tier), v.store))
    return out
