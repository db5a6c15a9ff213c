"""The ``/plan`` page's and the plan report's pieces, from a plan made on the published run
(``spark_jobs.compute.planning.make_plan``): its URL, an action written from the form's fields,
and the result beside the baseline as tables, sentences and a timeline. Pure: no I/O.

Every figure here is what is so by the forecast (the model's rules played forward from every
store's state at the as-of), under the plan and without it: not any store's belief.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import urlencode

import pandas as pd
import plotly.graph_objects as go

from pfscope.app.figures.layout import base_layout
from pfscope.app.figures.palette import BLUE, GREEN, GREY, ORANGE, VERMILLION
from pfscope.app.figures.text import esc
from pfscope.spark_jobs.model.forecast.actions import (
    Action,
    Decommission,
    ReplicaChange,
    Restore,
    StoreStatus,
)
from pfscope.spark_jobs.model.forecast.planner import Decommissioned
from pfscope.spark_jobs.model.forecast.play import DOWN, REMOVED
from pfscope.spark_jobs.model.forecast.verdict import Moved, PlanResult
from pfscope.spark_jobs.model.timeutil import format_ts

#: the form's verbs, as the planner's actions write them (``forecast.plan.FORMS``)
VERBS: tuple[str, ...] = ("down", "up", "remove", "add", "decommission", "restore")
#: the verbs that name a folder
FOLDER_VERBS = ("remove", "add")
NEVER = "not within 14 days"
CAUSES = {DOWN: "goes down", REMOVED: "removed from the list"}


#: the columns of the plan's tables, (frame column, heading): the page and the report show the same
RISK_HEADS = [
    ("at", "from"),
    ("fid", "folder"),
    ("store", "held only on"),
    ("cause", "when it"),
    ("cns", "CNs"),
    ("survives", "survives?"),
]
MOVED_HEADS = [
    ("store", "store"),
    ("fid", "folder"),
    ("before", "in sync, without the plan"),
    ("after", "under the plan"),
]
TRAFFIC_HEADS = [
    ("sender", "from"),
    ("recipient", "to"),
    ("requests_before", "requests, without"),
    ("requests_after", "under the plan"),
    ("cns_before", "CNs sent, without"),
    ("cns_after", "under the plan"),
    ("messages_before", "messages, without"),
    ("messages_after", "under the plan"),
]


def plan_href(actions: Sequence[str], run_id: str | None = None) -> str:
    """The plan's address: ``/plan?run=<run>&action=...&action=...`` (send it to the change board)."""
    query = [("run", run_id)] if run_id else []
    query += [("action", a) for a in actions]
    return "/plan" + (f"?{urlencode(query)}" if query else "")


def plan_report_href(actions: Sequence[str], run_id: str | None = None) -> str:
    """The same plan as a standalone report (``/plan-report``, served by ``app.main``)."""
    return "/plan-report" + plan_href(actions, run_id)[len("/plan") :]


def actions_of(value: str | Sequence[str] | None) -> list[str]:
    """The ``action`` query values (Dash gives one as a string, several as a list), blanks dropped."""
    if value is None:
        return []
    values = [value] if isinstance(value, str) else list(value)
    return [v.strip() for v in values if v and v.strip()]


def compose_action(
    verb: str | None,
    store: str | None,
    fid: str | None = None,
    at: str | None = None,
    until: str | None = None,
    backup: str | None = None,
    immediately: bool = False,
) -> str:
    """An action's text from the form's fields (a :class:`ValueError` says which field is missing).
    The planner checks the rest (``PlanError``) when the plan is made."""
    if verb not in VERBS:
        raise ValueError("pick what to do")
    if not store:
        raise ValueError("pick a store")
    times = {k: (v or "").strip() for k, v in (("at", at), ("until", until), ("backup", backup))}
    for name, text in times.items():
        if " " in text:
            raise ValueError(f"{name}: a time is one word, +6h or RFC 3339 (2026-11-05T08:00:00Z)")
    words = [verb, store]
    if verb in FOLDER_VERBS:
        if not fid:
            raise ValueError("pick a folder")
        words += ["from" if verb == "remove" else "to", fid]
    if verb == "restore":
        if not times["backup"]:
            raise ValueError("say when the backup was taken")
        words += ["from", times["backup"]]
    if times["at"]:
        words += ["at", times["at"]]
    if verb == "down" and times["until"]:
        words += ["until", times["until"]]
    if verb == "decommission" and immediately:
        words.append("immediately")
    return " ".join(words)


