"""The verdict: one line per unhealthy replica of a folder, as of the run: what is missing, why,
what happens next and when (the answer an on-call administrator wants before any table)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

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


def _next_line(store: str, nxt: pd.DataFrame, down: bool) -> str:
    """What happens next: the next request's due time and stores, or why none comes."""
    if nxt.empty:
        return "no replica is believed to hold them, so no request will go out until one says it does"
    first = nxt.sort_values(["due_at", "entry_id", "rank"]).iloc[0]
    sources = ", ".join(dict.fromkeys(nxt.sort_values(["due_at", "rank"])["source"]))
    if down:
        return f"its next request (to {sources}) waits until {store} comes back up"
    return f"next request {fmt_time(first['due_at'])} to {sources}"


def folder_verdicts(replicas: pd.DataFrame, entries: pd.DataFrame, next_requests: pd.DataFrame,
                    stores: pd.DataFrame, as_of: Any) -> list[Verdict]:
    """One :class:`Verdict` per replica that is not in sync (or whose store is down), most urgent
    first. ``entries``: the folder's backfill entries; ``next_requests``: its next requests."""
    status = stores.set_index("store") if not stores.empty else pd.DataFrame()
    out: list[Verdict] = []
    for r in replicas.sort_values("store").to_dict("records"):
        store = str(r["store"])
        down = not status.empty and store in status.index and status.loc[store, "status"] == "down"
        since = down_text(status.loc[store, "down_since"], as_of) if down and "down_since" in status.columns else ""
        health = str(r["health"])
        mine = entries[(entries["observer"] == store) & (entries["state"] == "open")] if not entries.empty else entries
        nxt = next_requests[next_requests["observer"] == store] if not next_requests.empty else next_requests
        parts: list[str] = []
        tier = "info"
        if health == "delete_pending":
            tier = "critical" if int(r.get("unique_count") or 0) else "warning"
            parts.append(f"left the replica list {fmt_time(r.get('delete_pending_since'))}; "
                         f"{plural(int(r.get('unique_count') or 0), 'CN')} only it holds ({r.get('unique_cnset') or ''}): "
                         "it is deleted once another replica holds them")
        elif health in ("overdue", "backfilling"):
            missing = int(r.get("missing_count") or 0)
            retried = mine[[entry_overdue(int(n or 0)) for n in mine["requests"].fillna(0)]] if not mine.empty else mine
            parts.append(f"lacks {plural(missing, 'CN')} ({r.get('missing_cnset') or ''}) in "
                         f"{plural(len(mine), 'open entry', 'open entries')}")
            if not retried.empty:
                tier = "warning"
                last = retried["last_request_at"].max()
                parts.append(f"its first request did not fill {'it' if len(retried) == 1 else 'them'}: "
                             f"{plural(int(retried['requests'].max()), 'request')} so far, the last "
                             f"{fmt_time(last)}")
            parts.append(_next_line(store, nxt, down))
        elif not down:
            continue
        if down:
            tier = "critical" if tier == "critical" else "warning"
            parts.insert(0, f"store down {since}".rstrip() + ": its health here is as last known")
        if int(r.get("unique_count") or 0) and health not in ("delete_pending", "deleted") and down:
            tier = "critical"
            parts.append(f"{plural(int(r['unique_count']), 'CN')} only it holds ({r.get('unique_cnset') or ''}) "
                         "are out of reach until it is back")
        out.append(Verdict(store, tier, f"{store}: " + "; ".join(p for p in parts if p) + "."))
    out.sort(key=lambda v: (TIERS.index(v.tier), v.store))
    return out
