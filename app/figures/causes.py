"""What is wrong, by cause: each cause (a store down, a failing backfill, a replica leaving with
content only it holds, backfill under way) with the consequences it explains, most urgent first.

Content at risk is what is so (``at_risk_count``); what a store believes only it holds
(``unique_count``) is shown beside it as that store's belief, never as the risk."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from pfscope.app.figures.backfill import NO_SOURCE, next_request_texts
from pfscope.app.figures.belief import believed_unique_text, count, held_alone_text
from pfscope.app.figures.recovery import forecast_summary
from pfscope.app.figures.text import down_text, fmt_time, plural
from pfscope.app.figures.verdict import TIERS
from pfscope.spark_jobs.model.rules.health import entry_overdue


@dataclass(frozen=True)
class Cause:
    tier: str
    title: str
    href: str
    consequences: list[str] = field(default_factory=list)


def _counts(frame: pd.DataFrame, column: str) -> pd.Series:
    if column not in frame.columns:
        return pd.Series(0, index=frame.index, dtype="int64")
    return pd.to_numeric(frame[column], errors="coerce").fillna(0).astype("int64")


def _store_down(
    store: str,
    row: dict[str, Any],
    replicas: pd.DataFrame,
    entries: pd.DataFrame,
    next_requests: pd.DataFrame,
    as_of: Any,
    forecast: pd.DataFrame,
) -> Cause:
    mine = replicas[(replicas["store"] == store) & (replicas["health"] != "deleted")]
    risk, believed, really = (
        _counts(mine, "at_risk_count"),
        _counts(mine, "unique_count"),
        _counts(mine, "really_unique_count"),
    )
    at_risk = int(risk.sum())
    belief = believed_unique_text(
        store, int(believed.sum()), int(really.sum()), f", in {plural(int((believed > 0).sum()), 'folder')}"
    )
    if at_risk:
        first = (
            f"{plural(at_risk, 'CN')} only it holds, in {plural(int((risk > 0).sum()), 'folder')}: out of reach "
            "until it is back" + (f" ({belief})" if belief and int(believed.sum()) != at_risk else "")
        )
    else:
        first = "no content only it holds" + (f": {belief}" if belief else "")
    waiting = int((entries["observer"] == store).sum()) if not entries.empty else 0
    asking = (
        next_requests[(next_requests["source"] == store) & (next_requests["observer"] != store)]
        if not next_requests.empty
        else next_requests
    )
    waiters = asking[["observer", "fid"]].drop_duplicates() if not asking.empty else asking
    out = [
        first,
        f"{plural(waiting, 'open entry', 'open entries')} of its own wait for it (a store that is down sends "
        "nothing)",
    ]
    lacking = forecast[forecast["store"] == store] if not forecast.empty else forecast
    if len(lacking):
        out.append(
            f"{plural(len(lacking), 'replica')} of its own lack{'s' if len(lacking) == 1 else ''} CNs; "
            + forecast_summary(lacking)
        )
    if len(waiters):
        out.append(
            _with(
                f"{plural(len(waiters), 'replica')} elsewhere will ask it next",
                _of(forecast, waiters, "observer"),
            )
        )
    since = down_text(row.get("down_since"), as_of)
    return Cause("critical", f"{store} down" + (f" {since}" if since else ""), f"/store/{store}", out)


def _of(forecast: pd.DataFrame, replicas: pd.DataFrame, store: str = "store") -> pd.DataFrame:
    """The forecast's rows of ``replicas`` (``store`` names its store column, with ``fid``)."""
    if forecast.empty or replicas.empty:
        return forecast.iloc[0:0]
    keys = replicas[[store, "fid"]].drop_duplicates().rename(columns={store: "store"})
    return forecast.merge(keys, on=["store", "fid"], how="inner")


def _with(line: str, forecast: pd.DataFrame) -> str:
    """A cause's line about replicas that lack CNs, ending with their forecast (when they have one)."""
    said = forecast_summary(forecast)
    return f"{line}; {said}" if said else line


def _leaving(r: dict[str, Any]) -> str:
    """A delete-pending replica: what it holds alone (what is so), then what it believes."""
    store = str(r["store"])
    at_risk, believed, really = (
        count(r.get(c)) for c in ("at_risk_count", "unique_count", "really_unique_count")
    )
    parts = [
        held_alone_text(store, at_risk, r.get("at_risk_cnset"), "until another replica holds it")
        or "nothing only it holds",
        believed_unique_text(store, believed, really),
    ]
    if believed:
        parts.append("it is deleted once it believes none is")
    return f"{store} in {r['fid']}: " + "; ".join(p for p in parts if p)


def most_overdue(entries: pd.DataFrame, store: str, fid: str) -> pd.DataFrame:
    """A replica's overdue open entries (two requests or more), the one a cause speaks of first:
    the longest open, as the /backfill grid orders them (overdue first, then the longest open)."""
    if entries.empty or "requests" not in entries.columns:
        return entries.iloc[0:0]
    mine = entries[(entries["observer"] == store) & (entries["fid"] == fid)]
    mine = mine[[entry_overdue(int(n or 0)) for n in mine["requests"].fillna(0)]]
    return mine.sort_values(["opened_at", "entry_id"], kind="stable")