def ts_text(us: int | None, never: str = NEVER) -> str:
    return never if us is None else format_ts(us)


def _ts(us: int) -> pd.Timestamp:
    return pd.Timestamp(us, unit="us", tz="UTC")


def describe(a: Action) -> str:
    """One action as played, in words."""
    if isinstance(a, StoreStatus):
        return f"{a.store} {'comes back' if a.up else 'goes down'}"
    if isinstance(a, ReplicaChange):
        return f"{a.store} {'added to' if a.added else 'removed from'} the list of {a.fid}"
    if isinstance(a, Restore):
        return f"{a.store} restored from its backup of {format_ts(a.taken_at)}"
    if isinstance(a, Decommission):
        return f"{a.store} decommissioned" + (" (down at once)" if a.at_once else "")
    raise TypeError(a)


#: above this many moved replicas the timeline draws each store's span of in-sync times, not a
#: marker per replica (a decommission moves thousands; the table and the report list each one)
MOVED_MARKERS = 300


def _spans(spans: Iterable[tuple[str, int, int, str]]) -> tuple[list[Any], list[Any], list[Any]]:
    """A trace's points for (store, from, to, words) spans: each a segment on its store's row,
    apart from the next (None), its words escaped on both ends."""
    xs: list[Any] = []
    ys: list[Any] = []
    texts: list[Any] = []
    for store, start, end, words in spans:
        text = esc(words)
        xs += [_ts(start), _ts(end), None]
        ys += [esc(store)] * 2 + [None]
        texts += [text, text, None]
    return xs, ys, texts


def _moved_spans(pts: Sequence[tuple[Moved, int]], colour: str, symbol: str, label: str) -> go.Scatter:
    """Per store, its first and last in-sync time of one side, joined by a line."""
    by_store: dict[str, list[int]] = {}
    for m, t in pts:
        by_store.setdefault(m.store, []).append(t)
    xs, ys, texts = _spans(
        (
            store,
            min(times),
            max(times),
            f"{len(times):,} replicas of {store} {label} between {format_ts(min(times))} and {format_ts(max(times))}",
        )
        for store, times in sorted(by_store.items())
    )
    return go.Scatter(
        x=xs,
        y=ys,
        mode="lines+markers",
        marker={"symbol": symbol, "size": 10, "color": colour, "line": {"width": 2, "color": colour}},
        line={"color": colour, "width": 2},
        name=label,
        hovertext=texts,
        hoverinfo="text",
        connectgaps=False,
    )


def step_groups(played: Sequence[Action]) -> list[tuple[int, str, str]]:
    """The plan's steps as the timeline marks them: (time, store, words), the list changes of one
    store at one time as one step (a decommission removes the store from thousands of lists)."""
    out: list[tuple[int, str, str]] = []
    lists: dict[tuple[int, str, bool], list[ReplicaChange]] = {}
    for a in played:
        if isinstance(a, ReplicaChange):
            lists.setdefault((a.at, a.store, a.added), []).append(a)
        else:
            out.append((a.at, a.store, describe(a)))
    for (at, store, added), changes in lists.items():
        if len(changes) == 1:
            out.append((at, store, describe(changes[0])))
        else:
            out.append(
                (
                    at,
                    store,
                    f"{store} {'added to' if added else 'removed from'} the lists of {len(changes):,} folders",
                )
            )
    return sorted(out)


