"""What is wrong, by cause: each cause (a store down, a failing backfill, a replica leaving with
content only it holds, backfill under way) with the consequences it explains, most urgent first."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from pfscope.app.figures.text import down_text, fmt_time, plural
from pfscope.app.figures.verdict import TIERS


@dataclass(frozen=True)
class Cause:
    tier: str
    title: str
    href: str
    consequences: list[str] = field(default_factory=list)


def _store_down(store: str, row: dict[str, Any], replicas: pd.DataFrame, entries: pd.DataFrame,
                next_requests: pd.DataFrame, as_of: Any) -> Cause:
    mine = replicas[(replicas["store"] == store) & (replicas["health"] != "deleted")]
    only = int(mine["unique_count"].fillna(0).sum())
    folders = int((mine["unique_count"].fillna(0) > 0).sum())
    waiting = int((entries["observer"] == store).sum()) if not entries.empty else 0
    asking = next_requests[(next_requests["source"] == store) & (next_requests["observer"] != store)] \
        if not next_requests.empty else next_requests
    waiters = asking[["observer", "fid"]].drop_duplicates() if not asking.empty else asking
    out = [f"{plural(only, 'CN')} only it holds, in {plural(folders, 'folder')}: out of reach until it is back"
           if only else "no content only it holds",
           f"{plural(waiting, 'open entry', 'open entries')} of its own wait for it (a store that is down sends "
           "nothing)"]
    if len(waiters):
        out.append(f"{plural(len(waiters), 'replica')} elsewhere will ask it next")
    since = down_text(row.get("down_since"), as_of)
    return Cause("critical", f"{store} down" + (f" {since}" if since else ""), f"/store/{store}", out)


def causes(stores: pd.DataFrame, replicas: pd.DataFrame, entries: pd.DataFrame, next_requests: pd.DataFrame,
           as_of: Any) -> list[Cause]:
    """Every cause with its consequences. ``replicas``: store, fid, health, unique_count;
    ``entries``: the open backfill entries; ``next_requests``: their next requests."""
    out: list[Cause] = []
    down = stores[stores["status"] == "down"] if "status" in stores.columns else stores.iloc[0:0]
    for row in down.sort_values("store").to_dict("records"):
        out.append(_store_down(str(row["store"]), row, replicas, entries, next_requests, as_of))
    down_names = set(down["store"])
    pending = replicas[(replicas["health"] == "delete_pending") & (replicas["unique_count"].fillna(0) > 0)]
    if not pending.empty:
        out.append(Cause("critical", f"{plural(len(pending), 'replica')} leaving with content only it holds",
                         "/replicas?health=delete_pending",
                         [f"{r['store']} in {r['fid']}: {plural(int(r['unique_count']), 'CN')}; deleted once "
                          "another replica holds them" for r in pending.sort_values("store").to_dict("records")]))
    overdue = replicas[(replicas["health"] == "overdue") & ~replicas["store"].isin(down_names)]
    for store, group in overdue.groupby("store", sort=True):
        lines = []
        for r in group.sort_values("fid").to_dict("records"):
            nxt = next_requests[(next_requests["observer"] == store) & (next_requests["fid"] == r["fid"])] \
                if not next_requests.empty else next_requests
            if nxt.empty:
                lines.append(f"{r['fid']}: no replica is believed to hold what it lacks")
            else:
                first = nxt.sort_values(["due_at", "rank"]).iloc[0]
                lines.append(f"{r['fid']}: its first request did not fill it; next request "
                             f"{fmt_time(first['due_at'])} to {first['source']}")
        out.append(Cause("warning", f"{store}: backfill failing in {plural(len(group), 'replica')} (overdue)",
                         f"/backfill?observer={store}&overdue=1", lines))
    young = entries[~entries["observer"].isin(down_names)] if not entries.empty else entries
    if len(young):
        oldest = young["opened_at"].min()
        out.append(Cause("info", f"{plural(len(young), 'open backfill entry', 'open backfill entries')} under way",
                         "/backfill", [f"normal between replication messages; the oldest opened {fmt_time(oldest)}"]))
    out.sort(key=lambda c: TIERS.index(c.tier))
    return out
