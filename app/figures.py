"""Pure figure and frame builders: published tables in, tidy frames and plotly figures out.

No I/O and no Dash here, so the dashboard and the standalone HTML reports draw the same figures
from the same frames, and unit tests run them on small frames. Colours are Okabe-Ito
(colour-blind safe); every colour has a text label beside it, so nothing is told by colour
alone. No figure carries more than :data:`MAX_MARKS` marks: callers get a ``truncated`` count.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from spark_jobs.model.cnset import CNSet, union_all
from spark_jobs.model.rules.deletion import unique_cns
from spark_jobs.model.rules.health import OVERDUE_REQUESTS, entry_overdue, replica_health

#: the most marks (points, bars, cells) one figure sends to a browser
MAX_MARKS = 10_000

HEALTH_ORDER: tuple[str, ...] = ("in_sync", "backfilling", "overdue", "delete_pending", "deleted")
HEALTH_COLOURS: dict[str, str] = {
    "in_sync": "#009e73",
    "backfilling": "#56b4e9",
    "overdue": "#e69f00",
    "delete_pending": "#cc79a7",
    "deleted": "#999999",
}
#: who-knows-what cell states (see :func:`who_knows_what`)
CELL_STATES: dict[str, str] = {
    "current": "knows the subject's real state",
    "not_told": "the subject holds CNs the observer has not heard of yet, and the observer lacks some of them",
    "told_later": "the subject holds CNs the observer has not heard it holds, all of which the observer holds "
                  "itself: nothing is missing (normal between status messages)",
    "lacks": "the observer is current, and the subject really lacks CNs other replicas hold",
    "owned": "the observer's own row (owned set, last sent CN)",
    "unknown": "the observer never heard from this subject",
}
#: a cell state's name on screen, and its glossary anchor
CELL_LABELS: dict[str, tuple[str, str | None]] = {
    "current": ("current", "current"), "not_told": ("not told yet", "not-told"),
    "told_later": ("not told, holds them", "told-later"),
    "lacks": ("really lacks", "really-lacks"), "owned": ("owned", "owned"), "unknown": ("no row", None),
}
CELL_COLOURS: dict[str, str] = {
    "current": "#009e73",
    "not_told": "#e69f00",
    "told_later": "#56b4e9",
    "lacks": "#d55e00",
    "owned": "#0072b2",
    "unknown": "#999999",
}
#: the mark of a cell whose CN set rests on knowledge ingest derived (``derived`` column)
DERIVED_MARK = "≥"
DERIVED_NOTE = "≥ lower bound (derived from Exchange logs)"
DERIVED_HELP = ("derived: the CN set was inferred from Exchange's event logs (which print CN ranges, not "
                "CN sets), so the store holds at least these CNs")
BLUE, ORANGE, SKY, GREEN, VERMILLION, PURPLE, GREY = (
    "#0072b2", "#e69f00", "#56b4e9", "#009e73", "#d55e00", "#cc79a7", "#999999",
)
#: cividis is readable with every common colour vision deficiency
LAG_SCALE = "Cividis"
#: the overview heatmap's absolute scale: this many CNs behind or more is the darkest colour
LAG_ALARM = 1000
#: pale to vermillion, monotonic in lightness (readable with colour vision deficiencies): a
#: small lag stays pale whatever the largest lag of the run is
LAG_ABSOLUTE_SCALE: list[list[Any]] = [
    [0.0, "#eef3f7"], [0.02, "#fbeed0"], [0.1, "#f5c96b"], [0.4, "#e69f00"], [1.0, "#b34700"],
]
HIERARCHY_FID = "1-1"
HIERARCHY_NAME = "public folder hierarchy"


def _layout(fig: go.Figure, title: str | None = None, height: int | None = None) -> go.Figure:
    fig.update_layout(
        title=title, template="plotly_white", height=height,
        margin={"l": 10, "r": 10, "t": 40 if title else 10, "b": 10},
        font={"family": "Liberation Sans, Arial, sans-serif", "size": 13},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0},
    )
    return fig


def empty_figure(message: str) -> go.Figure:
    """A figure that says why it is empty instead of drawing blank axes."""
    fig = go.Figure()
    fig.add_annotation(text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return _layout(fig, height=160)


def fmt_time(value: Any) -> str:
    """A UTC time as ``2026-11-02 08:15:00Z``; empty for a missing one."""
    if value is None or (isinstance(value, float) and pd.isna(value)) or value is pd.NaT:
        return ""
    ts = pd.Timestamp(value)
    if pd.isna(ts):
        return ""
    if ts.tzinfo is None:
        ts = ts.tz_localize("UTC")
    return ts.tz_convert("UTC").strftime("%Y-%m-%d %H:%M:%SZ")


def esc(value: Any) -> str:
    """Text from data for plotly's hover and labels, which read tags and entities: ``<b>`` stays text."""
    import html

    return html.escape("" if value is None else str(value), quote=False)


def plural(n: Any, singular: str, many: str | None = None) -> str:
    """``1 CN``, ``2 CNs``, ``1,234 duplicates``: a count with its noun agreeing."""
    count = int(n or 0) if not (isinstance(n, float) and pd.isna(n)) else 0
    word = singular if count == 1 else (many or singular + "s")
    return f"{count:,} {word}"


def yes_no(value: Any) -> str:
    """A flag as an operator reads it; empty for a missing one (never ``false``/``NaN``)."""
    if value is None or (pd.api.types.is_scalar(value) and pd.isna(value)):
        return ""
    return "yes" if bool(value) else "no"


def folder_label(fid: Any, path: Any) -> str:
    """A folder's path, or what the folder is when it has none (the hierarchy ``1-1``)."""
    if isinstance(path, str) and path:
        return path
    return HIERARCHY_NAME if str(fid) == HIERARCHY_FID else ""


def natural_key(value: Any) -> tuple[Any, ...]:
    """Sort key that reads numbers as numbers: ``PFS1/1-2/2`` before ``PFS1/1-2/10``."""
    import re

    parts = re.split(r"(\d+)", "" if value is None else str(value))
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts if p != "")


def fmt_age(seconds: float | None) -> str:
    """A duration the way an operator reads it: ``3 d 4 h``, ``2 h 5 min``, ``40 s``."""
    if seconds is None or pd.isna(seconds):
        return ""
    s = int(abs(seconds))
    sign = "-" if seconds < 0 else ""
    d, rem = divmod(s, 86_400)
    h, rem = divmod(rem, 3600)
    m, sec = divmod(rem, 60)
    if d:
        return f"{sign}{d} d {h} h"
    if h:
        return f"{sign}{h} h {m} min"
    if m:
        return f"{sign}{m} min"
    return f"{sign}{sec} s"


# -- the model's words ------------------------------------------------------------------------

