"""What the folder page's slider replays, at a step (or as of the run): the replicas, the backfill
entries, the step's line, the entry timeline (with the forecast as of the run) and the
delete-pending replicas. (A module whose name starts with ``_`` is not a Dash page.)"""

from __future__ import annotations

from typing import Any

import pandas as pd
from dash import dcc, html

from pfscope.app import components as c
from pfscope.app import figures as f
from pfscope.app.data import RunData
from pfscope.app.figures import forecast_timeline as ft
from pfscope.app.figures import requests as rq
from pfscope.app.figures.text import ts_text
from pfscope.app.frozen import frozen
from pfscope.app.pages._folder_parts import pending_table, replicas_table
from pfscope.spark_jobs.model.rules.health import entry_overdue


def _entries_section(entries: pd.DataFrame) -> html.Div:
    """Open entries first, overdue (retried) first among them, then by entry number (numerically)."""
    e = entries
    if not e.empty:
        e = e.assign(
            _open=e["state"] != "open",
            _retried=e["requests"].fillna(0) < 2,
            _n=[f.natural_key(x) for x in e["entry_id"]],
        )
        e = e.sort_values(["_open", "_retried", "observer", "_n"], kind="stable")
        e = e.assign(
            overdue=[
                f.yes_no(s == "open" and entry_overdue(int(n or 0)))
                for s, n in zip(e["state"], e["requests"].fillna(0), strict=True)
            ]
        )
    return c.table(
        e,
        [
            ("entry_id", "entry"),
            ("observer", "store"),
            ("state", "state"),
            ("overdue", c.with_term("overdue", "overdue")),
            ("locality", c.with_term("locality", "locality")),
            ("new_replica", c.with_term("new replica", "new-replica")),
            ("opened_at", "opened"),
            ("opened_by", "opened by"),
            ("cnset_opened", "opened for"),
            ("cnset_remaining", "remaining"),
            ("requests", "requests"),
            ("last_request_at", "last request"),
            ("next_due_at", c.with_term("next due", "next-due")),
            *(
                [("next_request", c.with_term("next request", "next-request"))]
                if "next_request" in e.columns
                else []
            ),
            ("closed_at", "closed"),
        ],
        {
            "entry_id": c.as_breakable,
            "observer": c.link_store,
            "opened_at": c.as_time,
            "opened_by": c.as_breakable,
            "cnset_opened": c.as_cnset,
            "cnset_remaining": c.as_cnset,
            "new_replica": c.as_yes_no,
            "last_request_at": c.as_time,
            "next_due_at": c.as_time,
            "closed_at": c.as_time,
        },
        id="pf-entries",
    )


def replay_notes(fid: str, at: pd.Timestamp | None) -> list[str]:
    """What a past step shows of unique CNs, next status and delete pending, and why not more."""
    if at is None:
        return []
    if fid == f.HIERARCHY_FID:
        return [f.UNIQUE_REPLAYED, f.NEXT_STATUS_NOT_REPLAYED, f.PENDING_NEVER]
    return [f.UNIQUE_NOT_REPLAYED, f.NEXT_STATUS_NOT_REPLAYED, f.PENDING_REPLAYED]


def step_view(history: pd.DataFrame, at: pd.Timestamp | None) -> html.Div:
    """The line saying what happened at the slider's step (its state_history rows)."""
    if at is None:
        return html.Div(
            html.P(
                "As of the run: replicas, entries and the timeline show the published tables.",
                className="pf-muted",
            ),
            id="pf-step",
        )
    lines = f.step_changes(history, at)
    return html.Div(
        [
            html.P(f"At {ts_text(at)}:" if lines else f"Nothing changed at {ts_text(at)}."),
            html.Ul([html.Li(line) for line in lines], className="pf-step-lines"),
            html.P(f.REPLAY_LIMITS, className="pf-help"),
        ],
        id="pf-step",
    )