def verdict_line(result: PlanResult) -> str:
    """``safe`` or ``not safe: <the first reason>`` (the rest follow as a list)."""
    return "safe" if result.safe else f"not safe: {result.reasons[0]}"


def first_reasons(reasons: Sequence[str], n: int) -> tuple[list[str], str | None]:
    """The first ``n`` reasons, and a line for the rest (None: none left off)."""
    rest = len(reasons) - n
    return list(reasons[:n]), (f"… and {rest:,} more: the report lists every one." if rest > 0 else None)


def settles_text(result: PlanResult) -> str:
    if result.settles_at is None:
        return "Not everything settles within 14 days under the plan."
    return f"Everything the plan touches settles by {format_ts(result.settles_at)}."


def risk_frame(result: PlanResult) -> pd.DataFrame:
    """The content at risk at each step under the plan: whose, when, why, and whether it survives."""
    rows = [
        {
            "at": format_ts(r.at),
            "fid": r.fid,
            "store": r.store,
            "cause": CAUSES.get(r.cause, "restored to its backup"),
            "cns": r.cns.text(),
            "survives": f"yes: safe again at {format_ts(r.until)}" if r.until is not None else "no: lost",
        }
        for r in result.at_risk
    ]
    return pd.DataFrame(rows, columns=["at", "fid", "store", "cause", "cns", "survives"])


def moved_frame(result: PlanResult, played: Sequence[Action] = ()) -> pd.DataFrame:
    """The replicas whose ``in_sync_at`` the plan moves: without the plan, and under it (a replica
    the baseline has lacking nothing: "lacks nothing", or "not on the list" when the plan adds it)."""
    added = {(a.store, a.fid) for a in played if isinstance(a, ReplicaChange) and a.added}
    rows = []
    for m in result.changed:
        before = ts_text(m.before) if m.lacked_before else "lacks nothing"
        if not m.lacked_before and (m.store, m.fid) in added:
            before = "not on the list"
        after = "removed from the list" if m.removed else ts_text(m.after)
        rows.append({"store": m.store, "fid": m.fid, "before": before, "after": after})
    return pd.DataFrame(rows, columns=["store", "fid", "before", "after"])


def decommissioned_lines(decommissioned: Sequence[Decommissioned]) -> list[str]:
    """When each decommissioned store leaves its lists and goes down (once nothing of it is at risk)."""
    return [
        f"{d.store} is removed from its lists at {format_ts(d.removed_at)} and goes down "
        + (
            f"at {format_ts(d.down_at)}."
            if d.down_at is not None
            else "not within 14 days (something of it is still at risk)."
        )
        for d in decommissioned
    ]


TRAFFIC_COLUMNS = [
    "sender",
    "recipient",
    "requests_before",
    "requests_after",
    "cns_before",
    "cns_after",
    "messages_before",
    "messages_after",
]


def traffic_frame(result: PlanResult) -> pd.DataFrame:
    """The backfill per store pair where the plan changes it: requests, CNs the responses carry,
    and all the folder messages, without the plan and under it."""
    rows = [
        {
            "sender": p.sender,
            "recipient": p.recipient,
            "requests_before": p.before.requests,
            "requests_after": p.after.requests,
            "cns_before": p.before.cns,
            "cns_after": p.after.cns,
            "messages_before": p.before.messages,
            "messages_after": p.after.messages,
        }
        for p in result.traffic
    ]
    return pd.DataFrame(rows, columns=TRAFFIC_COLUMNS)


def played_frame(played: Sequence[Action]) -> pd.DataFrame:
    """The plan's steps as played, in order (a decommission as its removals and its down)."""
    rows = [{"at": format_ts(a.at), "store": a.store, "what": describe(a)} for a in played]
    return pd.DataFrame(rows, columns=["at", "store", "what"])