#: The glossary (``/glossary``): anchor -> (term, meaning), in reading order. Meanings follow
#: docs/replication-model; every "?" link of the dashboard points at one of these anchors.
GLOSSARY: dict[str, tuple[str, str]] = {
    "as-of": ("as of", "The time every table describes: by default the last event of the input. Requests due "
                       "at or before it have happened; events after it are not applied."),
    "store": ("store", "A public folder database (PFS1). It lives on a server, in a site, and runs an Exchange "
                       "version (5.5, 2000, 2003, 2007, 2010)."),
    "down": ("down", "A store is down while its last store status event says down. Its replicas keep the health "
                     "they last had: the model does not pause time-outs for a down store, and nothing it holds "
                     "can be verified until it is back."),
    "hierarchy": ("hierarchy (1-1)", "The folder 1-1 is the public folder hierarchy itself; every store is a "
                                     "replica of it. It has no path."),
    "replica-list": ("replica list", "The stores that should hold a folder; it changes over time."),
    "cn": ("CN (change number)", "Each change made on store S to a folder is numbered by S: written S:n. CNs of "
                                 "one origin only increase."),
    "cn-set": ("CN set", "A set of CNs, per origin as ranges: PFS1:1-11,17;PFS2:1-20. ∅ is the empty set."),
    "owned": ("owned", "The row of a store about itself in its replication state table: every CN it holds. "
                       "The CN it last assigned is its last sent CN."),
    "believed": ("believed", "The row of an observer about another store: the CN set that store's last "
                             "message (by send time) about the folder carried."),
    "state-table": ("replication state table", "Per observer and folder, one row per store: its own owned set "
                                               "and what it believes each other store holds."),
    "lag": ("knowledge lag", "The CNs a subject really owns that the observer's believed row lacks, both as of "
                             "the same time."),
    "not-told": ("not told yet", "A who-knows-what cell whose observer lags: the subject holds CNs the observer "
                                 "has not heard of yet (knowledge lag), and the observer itself lacks some of "
                                 "them: it does not know this subject could backfill it (amber)."),
    "told-later": ("not told, holds them", "A who-knows-what cell whose observer lags (knowledge lag), but holds "
                                           "every CN it was not told of itself: nothing is missing. The usual "
                                           "state between status messages, above all in the hierarchy 1-1, "
                                           "where a store tells its partners what it received only in its next "
                                           "message (shown healthy)."),
    "really-lacks": ("really lacks", "A who-knows-what cell whose observer is current, while the subject really "
                                     "lacks CNs some other replica holds."),
    "current": ("current", "The observer's believed row equals the subject's owned set, and the subject lacks "
                           "nothing another replica holds."),
    "derived": ("derived (≥ lower bound)", "The CN set was inferred from Exchange's event logs, which print CN "
                                           "ranges, not CN sets: the store holds at least these CNs, so figures "
                                           "built on it are lower bounds."),
    "missing": ("missing CNs", "CNs other stores on the replica list are believed to hold that the store does "
                               "not own: what its backfill entries are for."),
    "backfill-entry": ("backfill entry", "Opened by a store for missing CNs no open entry covers. It keeps its "
                                         "remaining CNs; it is satisfied when none remain, and abandoned when the "
                                         "store leaves the replica list."),
    "locality": ("local / remote", "An entry is local when every remaining CN is believed held by an up store "
                                   "on the list in the same site; otherwise remote (longer time-outs)."),
    "new-replica": ("new replica", "An entry opened while the store owned nothing of the folder: its first "
                                   "request falls due after 15 minutes (local)."),
    "next-due": ("next due", "When the entry's next backfill request falls due (time-outs: 6 h / 12 h, then "
                             "12 h / 24 h, then 24 h / 48 h, local / remote). Requests due at or before the as-of "
                             "have happened, so an open entry's next due is always after the as-of."),
    "overdue": ("overdue", "A replica with an open entry that has had two requests or more: its first request "
                           "did not fill it. It says the backfill is failing, not that a request is late (the "
                           "next due is after the as-of)."),
    "backfilling": ("backfilling", "A replica with open entries, none of them retried yet."),
    "in-sync": ("in sync", "A replica with no open backfill entry. On a down store, as last known."),
    "delete-pending": ("delete pending", "A replica whose store left the replica list while it still holds "
                                         "unique CNs; it is deleted once none is left."),
    "deleted": ("deleted", "A replica off the list with no unique CN left."),
    "content-at-risk": ("content at risk (unique CNs)", "CNs only this replica holds (its owned set minus what "
                                                        "the stores still on the list are believed to hold). On a "
                                                        "delete-pending replica they are lost if it goes."),
    "request-kind": ("expected / observed request", "Expected: due by the model. Observed: a backfill request "
                                                    "the store really sent (in the log) that overlaps an open "
                                                    "entry."),
    "candidate": ("candidate", "A store on the replica list believed to hold some of the remaining CNs. A store "
                               "on the list holding none of them is not a candidate."),
    "unavailable": ("unavailable", "Marked by the requester for this folder when a backfill request it sent "
                                   "got no response before the entry's next request fell due; cleared when it "
                                   "next processes a message from that store about the folder. Sorted last, "
                                   "like down."),
    "preferred": ("preferred backfill source", "A store the requester asks first (Exchange 2003 and later)."),
    "cost": ("transport cost", "Cost from the requester's site to the candidate's site; same site is 0; no "
                               "affinity (no cost given) sorts after every cost."),
    "search-groups": ("search groups 1-6 (Exchange 2000)", "1: 2000+ stores in the site; 2: 2000+ in other "
                                                           "sites with a cost; 3: 2000+ with no cost; 4-6: the "
                                                           "same for 5.5 stores. The first store holding all "
                                                           "remaining CNs is asked."),
    "responder-groups": ("responder groups 1-6, oldest", "Which rule put a store on a status request's "
                                                         "responder list: 1 same site, backfilled from before "
                                                         "(longest ago first); 2 other site with a cost, heard "
                                                         "from; 3 same site, the rest; 4 other site with a "
                                                         "cost, the rest; 5 other site, no cost, known transit "
                                                         "time; 6 other sites, the rest; oldest: the replica "
                                                         "believed to hold the fewest CNs (oldest copy)."),
    "model-names": ("model names it", "The store is on the responder list the model says the requester should "
                                      "name (up to three, plus the oldest copy)."),
    "should-respond": ("should respond", "The requester's CN set is a strict subset of what the responder "
                                         "owned when it processed the request: it has newer content to send. "
                                         "A store can be named and still have nothing to send."),
    "next-status": ("next status", "When the replica's status message is due (the first 00:15 or 12:15 UTC "
                                   "24 h after its last change)."),
    "rejected-line": ("rejected line", "An input line the run could not use; kept with its file, line number, "
                                       "reason and verbatim text."),
    "duplicate": ("duplicate", "An input line that repeats an accepted line exactly; counted, not applied twice."),
}


def glossary_href(term: str) -> str:
    """The glossary anchor of one of the model's words (KeyError for a word it does not define)."""
    GLOSSARY[term]
    return f"/glossary#{term}"


#: a replica's health -> its glossary anchor
HEALTH_TERMS: dict[str, str] = {"in_sync": "in-sync", "backfilling": "backfilling", "overdue": "overdue",
                                "delete_pending": "delete-pending", "deleted": "deleted"}


def health_text(health: Any, store_down: bool = False) -> str:
    """A replica's health in words; on a down store, marked as the last known state."""
    h = str(health or "").replace("_", " ")
    if store_down and str(health) not in ("deleted", "delete_pending"):
        return f"{h} (store down)"
    return h


# -- overview -------------------------------------------------------------------------------