def _notes(fid: str, at: pd.Timestamp | None, which: tuple[int, ...]) -> list[Any]:
    notes = replay_notes(fid, at)
    return [html.P(notes[i], className="pf-help pf-replay-note") for i in which if notes]


def replay(data: RunData, fid: str, at: pd.Timestamp | None) -> tuple[Any, Any, Any, Any, Any]:
    """Every section that follows the slider, at ``at`` (None: as of the run): replicas, backfill
    entries, the step's line, the entry timeline with a cursor at ``at``, delete-pending replicas."""
    entries = data.backfill_entries(fid=fid)
    requests = folder_requests(data, fid)
    replicas = data.replicas(fid=fid)
    history = data.state_history(fid)
    whole = False  # a past step replayed whole (the run publishes replica_lists and replica_history)
    down = set(data.stores().query("status == 'down'")["store"])
    marks = f.entry_timeline_marks(entries, requests)
    if at is None:  # the next request is published as of the run (not replayed at a past step)
        entries = f.with_next_request(entries, data.next_requests(fid=fid))
    else:
        cells = f.cells_at(history, at)
        entries = f.entries_at(entries, requests, cells, at)
        folder = data.folder(fid) or {}
        rhistory = data.replica_history(fid)
        if not rhistory.empty:  # the run publishes the histories: replay whole
            listed = f.list_at(data.replica_lists(fid), at)  # None: the hierarchy (every store)
            replicas = f.replicas_from_history(
                replicas,
                entries,
                cells,
                at,
                folder.get("replicas", []) if listed is None else listed,
                rhistory,
                every_store=fid == f.HIERARCHY_FID,
            )
            whole = True
        else:
            replicas = f.replicas_at(
                replicas, entries, cells, at, folder.get("replicas", []), every_store=fid == f.HIERARCHY_FID
            )
        down = set()  # the stores' status is published as of the run only
    timeline, left_off = f.fig_entry_timeline(marks)
    if at is None:  # the forecast after the as-of, as of the run only (never replayed)
        ahead = ft.with_forecast(
            None if marks.empty else timeline,
            data.forecast(fid=fid),
            data.forecast_requests(fid),
            data.summary().get("as_of"),
        )
        timeline = ahead if ahead is not None else timeline
    if at is not None and not marks.empty:
        timeline.add_vline(x=at, line={"color": f.VERMILLION, "width": 2}, name="step")
        timeline.add_annotation(x=at, y=1, yref="paper", text="step", showarrow=False, yanchor="bottom")
    timeline_children = [
        dcc.Graph(
            id="folder-timeline", figure=timeline, config={"displaylogo": False}, className="pf-figure"
        ),
        html.P(f"{left_off:,} older entries not drawn (mark limit).", className="pf-muted")
        if left_off
        else "",
    ]
    # the tables as one component each: the slider replaces them whole (app/frozen.py says why)
    if whole:
        replicas_view = frozen(
            [replicas_table(replicas, down), html.P(f.WHOLE_REPLAYED, className="pf-help")]
        )
        pending_view = frozen([pending_table(replicas)])
    else:
        replicas_view = frozen([replicas_table(replicas, down), *_notes(fid, at, (0, 1))])
        pending_view = frozen(
            [pending_table(replicas), *_notes(fid, at, (2,) if fid == f.HIERARCHY_FID else (2, 0))]
        )
    return (
        replicas_view,
        frozen(_entries_section(entries)),
        step_view(history, at),
        timeline_children,
        pending_view,
    )


def folder_requests(data: RunData, fid: str) -> pd.DataFrame:
    """The folder's backfill requests with what became of each for its source (the model's
    rule): the timeline marks those its source never processed, the request list says."""
    return data.memo(
        "folder_requests",
        (fid,),
        lambda: rq.folder_requests(
            data.backfill_requests(fid=fid),
            data.messages(fid),
            None if "transits" in data.missing() else data.transits(),
            data.summary().get("as_of"),
        ),
    ).copy()
