"""Backfill entries drawn and listed: the entry timeline, the /backfill grid and the open/overdue trend."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from pfscope.app.figures.delivery import NOT_PROCESSED
from pfscope.app.figures.layout import MAX_MARKS, base_layout, empty_figure
from pfscope.app.figures.palette import (
    BLUE,
    GREEN,
    GREY,
    ORANGE,
    PURPLE,
    VERMILLION,
    YELLOW,
)
from pfscope.app.figures.text import esc, fmt_age, fmt_time, folder_label, health_text, yes_no
from pfscope.spark_jobs.model.rules.health import OVERDUE_REQUESTS, entry_overdue
from pfscope.spark_jobs.model.rules.transit import PROCESSED

#: an observed request whose source had not processed it by the as-of (its kind in the marks)
UNPROCESSED = "unprocessed"


def entry_timeline_marks(entries: pd.DataFrame, requests: pd.DataFrame) -> pd.DataFrame:
    """Tidy marks, one row per thing that happened to an entry: opened, each request (expected or
    observed, with its due time), satisfied or abandoned, and the next due time of an open one.

    ``requests`` with ``reached``/``reached_text``/``usual`` (:func:`figures.requests.with_reached`):
    an observed request its source had not processed by the as-of is of kind
    :data:`UNPROCESSED`, its ``reached`` saying in transit, queued or expired."""
    cols = [
        "entry_id",
        "observer",
        "locality",
        "event",
        "at",
        "kind",
        "attempt",
        "source",
        "cnset",
        "reached",
        "usual",
    ]
    rows: list[dict[str, Any]] = []
    for e in entries.to_dict("records"):
        base = {"entry_id": e["entry_id"], "observer": e["observer"], "locality": e.get("locality")}
        rows.append(
            {
                **base,
                "event": "opened",
                "at": e["opened_at"],
                "kind": None,
                "attempt": 0,
                "source": None,
                "cnset": e.get("cnset_opened"),
            }
        )
        if e.get("state") in ("satisfied", "abandoned") and not pd.isna(e.get("closed_at")):
            rows.append(
                {
                    **base,
                    "event": e["state"],
                    "at": e["closed_at"],
                    "kind": None,
                    "attempt": None,
                    "source": None,
                    "cnset": None,
                }
            )
        elif not pd.isna(e.get("next_due_at")):
            rows.append(
                {
                    **base,
                    "event": "next due",
                    "at": e["next_due_at"],
                    "kind": "expected",
                    "attempt": int(e.get("requests") or 0) + 1,
                    "source": None,
                    "cnset": e.get("cnset_remaining"),
                }
            )
    known = {e["entry_id"]: e for e in entries.to_dict("records")}
    for r in requests.to_dict("records"):
        e = known.get(r["entry_id"])
        if e is None:
            continue
        base = {"entry_id": r["entry_id"], "observer": r["observer"], "locality": e.get("locality")}
        reached = r.get("reached")
        lost = r["kind"] == "observed" and reached in NOT_PROCESSED
        how = r.get("reached_text") if isinstance(r.get("reached_text"), str) else ""
        usual = r.get("usual") if lost and isinstance(r.get("usual"), str) else None
        if lost:
            how = f"not processed by {r['source']} as of the run: {how}"
        elif reached == PROCESSED:
            how = f"{r['source']} {how}"
        rows.append(
            {
                **base,
                "event": "request",
                "at": r["at"],
                "kind": UNPROCESSED if lost else r["kind"],
                "attempt": r["attempt"],
                "source": r["source"],
                "cnset": r["cnset"],
                "reached": how or None,
                "usual": usual or None,
            }
        )
        due = r.get("due_at")
        if due is not None and not pd.isna(due) and pd.Timestamp(due) != pd.Timestamp(r["at"]):
            rows.append(
                {
                    **base,
                    "event": "due",
                    "at": due,
                    "kind": r["kind"],
                    "attempt": r["attempt"],
                    "source": r["source"],
                    "cnset": None,
                }
            )
    out = pd.DataFrame(rows, columns=cols)
    if not out.empty:
        out = (
            out.drop_duplicates(subset=["entry_id", "event", "at", "source"])
            .sort_values(["entry_id", "at"], kind="stable")
            .reset_index(drop=True)
        )
    return out


_MARKERS: dict[tuple[str, str | None], tuple[str, str, str]] = {
    # (event, kind) -> (symbol, colour, legend label)
    ("opened", None): ("circle", BLUE, "opened"),
    ("request", "expected"): ("diamond-open", ORANGE, "request (expected)"),
    ("request", "observed"): ("diamond", VERMILLION, "request (observed)"),
    ("request", UNPROCESSED): ("diamond-x-open", YELLOW, "request not processed by its source"),
    ("due", "expected"): ("line-ns-open", GREY, "due"),
    ("due", "observed"): ("line-ns-open", GREY, "due"),
    ("next due", "expected"): ("triangle-right-open", ORANGE, "next due"),
    ("satisfied", None): ("star", GREEN, "satisfied"),
    ("abandoned", None): ("x", PURPLE, "abandoned"),
}


def fig_entry_timeline(marks: pd.DataFrame, max_marks: int = MAX_MARKS) -> tuple[go.Figure, int]:
    """Each entry a row from opened to closed (solid: local, dotted: remote), with its requests.

    Returns the figure and how many entries were left off to stay under ``max_marks``.
    """
    if marks.empty:
        return empty_figure("No backfill entries for this folder"), 0
    per_entry = marks.groupby("entry_id", sort=False).size()
    keep, total = [], 0
    # newest entries first: those an operator looks at
    order = marks.groupby("entry_id")["at"].min().sort_values(ascending=False).index
    for eid in order:
        n = int(per_entry[eid]) + 2
        if total + n > max_marks:
            break
        keep.append(eid)
        total += n
    left_off = len(order) - len(keep)
    m = marks[marks["entry_id"].isin(keep)].copy()
    m["row"] = m["observer"] + " · " + m["entry_id"].astype(str)
    fig = go.Figure()
    for locality, dash in (("local", "solid"), ("remote", "dot")):
        xs: list[Any] = []
        ys: list[Any] = []
        for row, g in m[m["locality"] == locality].groupby("row", sort=False):
            xs += [g["at"].min(), g["at"].max(), None]
            ys += [row, row, None]
        if xs:
            fig.add_scatter(
                x=xs,
                y=ys,
                mode="lines",
                name=f"{locality} entry",
                line={"color": GREY, "dash": dash},
                hoverinfo="skip",
            )
    for (event, kind), (symbol, colour, label) in _MARKERS.items():
        part = m[(m["event"] == event) & ((m["kind"] == kind) if kind is not None else m["kind"].isna())]
        if part.empty:
            continue
        hover = [
            f"{esc(r.row)}<br>{label}"
            + (f" #{int(r.attempt)}" if pd.notna(r.attempt) and r.attempt else "")
            + (f" → {esc(r.source)}" if isinstance(r.source, str) and r.source else "")
            + (f"<br>{esc(r.cnset)}" if isinstance(r.cnset, str) and r.cnset else "")
            + f"<br>{fmt_time(r.at)}"
            + (f"<br>{esc(r.reached)}" if isinstance(r.reached, str) and r.reached else "")
            + (f"<br>{esc(r.usual)}" if isinstance(r.usual, str) and r.usual else "")
            for r in part.itertuples(index=False)
        ]
        fig.add_scatter(
            x=part["at"],
            y=part["row"],
            mode="markers",
            name=label,
            hovertext=hover,
            hoverinfo="text",
            marker={"symbol": symbol, "color": colour, "size": 11, "line": {"width": 2, "color": colour}},
        )
    legend_seen: set[str] = set()
    for trace in fig.data:
        if trace.name in legend_seen:
            trace.showlegend = False
        legend_seen.add(trace.name)
    fig.update_yaxes(autorange="reversed", title=None)
    fig.update_xaxes(title="time (UTC)")
    return base_layout(fig, height=max(220, 30 * m["row"].nunique() + 120)), left_off


#: an open entry with no next request rows: no candidate is believed to hold any of its CNs
NO_SOURCE = "none: no replica is believed to hold these CNs"


def next_request_texts(next_requests: pd.DataFrame) -> dict[str, str]:
    """Each open entry's next request in words (``next_requests`` rows): the stores it will ask,
    by rank, with the CNs each is asked for, and whether it waits for its store to come back up."""
    out: dict[str, str] = {}
    if next_requests is None or next_requests.empty:
        return out
    for entry_id, group in next_requests.sort_values(["entry_id", "rank"]).groupby("entry_id", sort=False):
        asks = "; ".join(f"{r.source} for {r.cnset}" for r in group.itertuples(index=False))
        waiting = bool(group["waiting"].fillna(False).astype(bool).any())
        out[str(entry_id)] = asks + (" (waits: the store is down)" if waiting else "")
    return out


def with_next_request(entries: pd.DataFrame, next_requests: pd.DataFrame) -> pd.DataFrame:
    """``entries`` with a ``next_request`` column: the text of :func:`next_request_texts` for open
    entries (:data:`NO_SOURCE` when no store holds any of the CNs), empty for closed ones."""
    texts = next_request_texts(next_requests)
    return entries.assign(
        next_request=[
            texts.get(str(e), NO_SOURCE) if s == "open" else ""
            for e, s in zip(entries["entry_id"], entries["state"], strict=True)
        ]
    )


def backfill_rows(
    entries: pd.DataFrame,
    folders: pd.DataFrame,
    as_of: Any,
    replicas: pd.DataFrame | None = None,
    stores: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The /backfill grid's rows, attention first: overdue entries, then the longest open (a real duration).

    Each open entry with its folder path, its replica's health (as last known on a down store),
    overdue (two requests or more), flags as yes/no, times as text and its age at the as-o
    """
    rows = entries.merge(folders[["fid", "path"]], on="fid", how="left")
    rows["path"] = [folder_label(a, b) for a, b in zip(rows["fid"], rows["path"], strict=True)]
    ref = pd.Timestamp(as_of) if as_of is not None else None
    rows["open_for_s"] = [
        int((ref - t).total_seconds()) if ref is not None and not pd.isna(t) else None
        for t in rows["opened_at"]
    ]
    rows["open_for"] = [fmt_age(s) for s in rows["open_for_s"]]
    rows["overdue"] = [yes_no(entry_overdue(int(n or 0))) for n in rows["requests"].fillna(0)]
    down = (
        set(stores.loc[stores["status"] == "down", "store"])
        if stores is not None and not stores.empty
        else set()
    )
    if replicas is not None and not replicas.empty:
        health = replicas[["store", "fid", "health"]].rename(columns={"store": "observer"})
        rows = rows.merge(health, on=["observer", "fid"], how="left")
    else:
        rows["health"] = None
    rows["health"] = [
        health_text(h, o in down) if isinstance(h, str) else ""
        for h, o in zip(rows["health"], rows["observer"], strict=True)
    ]
    rows["new_replica"] = rows["new_replica"].map(yes_no)
    for col in ("opened_at", "next_due_at"):
        rows[col] = rows[col].map(fmt_time)
    rows = rows.assign(_o=rows["overdue"] == "yes", _s=rows["open_for_s"].fillna(-1))
    rows = rows.sort_values(["_o", "_s", "fid"], ascending=[False, False, True], kind="stable")
    return rows.drop(columns=["_o", "_s"]).reset_index(drop=True)