def timeline_figure(played: Sequence[Action], result: PlanResult, as_of: int) -> go.Figure:
    """The play on one time axis, a row per store: the plan's steps, the content at risk (a bar
    from when until it is safe again), and each moved replica's in-sync time without the plan
    (hollow) and under it (filled)."""
    fig = go.Figure()
    stores = sorted(
        {a.store for a in played} | {m.store for m in result.changed} | {r.store for r in result.at_risk}
    )
    end = max(
        [
            as_of,
            *(a.at for a in played),
            *(m.before or 0 for m in result.changed),
            *(m.after or 0 for m in result.changed),
        ]
        + [r.until or r.at for r in result.at_risk]
    )
    if result.at_risk:  # one trace, a bar per risk (a trace each made hundreds for a store down for good)
        xs, ys, texts = _spans(
            (
                r.store,
                r.at,
                r.until if r.until is not None else end,
                f"{r.fid}: {r.cns.text()} at risk until {ts_text(r.until, 'lost')}",
            )
            for r in result.at_risk
        )
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines",
                line={"color": VERMILLION, "width": 10},
                name="content at risk",
                hovertext=texts,
                hoverinfo="text",
                connectgaps=False,
            )
        )
    steps = step_groups(played)
    if steps:
        fig.add_trace(
            go.Scatter(
                x=[_ts(at) for at, _, _ in steps],
                y=[esc(store) for _, store, _ in steps],
                mode="markers",
                marker={"symbol": "diamond", "size": 12, "color": BLUE},
                name="the plan's steps",
                hovertext=[esc(f"{format_ts(at)}: {text}") for at, _, text in steps],
                hoverinfo="text",
            )
        )
    for side, colour, symbol, label in (
        ("before", GREY, "circle-open", "in sync, without the plan"),
        ("after", GREEN, "circle", "in sync, under the plan"),
    ):
        pts = [(m, getattr(m, side)) for m in result.changed if getattr(m, side) is not None]
        if len(pts) > MOVED_MARKERS:  # thousands of markers: each store's first and last, joined
            fig.add_trace(_moved_spans(pts, colour, symbol, label))
        elif pts:
            fig.add_trace(
                go.Scatter(
                    x=[_ts(t) for _, t in pts],
                    y=[esc(m.store) for m, _ in pts],
                    mode="markers",
                    marker={
                        "symbol": symbol,
                        "size": 10,
                        "color": colour,
                        "line": {"width": 2, "color": colour},
                    },
                    name=label,
                    hovertext=[esc(f"{m.store} on {m.fid}: {label} at {format_ts(t)}") for m, t in pts],
                    hoverinfo="text",
                )
            )
    fig.add_vline(x=_ts(as_of).timestamp() * 1000, line={"color": GREY, "dash": "dot"})
    if result.settles_at is not None:
        fig.add_vline(x=_ts(result.settles_at).timestamp() * 1000, line={"color": ORANGE, "dash": "dash"})
    fig.update_yaxes(categoryorder="array", categoryarray=[esc(s) for s in stores[::-1]], type="category")
    fig.update_xaxes(type="date")
    return base_layout(fig, height=max(180, 60 + 36 * len(stores)))


def folder_options(
    folders: pd.DataFrame, store: str, adding: bool, search: str, chosen: str | None, n: int
) -> list[dict[str, str]]:
    """The folder picker's choices: for a removal, the folders whose list has ``store``; for an
    addition, those whose list lacks it; narrowed by ``search`` (FID or path), the first ``n`` by
    FID, the chosen folder kept."""
    listed = [store in (list(r) if r is not None else []) for r in folders["replicas"]]
    picked = folders[[x != adding for x in listed]]
    if search:
        s = search.lower()
        hit = picked["fid"].astype(str).str.lower().str.contains(s, regex=False) | picked["path"].astype(
            str
        ).str.lower().str.contains(s, regex=False)
        picked = picked[hit]
    picked = picked.sort_values("fid").head(n)
    out = [{"label": f"{r.fid} {r.path}", "value": str(r.fid)} for r in picked.itertuples(index=False)]
    if chosen and all(o["value"] != chosen for o in out):
        out.insert(0, {"label": chosen, "value": chosen})
    return out