def overdue_line(
    store: str,
    fid: str,
    entries: pd.DataFrame,
    next_requests: pd.DataFrame,
    forecast: pd.DataFrame | None = None,
) -> str:
    """One overdue replica in words: its longest-open overdue entry, named, with that entry's own
    next request (due time and stores, the grid's words), never another entry's of the folder;
    then the replica's forecast (``forecast``: rows of the table), when it has one."""
    words = _overdue_words(store, fid, entries, next_requests)
    if forecast is None:
        return words
    return _with(words, _of(forecast, pd.DataFrame({"store": [store], "fid": [fid]})))


def _overdue_words(store: str, fid: str, entries: pd.DataFrame, next_requests: pd.DataFrame) -> str:
    mine = most_overdue(entries, store, fid)
    if mine.empty:
        return f"{fid}: overdue, but none of its open entries is"
    e = mine.iloc[0].to_dict()
    which = (
        f"its overdue entry {e['entry_id']}"
        if len(mine) == 1
        else f"the longest open of its {len(mine):,} overdue entries, {e['entry_id']}"
    )
    asks = (
        next_request_texts(next_requests[next_requests["entry_id"] == e["entry_id"]])
        if len(next_requests)
        else {}
    )
    where = asks.get(str(e["entry_id"]), NO_SOURCE)
    return (
        f"{fid}: {which} (opened {fmt_time(e['opened_at'])}, {plural(int(e['requests']), 'request')}: the "
        f"first did not fill it); next request {fmt_time(e.get('next_due_at'))}: {where}"
    )


def causes(
    stores: pd.DataFrame,
    replicas: pd.DataFrame,
    entries: pd.DataFrame,
    next_requests: pd.DataFrame,
    as_of: Any,
    forecast: pd.DataFrame | None = None,
) -> list[Cause]:
    """Every cause with its consequences. ``replicas``: store, fid, health, at_risk_count (and
    at_risk_cnset) for what is so, unique_count and really_unique_count for what each store
    believes beside it; ``entries``: the open backfill entries; ``next_requests``: their next
    requests. Content at risk is what is so: a CN a store only believes it alone holds is said to
    be its belief, never counted at risk. ``forecast``: the forecast's rows (store, fid, in_sync_at,
    latest_in_sync_at, sources, blocked_by): each line about replicas that lack CNs ends with
    theirs (for several: the last in sync, at the latest, how many will not catch up and why)."""
    ahead = forecast if forecast is not None else pd.DataFrame(columns=["store", "fid", "in_sync_at"])
    out: list[Cause] = []
    down = stores[stores["status"] == "down"] if "status" in stores.columns else stores.iloc[0:0]
    for row in down.sort_values("store").to_dict("records"):
        out.append(_store_down(str(row["store"]), row, replicas, entries, next_requests, as_of, ahead))
    down_names = set(down["store"])
    pending = replicas[(replicas["health"] == "delete_pending") & ~replicas["store"].isin(down_names)]
    risky = pending[_counts(pending, "at_risk_count") > 0]
    if not risky.empty:
        out.append(
            Cause(
                "critical",
                f"{plural(len(risky), 'replica')} leaving with content only it holds",
                "/replicas?health=delete_pending",
                [
                    _with(_leaving(r), _of(ahead, pd.DataFrame([r])))
                    for r in risky.sort_values(["store", "fid"]).to_dict("records")
                ],
            )
        )
    believing = pending[(_counts(pending, "at_risk_count") == 0) & (_counts(pending, "unique_count") > 0)]
    if not believing.empty:
        out.append(
            Cause(
                "info",
                f"{plural(len(believing), 'replica')} waiting to be deleted: nothing at risk",
                "/replicas?health=delete_pending",
                [_leaving(r) for r in believing.sort_values(["store", "fid"]).to_dict("records")],
            )
        )
    overdue = replicas[(replicas["health"] == "overdue") & ~replicas["store"].isin(down_names)]
    for store, group in overdue.groupby("store", sort=True):
        lines = [
            overdue_line(str(store), str(fid), entries, next_requests, ahead)
            for fid in sorted(group["fid"].astype(str))
        ]
        out.append(
            Cause(
                "warning",
                f"{store}: backfill failing in {plural(len(group), 'replica')} (overdue)",
                f"/backfill?observer={store}&overdue=1",
                lines,
            )
        )
    young = entries[~entries["observer"].isin(down_names)] if not entries.empty else entries
    if len(young):
        oldest = young["opened_at"].min()
        out.append(
            Cause(
                "info",
                f"{plural(len(young), 'open backfill entry', 'open backfill entries')} under way",
                "/backfill",
                [
                    _with(
                        f"normal between replication messages; the oldest opened {fmt_time(oldest)}",
                        _of(ahead, young, "observer"),
                    )
                ],
            )
        )
    out.sort(key=lambda c: TIERS.index(c.tier))
    return out