# -- the backfill trend ----------------------------------------------------------------------

#: the most points per store and series of the backfill trend (exact change times below it)
TREND_POINTS = 400


def _utc_ns(values: Any) -> pd.Series:
    """Times as ``datetime64[ns, UTC]`` whatever unit they were read in (NaT kept, index reset)."""
    if isinstance(values, pd.Series):
        values = values.reset_index(drop=True)
    return pd.to_datetime(pd.Series(values), utc=True).astype("datetime64[ns, UTC]")


def _ns(values: Any) -> np.ndarray:
    """Times as int64 nanoseconds since the epoch (NaT: :data:`_NAT`)."""
    return pd.DatetimeIndex(_utc_ns(values)).asi8


_NAT = np.iinfo(np.int64).min


def overdue_since(entries: pd.DataFrame, attempts: pd.DataFrame) -> pd.Series:
    """When each entry became overdue, aligned with ``entries`` (NaT: fewer than two requests).

    Overdue is the replica health's rule: an entry's first request did not fill it, i.e. its
    second request happened. ``entries``: entry_id, requests, last_request_at; ``attempts``:
    entry_id, attempt, at (rows of ``backfill_requests`` and ``backfill_candidates``). An attempt
    that ranked no candidate leaves no row: then the earliest later attempt, or the entry's last
    request, is when it was overdue at the latest (exact whenever the entry had exactly two
    requests or its second request left a row).
    """
    later = attempts[attempts["attempt"].fillna(0) >= OVERDUE_REQUESTS]
    first_later = pd.Series(_ns(later["at"]), index=later["entry_id"].to_numpy()).groupby(level=0).min()
    known = (
        entries["entry_id"]
        .map(first_later.astype("Int64"))
        .astype("Int64")
        .fillna(_NAT)
        .to_numpy(dtype="int64")
    )
    last = _ns(entries["last_request_at"])
    since = np.where(known == _NAT, last, np.where(last == _NAT, known, np.minimum(known, last)))
    since[entries["requests"].fillna(0).to_numpy(dtype="int64") < 2] = _NAT
    return pd.Series(pd.DatetimeIndex(since.view("datetime64[ns]"), tz="UTC"), index=entries.index)