def stores_by_site(stores: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Stores grouped by site (sites and stores by name), for the overview's store cards."""
    ordered = stores.sort_values(["site", "store"], kind="stable")
    return {str(site): group.reset_index(drop=True) for site, group in ordered.groupby("site", sort=True)}


def health_by_store(replicas: pd.DataFrame, stores: pd.DataFrame | None = None) -> pd.DataFrame:
    """Tidy counts: one row per (store, health) with ``replicas``; every store and health present."""
    names = sorted(set(replicas["store"]) | (set(stores["store"]) if stores is not None else set()))
    counts = replicas.groupby(["store", "health"]).size()
    rows = [
        {"store": s, "health": h, "replicas": int(counts.get((s, h), 0))}
        for s in names
        for h in HEALTH_ORDER
    ]
    return pd.DataFrame(rows, columns=["store", "health", "replicas"])


def fig_health_by_store(counts: pd.DataFrame) -> go.Figure:
    """Per store, its replicas stacked by health (horizontal bars, one trace per health)."""
    if counts.empty:
        return empty_figure("No replicas in this run")
    stores = sorted(counts["store"].unique(), reverse=True)
    fig = go.Figure()
    for health in HEALTH_ORDER:
        part = counts[counts["health"] == health].set_index("store").reindex(stores)
        fig.add_bar(
            y=stores, x=part["replicas"].fillna(0).tolist(), name=health.replace("_", " "),
            orientation="h", marker_color=HEALTH_COLOURS[health],
            hovertemplate="%{y}: %{x} " + health.replace("_", " ") + "<extra></extra>",
        )
    fig.update_layout(barmode="stack", xaxis_title="replicas")
    fig = _layout(fig, height=max(220, 28 * len(stores) + 80))
    fig.update_layout(legend_traceorder="normal")
    return fig


def worst_folders(
    replicas: pd.DataFrame, entries: pd.DataFrame, as_of: Any = None, limit: int = 15
) -> pd.DataFrame:
    """The folders that need attention first: content at risk, most missing CNs, overdue, oldest entry.

    ``replicas``: store, fid, path, health, missing_count, unique_count; ``entries``: the open
    backfill entries (observer, fid, opened_at).
    """
    cols = ["fid", "path", "missing_count", "at_risk_count", "overdue", "open_entries", "oldest_open_at",
            "oldest_open_age_s"]
    if replicas.empty:
        return pd.DataFrame(columns=cols)
    r = replicas.copy()
    r["at_risk"] = at_risk_cns(r)
    r["is_overdue"] = (r["health"] == "overdue").astype("int64")
    per = r.groupby("fid").agg(
        path=("path", "first"), missing_count=("missing_count", "sum"),
        at_risk_count=("at_risk", "sum"), overdue=("is_overdue", "sum"),
    )
    if not entries.empty:
        e = entries.groupby("fid").agg(open_entries=("opened_at", "size"), oldest_open_at=("opened_at", "min"))
        per = per.join(e, how="left")
    else:
        per["open_entries"] = 0
        per["oldest_open_at"] = pd.Series(pd.NaT, index=per.index, dtype="datetime64[ns, UTC]")
    per["open_entries"] = per["open_entries"].fillna(0).astype("int64")
    ref = pd.Timestamp(as_of) if as_of is not None else None
    per["oldest_open_age_s"] = (
        (ref - per["oldest_open_at"]).dt.total_seconds() if ref is not None else float("nan")
    )
    per = per[(per["missing_count"] > 0) | (per["at_risk_count"] > 0) | (per["overdue"] > 0) | (per["open_entries"] > 0)]
    per = per.sort_values(
        ["at_risk_count", "overdue", "missing_count", "oldest_open_at"],
        ascending=[False, False, False, True], na_position="last",
    )
    out = per.reset_index()[cols].head(limit)
    for c in ("missing_count", "at_risk_count", "overdue"):
        out[c] = out[c].astype("int64")
    return out.reset_index(drop=True)


def lag_heatmap_frame(lag_pairs: pd.DataFrame, stores: Sequence[str]) -> pd.DataFrame:
    """Observer (rows) by subject (columns) total knowledge lag, stores in the given order."""
    names = list(stores)
    if lag_pairs.empty:
        return pd.DataFrame(0, index=pd.Index(names, name="observer"), columns=pd.Index(names, name="subject"))
    pivot = lag_pairs.pivot_table(index="observer", columns="subject", values="lag_count", aggfunc="sum")
    return pivot.reindex(index=names, columns=names).rename_axis(index="observer", columns="subject")


def fig_lag_heatmap(matrix: pd.DataFrame, max_marks: int = MAX_MARKS) -> go.Figure:
    """The store × store knowledge-lag heatmap on an absolute scale (see :data:`LAG_ALARM`): a
    healthy organisation's small lag stays pale. The diagonal says "self"; a blank cell: no
    shared folder. Each cell carries its (observer, subject) as customdata, for clicks.

    More than ``sqrt(max_marks)`` stores: only the stores with the most lag (as observer or
    subject) are drawn, and the title says so.
    """
    if matrix.empty:
        return empty_figure("No stores")
    side = int(max_marks ** 0.5)
    title = None
    if len(matrix.index) > side:
        totals = matrix.fillna(0).sum(axis=1) + matrix.fillna(0).sum(axis=0).reindex(matrix.index).fillna(0)
        keep = sorted(totals.sort_values(ascending=False, kind="stable").index[:side])
        title = f"The {side} stores with the most lag, of {len(matrix.index)}"
        matrix = matrix.loc[keep, keep]
    z = matrix.to_numpy(dtype="float64")
    rows, cols = list(matrix.index), list(matrix.columns)
    text = [["self" if o == s else "" if pd.isna(v) else f"{int(v):,}" for s, v in zip(cols, row, strict=True)]
            for o, row in zip(rows, z, strict=True)]
    custom = [[[o, s] for s in cols] for o in rows]
    ticks = [0, LAG_ALARM // 10, LAG_ALARM // 4, LAG_ALARM // 2, LAG_ALARM]
    fig = go.Figure(go.Heatmap(
        z=z, x=cols, y=rows, text=text, texttemplate="%{text}", customdata=custom,
        colorscale=LAG_ABSOLUTE_SCALE, zmin=0, zmax=LAG_ALARM, hoverongaps=False,
        colorbar={"title": {"text": "CNs behind"}, "tickvals": ticks,
                  "ticktext": [f"{t:,}" for t in ticks[:-1]] + [f"{LAG_ALARM:,}+"]},
        hovertemplate="%{y} believes %{x} is %{z:,} CNs behind its real state<extra></extra>",
    ))
    # the diagonal: a store about itself has no lag; drawn grey with "self", not left blank
    diagonal = [[1.0 if o == s else None for s in cols] for o in rows]
    fig.add_trace(go.Heatmap(z=diagonal, x=cols, y=rows, colorscale=[[0, "#d0d7de"], [1, "#d0d7de"]],
                             showscale=False, hoverinfo="skip", text=text, texttemplate="%{text}",
                             hoverongaps=False, name="self"))
    fig.update_xaxes(title="subject (the store believed about)", side="top")
    fig.update_yaxes(title="observer", autorange="reversed")
    return _layout(fig, title=title, height=max(300, 34 * len(matrix.index) + 120))


def lag_click_target(point: dict[str, Any] | None) -> str | None:
    """Where a click on the lag heatmap goes: the observer's store page, at its partners behind."""
    if not point:
        return None
    custom = point.get("customdata")
    observer = custom[0] if isinstance(custom, (list, tuple)) and custom else point.get("y")
    if not observer:
        return None
    from urllib.parse import quote

    return f"/store/{quote(str(observer), safe='')}#pf-behind-section"


@dataclass(frozen=True)
class Headline:
    """One count of the overview's first screen, and the view that lists what it counts."""

    key: str
    count: int
    label: str
    href: str
    term: str | None = None

    @property
    def alarm(self) -> bool:
        return self.count > 0


def at_risk_cns(replicas: pd.DataFrame) -> pd.Series:
    """Per replica row, the CNs at risk: a delete-pending replica's unique CNs (0 for any other)."""
    return replicas["unique_count"].fillna(0).where(replicas["health"] == "delete_pending", 0)


def headline_counts(
    stores: pd.DataFrame, replicas: pd.DataFrame, entries: pd.DataFrame, rejected: Any
) -> list[Headline]:
    """The overview's headline: what is wrong, worst first, each a link to the filtered view.

    ``replicas``: store, health, unique_count; ``entries``: the open backfill entries.
    """
    down = int((stores["status"] == "down").sum()) if "status" in stores.columns else 0
    overdue = int((replicas["health"] == "overdue").sum()) if not replicas.empty else 0
    at_risk = int(at_risk_cns(replicas).sum()) if not replicas.empty else 0
    rejected_n = int(rejected or 0)
    return [
        Headline("stores-down", down, "store down" if down == 1 else "stores down", "/?status=down#pf-stores",
                 "down"),
        Headline("overdue", overdue, "overdue replica" if overdue == 1 else "overdue replicas",
                 "/backfill?overdue=1", "overdue"),
        Headline("at-risk", at_risk, f"CN{'' if at_risk == 1 else 's'} of content at risk",
                 "/replicas?health=delete_pending", "content-at-risk"),
        Headline("open-entries", len(entries), "open backfill entry" if len(entries) == 1 else "open backfill entries",
                 "/backfill", "backfill-entry"),
        Headline("rejected", rejected_n, "rejected input line" if rejected_n == 1 else "rejected input lines",
                 "/rejects", "rejected-line"),
    ]


def run_age_s(summary: dict[str, Any], now: pd.Timestamp) -> float | None:
    """Seconds since the run finished (or since its as-of time when no finish time was recorded)."""
    ref = summary.get("finished_at") or summary.get("as_of")
    if ref is None or pd.isna(ref):
        return None
    return float((pd.Timestamp(now) - pd.Timestamp(ref)).total_seconds())


# -- who knows what -------------------------------------------------------------------------


def history_times(history: pd.DataFrame) -> list[pd.Timestamp]:
    """The distinct times at which any row of the folder's state tables changed, in order."""
    if history.empty:
        return []
    return sorted(pd.unique(history["at"]))


def cells_at(history: pd.DataFrame, at: Any) -> pd.DataFrame:
    """Each (observer, subject) row of the folder's state tables as it stood at ``at``.

    From ``state_history``: the last change at or before ``at`` (ties: the last row). ``heard_at``
    is when that row last changed; ``derived`` whether its CN set then rested on derived knowledge.
    """
    cols = ["observer", "subject", "cnset", "cnset_count", "heard_at", "derived"]
    if history.empty:
        return pd.DataFrame(columns=cols)
    t = pd.Timestamp(at)
    past = history[history["at"] <= t]
    if past.empty:
        return pd.DataFrame(columns=cols)
    last = _with_derived(past.groupby(["observer", "subject"], sort=False).tail(1))
    out = last.rename(columns={"at": "heard_at"})[cols].reset_index(drop=True)
    return out


def _with_derived(frame: pd.DataFrame) -> pd.DataFrame:
    """``derived`` as plain booleans (a run published before the column existed: all False)."""
    flags = frame["derived"].fillna(False).astype(bool) if "derived" in frame.columns else False
    return frame.assign(derived=flags)


def cells_now(state_table: pd.DataFrame) -> pd.DataFrame:
    """The state tables as of the run's as-of time; ``heard_at`` is ``last_message_at``."""
    cols = ["observer", "subject", "cnset", "cnset_count", "heard_at", "last_sent_cn", "derived"]
    if state_table.empty:
        return pd.DataFrame(columns=cols)
    out = _with_derived(state_table).rename(columns={"last_message_at": "heard_at"})
    return out[cols].reset_index(drop=True)


def who_knows_what(cells: pd.DataFrame, observers: Iterable[str] | None = None) -> pd.DataFrame:
    """Seed 004's matrix as a tidy frame: one row per (observer, subject) cell.

    Each cell gets the subject's real state (its own owned row at the same time), the knowledge
    ``lag`` (owned(subject) minus believed), what the subject really ``lacks`` (CNs some replica
    of the matrix owns that the subject does not) and a ``state``: ``owned`` on the diagonal,
    ``not_told`` when the observer lags and lacks some of those CNs itself, ``told_later`` when it
    lags but holds them all (harmless: nothing missing), ``lacks`` when the observer is current but the subject
    really lacks CNs, ``current`` otherwise, ``unknown`` when the observer has no row. ``derived``:
    the cell's CN set is a lower bound that ingest derived (the figures built on it are too).
    """
    cols = ["observer", "subject", "is_self", "cnset", "cnset_count", "heard_at", "last_sent_cn",
            "real_cnset", "lag_cnset", "lag_count", "lacks_cnset", "lacks_count", "state", "derived"]
    if cells.empty:
        return pd.DataFrame(columns=cols)
    keys = list(zip(cells["observer"].tolist(), cells["subject"].tolist(), strict=True))
    parsed = {k: CNSet.parse(t or "") for k, t in zip(keys, cells["cnset"].tolist(), strict=True)}
    owned = {o: s for (o, subj), s in parsed.items() if o == subj}
    everything = union_all(owned.values())
    names = sorted(set(cells["observer"]) | set(cells["subject"]) | set(observers or ()))
    obs_names = sorted(set(observers)) if observers is not None else sorted(set(cells["observer"]))
    heard = cells["heard_at"].astype(object).where(cells["heard_at"].notna(), None).tolist()
    last_sent_col = cells["last_sent_cn"].tolist() if "last_sent_cn" in cells.columns else [None] * len(keys)
    derived_col = _with_derived(cells)["derived"].tolist()
    by_key = {k: {"heard_at": h, "last_sent_cn": ls, "derived": d}
              for k, h, ls, d in zip(keys, heard, last_sent_col, derived_col, strict=True)}
    rows = []
    for o in obs_names:
        for s in names:
            row = by_key.get((o, s))
            real = owned.get(s)
            lacks = everything.difference(real) if real is not None else CNSet.empty()
            if row is None:
                rows.append({"observer": o, "subject": s, "is_self": o == s, "cnset": None, "cnset_count": None,
                             "heard_at": pd.NaT, "last_sent_cn": None,
                             "real_cnset": real.text() if real is not None else None,
                             "lag_cnset": None, "lag_count": None,
                             "lacks_cnset": lacks.text(), "lacks_count": lacks.count(), "state": "unknown",
                             "derived": False})
                continue
            believed = parsed[(o, s)]
            lag = real.difference(believed) if real is not None else CNSet.empty()
            if o == s:
                state = "owned"
                lag = CNSet.empty()
            elif lag:
                mine = owned.get(o, CNSet.empty())
                state = "not_told" if lag.difference(mine) else "told_later"
            elif lacks:
                state = "lacks"
            else:
                state = "current"
            last_sent = row.get("last_sent_cn")
            if o == s and (last_sent is None or pd.isna(last_sent)):
                last_sent = believed.max_cn(o)
            rows.append({
                "observer": o, "subject": s, "is_self": o == s, "cnset": believed.text(),
                "cnset_count": believed.count(), "heard_at": row.get("heard_at"),
                "last_sent_cn": None if last_sent is None or pd.isna(last_sent) else int(last_sent),
                "real_cnset": real.text() if real is not None else None,
                "lag_cnset": lag.text(), "lag_count": lag.count(),
                "lacks_cnset": lacks.text(), "lacks_count": lacks.count(), "state": state,
                "derived": bool(row["derived"]),
            })
    out = pd.DataFrame(rows, columns=cols)
    for col in ("cnset_count", "last_sent_cn", "lag_count", "lacks_count"):
        out[col] = out[col].astype("Int64")
    return out


def fig_who_knows_what(matrix: pd.DataFrame) -> go.Figure:
    """The matrix as a heatmap (columns: observers, rows: subjects), coloured by knowledge lag."""
    if matrix.empty:
        return empty_figure("No state table rows for this folder")
    observers = sorted(matrix["observer"].unique())
    subjects = sorted(matrix["subject"].unique())
    idx = matrix.set_index(["subject", "observer"])
    z, text = [], []
    for s in subjects:
        zr, tr = [], []
        for o in observers:
            if (s, o) not in idx.index:
                zr.append(None)
                tr.append("")
                continue
            c = idx.loc[(s, o)]
            zr.append(None if c["state"] in ("owned", "unknown") else float(c["lag_count"] or 0))
            label = esc(c["cnset"]) or "∅"
            if c.get("derived"):
                label = f"{DERIVED_MARK} {label}"
            if c["state"] == "owned":
                label = f"owned: {label}<br>last sent {esc(s)}:{c['last_sent_cn']}"
            elif c["state"] in ("not_told", "told_later"):
                words = "not told yet" if c["state"] == "not_told" else "not told, holds them"
                label = f"{label}<br>{words}: {esc(c['lag_cnset'])}"
            elif c["state"] == "lacks":
                label = f"{label}<br>really lacks: {esc(c['lacks_cnset'])}"
            if c.get("derived"):
                label = f"{label}<br>{DERIVED_NOTE}"
            tr.append(label)
        z.append(zr)
        text.append(tr)
    fig = go.Figure(go.Heatmap(
        z=z, x=observers, y=subjects, text=text, texttemplate="%{text}", colorscale=LAG_SCALE, zmin=0,
        colorbar={"title": {"text": "CNs not told"}}, hoverongaps=False,
        hovertemplate="observer %{x}, subject %{y}<br>%{text}<extra></extra>",
    ))
    fig.update_xaxes(title="observer (whose state table)", side="top")
    fig.update_yaxes(title="subject", autorange="reversed")
    return _layout(fig, height=max(260, 90 * len(subjects) + 100))


# -- backfill -------------------------------------------------------------------------------


def entry_timeline_marks(entries: pd.DataFrame, requests: pd.DataFrame) -> pd.DataFrame:
    """Tidy marks, one row per thing that happened to an entry: opened, each request (expected or
    observed, with its due time), satisfied or abandoned, and the next due time of an open one."""
    cols = ["entry_id", "observer", "locality", "event", "at", "kind", "attempt", "source", "cnset"]
    rows: list[dict[str, Any]] = []
    for e in entries.to_dict("records"):
        base = {"entry_id": e["entry_id"], "observer": e["observer"], "locality": e.get("locality")}
        rows.append({**base, "event": "opened", "at": e["opened_at"], "kind": None, "attempt": 0,
                     "source": None, "cnset": e.get("cnset_opened")})
        if e.get("state") in ("satisfied", "abandoned") and not pd.isna(e.get("closed_at")):
            rows.append({**base, "event": e["state"], "at": e["closed_at"], "kind": None, "attempt": None,
                         "source": None, "cnset": None})
        elif not pd.isna(e.get("next_due_at")):
            rows.append({**base, "event": "next due", "at": e["next_due_at"], "kind": "expected",
                         "attempt": int(e.get("requests") or 0) + 1, "source": None, "cnset": e.get("cnset_remaining")})
    known = {e["entry_id"]: e for e in entries.to_dict("records")}
    for r in requests.to_dict("records"):
        e = known.get(r["entry_id"])
        if e is None:
            continue
        base = {"entry_id": r["entry_id"], "observer": r["observer"], "locality": e.get("locality")}
        rows.append({**base, "event": "request", "at": r["at"], "kind": r["kind"], "attempt": r["attempt"],
                     "source": r["source"], "cnset": r["cnset"]})
        due = r.get("due_at")
        if due is not None and not pd.isna(due) and pd.Timestamp(due) != pd.Timestamp(r["at"]):
            rows.append({**base, "event": "due", "at": due, "kind": r["kind"], "attempt": r["attempt"],
                         "source": r["source"], "cnset": None})
    out = pd.DataFrame(rows, columns=cols)
    if not out.empty:
        out = out.drop_duplicates(subset=["entry_id", "event", "at", "source"]).sort_values(
            ["entry_id", "at"], kind="stable").reset_index(drop=True)
    return out


_MARKERS: dict[tuple[str, str | None], tuple[str, str, str]] = {
    # (event, kind) -> (symbol, colour, legend label)
    ("opened", None): ("circle", BLUE, "opened"),
    ("request", "expected"): ("diamond-open", ORANGE, "request (expected)"),
    ("request", "observed"): ("diamond", VERMILLION, "request (observed)"),
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
            fig.add_scatter(x=xs, y=ys, mode="lines", name=f"{locality} entry", line={"color": GREY, "dash": dash},
                            hoverinfo="skip")
    for (event, kind), (symbol, colour, label) in _MARKERS.items():
        part = m[(m["event"] == event) & ((m["kind"] == kind) if kind is not None else m["kind"].isna())]
        if part.empty:
            continue
        hover = [
            f"{esc(r.row)}<br>{label}" + (f" #{int(r.attempt)}" if pd.notna(r.attempt) and r.attempt else "")
            + (f" → {esc(r.source)}" if isinstance(r.source, str) and r.source else "")
            + (f"<br>{esc(r.cnset)}" if isinstance(r.cnset, str) and r.cnset else "")
            + f"<br>{fmt_time(r.at)}"
            for r in part.itertuples(index=False)
        ]
        fig.add_scatter(
            x=part["at"], y=part["row"], mode="markers", name=label, hovertext=hover, hoverinfo="text",
            marker={"symbol": symbol, "color": colour, "size": 11, "line": {"width": 2, "color": colour}},
        )
    legend_seen: set[str] = set()
    for trace in fig.data:
        if trace.name in legend_seen:
            trace.showlegend = False
        legend_seen.add(trace.name)
    fig.update_yaxes(autorange="reversed", title=None)
    fig.update_xaxes(title="time (UTC)")
    return _layout(fig, height=max(220, 30 * m["row"].nunique() + 120)), left_off


#: the 2003+ sort keys, in order: (column, how it sorts, label)
SORT_KEYS_2003: tuple[tuple[str, str], ...] = (
    ("status", "up and available first"),
    ("preferred", "preferred backfill source first"),
    ("cost", "lowest transport cost first (no affinity last)"),
    ("version", "newest version first"),
    ("holds_count", "holds the most of the missing CNs"),
    ("candidate", "name"),
)
VERSION_RANK = {"5.5": 0, "2000": 1, "2003": 2, "2007": 3, "2010": 4}


def _sort_key_2003(r: dict[str, Any]) -> tuple[Any, ...]:
    cost = r.get("cost")
    return (
        1 if (r.get("down") or r.get("unavailable")) else 0,
        0 if r.get("preferred") else 1,
        (1, 0) if cost is None or pd.isna(cost) else (0, int(cost)),
        -VERSION_RANK.get(str(r.get("version")), -1),
        -int(r.get("holds_count") or 0),
        str(r.get("candidate")),
    )


def explain_candidates(candidates: pd.DataFrame) -> pd.DataFrame:
    """One attempt's candidates in rank order, each with ``decided_by``: the first sort key that
    puts it after the candidate ranked just above it (the 2003+ keys, or the 2000 search group)."""
    if candidates.empty:
        return candidates.assign(decided_by=pd.Series(dtype="object"))
    c = candidates.sort_values("rank").reset_index(drop=True)
    rows = c.to_dict("records")
    reasons: list[str] = []
    for i, r in enumerate(rows):
        if i == 0:
            reasons.append("first in the sort order")
            continue
        prev = rows[i - 1]
        if str(r.get("algorithm")) == "2000":
            if r.get("group") != prev.get("group"):
                reasons.append(f"search group {r.get('group')} comes after group {prev.get('group')}")
            else:
                reasons.append("same group: " + ("oldest last backfill request first" if r.get("group") in (1, 4)
                                                 else "lowest cost first" if r.get("group") in (2, 5)
                                                 else "shortest mean transit first") + ", then name")
            continue
        a, b = _sort_key_2003(prev), _sort_key_2003(r)
        for (name, label), ka, kb in zip(SORT_KEYS_2003, a, b, strict=True):
            if ka != kb:
                reasons.append(f"{name}: {label}")
                break
        else:
            reasons.append("tie")
    return c.assign(decided_by=reasons)


def request_options(requests: pd.DataFrame) -> list[dict[str, str]]:
    """Dropdown options for a folder's request attempts: value ``<entry_id>:<attempt>``."""
    if requests.empty:
        return []
    r = requests.dropna(subset=["entry_id"])
    r = r[r["entry_id"] != ""]
    agg = r.groupby(["entry_id", "attempt"], as_index=False).agg(
        observer=("observer", "first"), at=("at", "min"), kind=("kind", "first"),
        sources=("source", lambda s: ", ".join(sorted({x for x in s if isinstance(x, str) and x}))),
    ).sort_values(["at", "entry_id", "attempt"])
    return [
        {"value": f"{x.entry_id}:{int(x.attempt)}",
         "label": f"{fmt_time(x.at)} · {x.observer} · entry {x.entry_id} attempt {int(x.attempt)} ({x.kind})"
                  + (f" → {x.sources}" if x.sources else "")}
        for x in agg.itertuples(index=False)
    ]


#: what each rule of the responder list means, in a few words (the glossary says it in full)
RESPONDER_GROUPS: dict[str, str] = {
    "1": "same site, backfilled from before", "2": "other site with a cost, heard from",
    "3": "same site", "4": "other site with a cost", "5": "other site, no cost, known transit",
    "6": "other site", "oldest": "oldest copy (fewest CNs)",
}


def responder_group_text(group: Any) -> str:
    """``group 5: other site, no cost, known transit``; empty for a store not on the model's list."""
    if group is None or (pd.api.types.is_scalar(group) and pd.isna(group)) or group == "":
        return ""
    g = str(group)
    if g.endswith(".0"):
        g = g[:-2]
    meaning = RESPONDER_GROUPS.get(g)
    if g == "oldest":
        return meaning or g
    return f"group {g}: {meaning}" if meaning else f"group {g}"


def responder_rows(responders: pd.DataFrame) -> pd.DataFrame:
    """Status requests with their responders: expected versus observed, and the group that chose each."""
    cols = ["sent_at", "msg", "requester", "responder", "position", "group", "expected", "observed",
            "should_respond", "agreement"]
    if responders.empty:
        return pd.DataFrame(columns=cols)
    r = responders.copy()
    exp = r["expected"].fillna(False).astype(bool)
    obs = r["observed"].fillna(False).astype(bool)
    r["agreement"] = [
        "model and log name it" if e and o else "model only" if e else "log only" if o else ""
        for e, o in zip(exp, obs, strict=True)
    ]
    return r.sort_values(["sent_at", "msg", "position"], na_position="last")[cols].reset_index(drop=True)


def backfill_rows(entries: pd.DataFrame, folders: pd.DataFrame, as_of: Any,
              replicas: pd.DataFrame | None = None, stores: pd.DataFrame | None = None) -> pd.DataFrame:
    """The /backfill grid's rows, attention first: overdue entries, then the longest open (a real duration).

    Each open entry with its folder path, its replica's health (as last known on a down store),
    overdue (two requests or more), flags as yes/no, times as text and its age at the as-o
    """
    rows = entries.merge(folders[["fid", "path"]], on="fid", how="left")
    rows["path"] = [folder_label(a, b) for a, b in zip(rows["fid"], rows["path"], strict=True)]
    ref = pd.Timestamp(as_of) if as_of is not None else None
    rows["open_for_s"] = [int((ref - t).total_seconds()) if ref is not None and not pd.isna(t) else None
                          for t in rows["opened_at"]]
    rows["open_for"] = [fmt_age(s) for s in rows["open_for_s"]]
    rows["overdue"] = [yes_no(entry_overdue(int(n or 0))) for n in rows["requests"].fillna(0)]
    down = set(stores.loc[stores["status"] == "down", "store"]) if stores is not None and not stores.empty else set()
    if replicas is not None and not replicas.empty:
        health = replicas[["store", "fid", "health"]].rename(columns={"store": "observer"})
        rows = rows.merge(health, on=["observer", "fid"], how="left")
    else:
        rows["health"] = None
    rows["health"] = [health_text(h, o in down) if isinstance(h, str) else ""
                      for h, o in zip(rows["health"], rows["observer"], strict=True)]
    rows["new_replica"] = rows["new_replica"].map(yes_no)
    for col in ("opened_at", "next_due_at"):
        rows[col] = rows[col].map(fmt_time)
    rows = rows.assign(_o=rows["overdue"] == "yes", _s=rows["open_for_s"].fillna(-1))
    rows = rows.sort_values(["_o", "_s", "fid"], ascending=[False, False, True], kind="stable")
    return rows.drop(columns=["_o", "_s"]).reset_index(drop=True)


# -- stores ---------------------------------------------------------------------------------


def requests_by_source(requests: pd.DataFrame) -> pd.DataFrame:
    """Where a store's backfill requests go: per source and kind, requests and CNs asked."""
    cols = ["source", "kind", "requests", "cns"]
    if requests.empty:
        return pd.DataFrame(columns=cols)
    r = requests[requests["source"].notna() & (requests["source"] != "")]
    out = r.groupby(["source", "kind"], as_index=False).agg(requests=("at", "size"), cns=("cnset_count", "sum"))
    return out.sort_values(["requests", "source"], ascending=[False, True]).reset_index(drop=True)[cols]


def fig_requests_by_source(frame: pd.DataFrame) -> go.Figure:
    if frame.empty:
        return empty_figure("This store sent no backfill requests")
    fig = go.Figure()
    for kind, colour in (("expected", ORANGE), ("observed", VERMILLION)):
        part = frame[frame["kind"] == kind]
        if not part.empty:
            fig.add_bar(x=part["source"], y=part["requests"], name=kind, marker_color=colour,
                        customdata=part["cns"], hovertemplate="%{x}: %{y} requests, %{customdata} CNs<extra></extra>")
    fig.update_layout(barmode="stack", yaxis_title="requests")
    return _layout(fig, height=280)


def partners_behind(state_table: pd.DataFrame) -> pd.DataFrame:
    """For one observer: each partner it believes lacks CNs the observer owns (per folder rows summed).

    ``state_table`` holds the observer's rows (self rows included) for any number of folders.
    ``derived_folders``: of those folders, how many believed sets are derived (lower bounds, so the
    partner may be less behind than believed).
    """
    cols = ["subject", "folders_behind", "cns_behind", "folders", "real_lag_count", "derived_folders"]
    if state_table.empty:
        return pd.DataFrame(columns=cols)
    state_table = _with_derived(state_table)
    own = {r.fid: CNSet.parse(r.cnset or "") for r in state_table[state_table["is_self"]].itertuples(index=False)}
    acc: dict[str, list[int]] = {}
    for r in state_table[~state_table["is_self"].astype(bool)].itertuples(index=False):
        mine = own.get(r.fid)
        behind = mine.difference(CNSet.parse(r.cnset or "")).count() if mine is not None else 0
        a = acc.setdefault(r.subject, [0, 0, 0, 0, 0])
        a[0] += 1 if behind else 0
        a[1] += behind
        a[2] += 1
        a[3] += int(r.lag_count or 0) if not pd.isna(r.lag_count) else 0
        a[4] += 1 if r.derived else 0
    rows = [{"subject": s, "folders_behind": v[0], "cns_behind": v[1], "folders": v[2], "real_lag_count": v[3],
             "derived_folders": v[4]} for s, v in acc.items()]
    out = pd.DataFrame(rows, columns=cols)
    return out.sort_values(["cns_behind", "subject"], ascending=[False, True]).reset_index(drop=True)


@dataclass(frozen=True)
class Page:
    """A window of a frame: the rows shown and how many there are in all."""

    rows: pd.DataFrame
    total: int
    offset: int


def window(frame: pd.DataFrame, offset: int = 0, limit: int = 500) -> Page:
    """At most ``limit`` rows from ``offset``: tables never send the whole organisation."""
    offset = max(0, min(int(offset), max(len(frame) - 1, 0)))
    return Page(frame.iloc[offset: offset + limit].reset_index(drop=True), len(frame), offset)


# -- backfill trend -------------------------------------------------------------------------

#: the most points per store and series of the backfill trend (exact change times below it)
TREND_POINTS = 400
TREND_PALETTE: tuple[str, ...] = (BLUE, ORANGE, GREEN, VERMILLION, PURPLE, SKY, GREY, "#000000")
TREND_DASHES: tuple[str, ...] = ("solid", "dot", "dash", "dashdot")


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
    known = entries["entry_id"].map(first_later.astype("Int64")).astype("Int64").fillna(_NAT).to_numpy(dtype="int64")
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
    stop = int(_ns([end])[0]) if end is not None and not pd.isna(end) else int(
        max(opened.max(), closed.max(), overdue.max()))
    stop = max(stop, start)
    times = np.concatenate([opened, closed, overdue, [start, stop]])
    times = np.unique(times[(times >= start) & (times <= stop)])
    if len(times) > max_points:
        times = pd.DatetimeIndex(pd.date_range(pd.Timestamp(start, tz="UTC"), pd.Timestamp(stop, tz="UTC"),
                                               periods=max_points)).asi8
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
        frames.append(pd.DataFrame({
            "store": store, "at": when,
            "open": o.searchsorted(times, "right") - c.searchsorted(times, "right"),
            "overdue": d.searchsorted(times, "right") - dc.searchsorted(times, "right"),
        }))
    out = pd.concat(frames, ignore_index=True)
    out["open"] = out["open"].astype("int64")
    out["overdue"] = out["overdue"].astype("int64")
    return out[cols]


def fig_backfill_trend(trend: pd.DataFrame) -> go.Figure:
    """Two step charts sharing the time axis: open entries and overdue entries, one line per store."""
    if trend.empty:
        return empty_figure("No backfill entry in this run")
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.1,
                        subplot_titles=("open backfill entries", "overdue backfill entries (two requests or more)"))
    for i, (store, part) in enumerate(trend.groupby("store", sort=True)):
        line = {"color": TREND_PALETTE[i % len(TREND_PALETTE)],
                "dash": TREND_DASHES[(i // len(TREND_PALETTE)) % len(TREND_DASHES)], "shape": "hv"}
        for row, column in ((1, "open"), (2, "overdue")):
            fig.add_scatter(
                x=part["at"], y=part[column], mode="lines", name=str(store), legendgroup=str(store),
                showlegend=row == 1, line=line, row=row, col=1,
                hovertemplate="%{fullData.name}: %{y} " + column + " at %{x}<extra></extra>",
            )
    fig.update_yaxes(rangemode="tozero", title_text="entries")
    fig = _layout(fig, height=500)
    fig.update_layout(margin={"t": 80}, legend={"y": 1.08})  # the legend above the first panel's title
    return fig


# -- the folder page replayed at a step of its history -----------------------------------------

#: what the folder page cannot replay exactly from the published tables, said on the page
REPLAY_LIMITS = ("Replayed from state_history, backfill_entries, backfill_requests and each replica's last "
                 "delete-pending period. Missing CNs use the replica list as of the run (the tables do not "
                 "record earlier lists).")
#: why unique CNs are blank at a past step of a folder other than the hierarchy
UNIQUE_NOT_REPLAYED = ("Unique CNs are not replayed for this folder: they are counted against the replica list "
                       "at that time, and the published tables hold the list only as of the run "
                       "(folders.replicas).")
#: the hierarchy: every store is always on its list, so its unique CNs replay exactly
UNIQUE_REPLAYED = ("Unique CNs at this step: the store's own row minus every other store's row in its state "
                   "table at that time (every store is on the hierarchy's list).")
#: why next status is blank at a past step
NEXT_STATUS_NOT_REPLAYED = ("Next status is not replayed: it counts 24 h from the last change the store made or "
                            "received, and receiving changes it already held leaves no row in state_history, "
                            "so that time cannot be read from the published tables.")
#: the hierarchy at a past step: no replica of it is ever delete pending
PENDING_NEVER = "No replica of the hierarchy is ever delete pending: every store is on its list at every time."
#: which delete-pending periods a past step can show
PENDING_REPLAYED = ("Delete pending at this step by each replica's last delete-pending period (pending since, "
                    "until deleted): an earlier period that ended when the store rejoined the list is not "
                    "recorded in the published tables.")


def _owned_at(cells: pd.DataFrame) -> dict[str, CNSet]:
    """Each store's own row (observer == subject) in ``cells``: what it owned then."""
    return {o: CNSet.parse(t or "") for o, s, t in zip(cells["observer"], cells["subject"], cells["cnset"], strict=True)
            if o == s}


def entries_at(entries: pd.DataFrame, requests: pd.DataFrame, cells: pd.DataFrame, at: Any) -> pd.DataFrame:
    """The folder's backfill entries as they stood at ``at``: those opened by then, open unless
    closed by then, requests made by then, remaining = opened minus what the observer owned then
    (CNs that arrive leave an entry), next due = the due time of its first request after ``at``.

    ``cells`` are the state rows at ``at`` (:func:`cells_at`)."""
    t = pd.Timestamp(at)
    e = entries[entries["opened_at"] <= t].copy()
    if e.empty:
        return e
    owned = _owned_at(cells)
    done = e["closed_at"].notna() & (e["closed_at"] <= t)
    open_at_run = (e["state"] == "open").tolist()
    e["state"] = e["state"].where(done, "open")
    e["closed_at"] = e["closed_at"].where(done, pd.NaT)
    made = requests[requests["entry_id"].notna() & (requests["at"] <= t)]
    later = requests[requests["entry_id"].notna() & (requests["at"] > t)].sort_values("at", kind="stable")
    count = made.groupby("entry_id")["attempt"].nunique()
    last = made.groupby("entry_id")["at"].max()
    next_due = later.groupby("entry_id")["due_at"].first()
    e["requests"] = [int(count.get(i, 0)) for i in e["entry_id"]]
    e["last_request_at"] = pd.to_datetime([last.get(i, pd.NaT) for i in e["entry_id"]], utc=True)
    remaining, remaining_n, due = [], [], []
    for r, still_open in zip(e.to_dict("records"), open_at_run, strict=True):
        if r["state"] != "open":
            remaining.append(r["cnset_remaining"])
            remaining_n.append(r["cnset_remaining_count"])
            due.append(pd.NaT)
            continue
        left = CNSet.parse(r["cnset_opened"] or "").difference(owned.get(r["observer"], CNSet.empty()))
        remaining.append(left.text())
        remaining_n.append(left.count())
        nd = next_due.get(r["entry_id"], pd.NaT)
        if pd.isna(nd) and still_open:  # no request after ``at``: the run's next due time still holds
            nd = r["next_due_at"]
        due.append(nd)
    e["cnset_remaining"] = remaining
    e["cnset_remaining_count"] = remaining_n
    e["next_due_at"] = pd.to_datetime(due, utc=True)
    return e.reset_index(drop=True)


def replicas_at(replicas: pd.DataFrame, entries: pd.DataFrame, cells: pd.DataFrame, at: Any,
                replica_list: Sequence[str], every_store: bool = False) -> pd.DataFrame:
    """The folder's replicas at ``at``: health (the model's order: deleted, delete pending, overdue,
    backfilling, in sync), open entries and missing CNs, from the entries at ``at``
    (:func:`entries_at`) and the state rows at ``at``. Missing uses ``replica_list`` (as of the
    run); for the hierarchy every store counts (``every_store``). Unique CNs (the model's
    :func:`unique_cns`) only for the hierarchy, whose list is every store at every time; for any
    other folder they rest on the list at ``at``, which no table records, and next status on
    receipts that leave no row: blank here, not invented (:data:`UNIQUE_NOT_REPLAYED`,
    :data:`NEXT_STATUS_NOT_REPLAYED`)."""
    t = pd.Timestamp(at)
    owned = _owned_at(cells)
    believed: dict[str, list[tuple[str, CNSet]]] = {}
    for o, s, txt in zip(cells["observer"], cells["subject"], cells["cnset"], strict=True):
        if o != s:
            believed.setdefault(o, []).append((s, CNSet.parse(txt or "")))
    on_list = set(replica_list)
    open_e = entries[entries["state"] == "open"] if not entries.empty else entries
    rows = []
    for r in replicas.to_dict("records"):
        store = r["store"]
        mine = open_e[open_e["observer"] == store] if not open_e.empty else open_e
        n_open = len(mine)
        deleted = pd.notna(r.get("deleted_at")) and r["deleted_at"] <= t
        pending = pd.notna(r.get("delete_pending_since")) and r["delete_pending_since"] <= t
        lifecycle = "deleted" if deleted else "delete_pending" if pending else "active"
        health = replica_health(lifecycle, (int(n) for n in mine["requests"].fillna(0)))
        if store in on_list or every_store:
            others = [b for s, b in believed.get(store, []) if every_store or s in on_list]
            missing = union_all(others).difference(owned.get(store, CNSet.empty()))
        else:
            missing = CNSet.empty()
        unique = None
        if every_store and not deleted:
            unique = unique_cns(owned.get(store, CNSet.empty()), (b for _s, b in believed.get(store, [])))
        rows.append({**r, "health": health, "open_entries": n_open, "missing_cnset": missing.text(),
                     "missing_count": missing.count(),
                     "unique_count": None if unique is None else unique.count(),
                     "unique_cnset": None if unique is None else unique.text(),
                     "next_status_at": pd.NaT})
    return pd.DataFrame(rows, columns=list(replicas.columns))


def step_changes(history: pd.DataFrame, at: Any) -> list[str]:
    """What happened at ``at``: one sentence per state_history row stamped then (who learned
    what, from which message; or whose own content changed)."""
    t = pd.Timestamp(at)
    rows = history[history["at"] == t]
    out = []
    for r in rows.itertuples(index=False):
        cause = str(r.cause) if isinstance(r.cause, str) else "?"
        if r.observer == r.subject:
            how = "a change" if cause == "change" else f"from message {cause}"
            out.append(f"{r.observer}'s own content became {r.cnset or '∅'} ({how})")
        else:
            how = "a change" if cause == "change" else f"message {cause}"
            out.append(f"{r.observer} learned that {r.subject} holds {r.cnset or '∅'} (from {how})")
    return out


def time_ticks(times: Sequence[Any], end: Any = None) -> list[float]:
    """Where each change time sits on a time axis from the first change to ``end`` (default: the
    last change), as fractions 0..1: ticks spaced by time, not by event."""
    if not times:
        return []
    ts = [pd.Timestamp(x) for x in times]
    last = pd.Timestamp(end) if end is not None and not pd.isna(end) else ts[-1]
    last = max(last, ts[-1])
    span = (last - ts[0]).total_seconds()
    if span <= 0:
        return [0.0 for _ in ts]
    return [(x - ts[0]).total_seconds() / span for x in ts]


def slider_positions(times: Sequence[Any], end: Any = None) -> list[float]:
    """The folder slider's positions: seconds since the first change for each change time, then
    the run's as-of (``end``) last, so the thumb sits where in time the change happened. An as-of
    at the last change (or before it) is put just after it, so the two steps stay apart."""
    if not times:
        return []
    ts = [pd.Timestamp(x) for x in times]
    out = [round((x - ts[0]).total_seconds(), 6) for x in ts]
    last = out[-1]
    as_of = round((pd.Timestamp(end) - ts[0]).total_seconds(), 6) if end is not None and not pd.isna(end) else last
    return [*out, as_of if as_of > last else last + max(1.0, last / 50)]


def position_index(value: Any, positions: Sequence[float], tolerance: float = 1e-3) -> int | None:
    """The step a slider value stands for (its nearest position), or None when no position is
    within ``tolerance`` seconds: a value the page never offered."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    if not positions or v != v:
        return None
    i = min(range(len(positions)), key=lambda k: abs(positions[k] - v))
    return i if abs(positions[i] - v) <= tolerance else None


def slider_labels(positions: Sequence[float], texts: Sequence[str], min_gap: float = 1 / 8) -> list[str]:
    """One label per change position (``texts``: their RFC 3339 times) and "as of" for the last:
    a change keeps its label only when it is ``min_gap`` of the slider from the previous labelled
    one and from "as of", so labels placed by time never overlap; the others are blank (the thumb
    still stops there)."""
    if not positions:
        return []
    end = positions[-1] or 1.0
    labels, last = [], None
    for p, text in zip(positions[:-1], texts, strict=True):
        x = p / end
        keep = (last is None or x - last >= min_gap) and 1 - x >= min_gap
        labels.append(text[5:16].replace("T", " ") if keep else "")
        last = x if keep else last
    return [*labels, "as of"]


#: dcc.Slider draws at most 500 marks (more: it warns and draws its own); kept below that
MAX_SLIDER_MARKS = 480


def slider_mark_indices(positions: Sequence[float], keep: Iterable[int] = (), limit: int = MAX_SLIDER_MARKS) -> list[int]:
    """Which stops get a mark: the first, the last (as-of), ``keep`` (labelled ones, the current
    step) and the first stop in each 1/``limit`` of the slider, so a long history stays under
    Dash's limit. The keyboard still visits every stop (assets/pfscope-slider.js); a drag snaps
    to the marks, at most 1/``limit`` of the width apart."""
    n = len(positions)
    if n == 0:
        return []
    end = positions[-1] or 1.0
    picked = {0, n - 1, *(i for i in keep if 0 <= i < n)}
    seen: set[int] = set()
    for i, p in enumerate(positions):
        slot = round(p / end * limit)
        if slot not in seen:
            seen.add(slot)
            picked.add(i)
    return sorted(picked)