def backfill_trend(
    entries: pd.DataFrame, stores: Iterable[str] = (), end: Any = None, max_points: int | None = None
) -> pd.DataFrame:
    """Open and overdue backfill entries per store (as observer) over the run's time span.

    ``entries``: observer, opened_at, closed_at (NaT: still open), overdue_at (NaT: never overdue,
    see :func:`overdue_since`). An entry counts as open from ``opened_at`` until ``closed_at`` and
    as overdue from ``overdue_at`` until ``closed_at`` (both ends as of the event: a time's count is
    the state just after it). The counts are taken at every time one of them changes, from the
    first entry opened to ``end`` (the as-of time); when that is more than ``max_points`` times
    (default: :data:`TREND_POINTS`, fewer with many stores so the figure stays under
    :data:`MAX_MARKS`), at ``max_points`` evenly spaced times instead. Every store of ``stores``
    has its rows, zeros included. Returns store, at, open, overdue.
    """
    cols = ["store", "at", "open", "overdue"]
    if entries.empty:
        return pd.DataFrame({c: pd.Series(dtype="object") for c in cols})
    opened, closed, overdue = (_ns(entries[c]) for c in ("opened_at", "closed_at", "overdue_at"))
    codes, uniques = pd.factorize(entries["observer"].astype(str))
    names = sorted(set(stores) | set(uniques))
    if max_points is None:
        max_points = max(2, min(TREND_POINTS, MAX_MARKS // (2 * max(1, len(names)))))
    start = int(opened.min())
    stop = (
        int(_ns([end])[0])
        if end is not None and not pd.isna(end)
        else int(max(opened.max(), closed.max(), overdue.max()))
    )
    stop = max(stop, start)
    times = np.concatenate([opened, closed, overdue, [start, stop]])
    times = np.unique(times[(times >= start) & (times <= stop)])
    if len(times) > max_points:
        times = pd.DatetimeIndex(
            pd.date_range(pd.Timestamp(start, tz="UTC"), pd.Timestamp(stop, tz="UTC"), periods=max_points)
        ).asi8
    when = pd.DatetimeIndex(times.view("datetime64[ns]"), tz="UTC")

    # overdue until closed; an inconsistent row (closed before overdue) never counts as overdue
    counts_overdue = (overdue != _NAT) & ((closed == _NAT) | (closed >= overdue))
    index = {name: k for k, name in enumerate(uniques)}
    frames = []
    for store in names:
        mine = codes == index[store] if store in index else np.zeros(len(codes), dtype=bool)
        o = np.sort(opened[mine])
        c = closed[mine]
        c = np.sort(c[c != _NAT])
        d_mask = mine & counts_overdue
        d = np.sort(overdue[d_mask])
        dc = closed[d_mask]
        dc = np.sort(dc[dc != _NAT])
        frames.append(
            pd.DataFrame(
                {
                    "store": store,
                    "at": when,
                    "open": o.searchsorted(times, "right") - c.searchsorted(times, "right"),
                    "overdue": d.searchsorted(times, "right") - dc.searchsorted(times, "right"),
                }
            )
        )
    out = pd.concat(frames, ignore_index=True)
    out["open"] = out["open"].astype("int64")
    out["overdue"] = out["overdue"].astype("int64")
    return out[cols]
