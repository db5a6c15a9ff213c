"""``/folder/<FID>``: who knows what (seed 004's matrix) replayed in time, and the folder's backfill.

URL state: ``?at=<RFC 3339>`` replays the page through ``state_history`` (absent: the run's
as-of; a time between changes: the change at or before it); ``?request=<entry_id>:<attempt>``
selects a request whose candidates are explained. The slider's value is seconds since the
folder's first change: its stops (one per change, then the as-of) are spaced by time.
Controls update their sections by callback and mirror their state into the URL (replaceState),
so the address bar is always a link to what is on screen.
"""

from __future__ import annotations

import json
from typing import Any

import dash
import pandas as pd
from dash import Input, Output, State, callback, clientside_callback, dcc, html

from pfscope.app import components as c
from pfscope.app import figures as f
from pfscope.app.data import RunData
from pfscope.app.figures import forecast_timeline as ft
from pfscope.app.figures import requests as rq
from pfscope.app.figures.backfill import UNPROCESSED
from pfscope.app.figures.text import ts_text
from pfscope.app.frozen import frozen
from pfscope.app.pages._folder_parts import (
    Page,
    candidates_view,
    matrix_mode,
    matrix_view,
    pending_table,
    replicas_table,
    verdict_view,
    view_switch,
)
from pfscope.app.runtime import current_data, settings
from pfscope.spark_jobs.model.rules.health import entry_overdue
from pfscope.spark_jobs.model.timeutil import TimeError, parse_ts


def title(fid: str | None = None, **_: Any) -> str:
    """The tab names the folder, so several open folders are told apart."""
    return f"pfscope · folder {fid}" if fid else "pfscope · folder"


dash.register_page(__name__, path_template="/folder/<fid>", name="Folder", title=title)

#: a change keeps its slider label only this far (a fraction of the slider) from the previous
#: labelled one and from "as of": at most 8 labels, ~128 px apart at 1440 px
MIN_LABEL_GAP = 1 / 8
#: the time strip under the slider draws at most one tick per 1/MAX_STRIP_TICKS of its width
MAX_STRIP_TICKS = 400


def parse_at(text: str | None) -> pd.Timestamp | None:
    """``?at=`` to a UTC time; :class:`TimeError` for anything that is not RFC 3339 with an offset."""
    if text is None or text == "":
        return None
    return pd.Timestamp(parse_ts(text), unit="us", tz="UTC")


def _slider_marks(positions: list[float], times: list[str], index: int) -> dict[float, str]:
    """The slider's marks (``step=None``: a drag snaps to them), most unlabelled: every stop, or
    for a long history one per 1/480 of the width plus the labelled ones and the current step."""
    labels = f.slider_labels(positions, times, MIN_LABEL_GAP)
    keep = [i for i, label in enumerate(labels) if label] + [index]
    return {positions[i]: labels[i] for i in f.slider_mark_indices(positions, keep)}


def _slider_index(times: list[pd.Timestamp], at: pd.Timestamp | None) -> int:
    if at is None:
        return len(times)
    idx = 0
    for i, t in enumerate(times):
        if t <= at:
            idx = i
    return idx


def _bad_parameter(fid: str, name: str, value: str, why: str, data: RunData) -> html.Main:
    times = f.history_times(data.state_history(fid))
    links = [(f"{fid} as of the run", c.folder_href(fid))]
    if times:
        links += [
            (f"{fid} at its first change ({ts_text(times[0])})", c.folder_href(fid, at=ts_text(times[0]))),
            (f"{fid} at its last change ({ts_text(times[-1])})", c.folder_href(fid, at=ts_text(times[-1]))),
        ]
    return c.not_found(f"Bad {name} parameter", f"{name}={value!r}: {why}", links)


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


def time_strip(times: list[pd.Timestamp], end: Any, index: int) -> html.Div:
    """The change times on a time axis (ticks spaced by time); the slider's step highlighted."""
    fractions = f.time_ticks(times, end)
    seen: set[int] = set()
    ticks = []
    for i, (t, x) in enumerate(zip(times, fractions, strict=True)):
        slot = round(x * MAX_STRIP_TICKS)
        if slot in seen and i != index:  # one tick per slot of the strip: a long history stays light
            continue
        seen.add(slot)
        ticks.append(
            html.Span(
                className="pf-tick" + (" pf-tick-on" if i == index else ""),
                style={"left": f"{100 * x:.3f}%"},
                title=ts_text(t),
                **c.html_attrs({"data-at": ts_text(t)}),
            )
        )
    return html.Div(
        frozen(ticks),
        className="pf-time-strip",
        id="folder-time-strip",
        title="each change of the folder's state tables, placed by time",
    )


def layout(
    fid: str | None = None,
    at: str | None = None,
    request: str | None = None,
    view: str | None = None,
    **_query: Any,
) -> html.Main:
    data = current_data()
    if data is None:
        return c.no_run(str(settings().data_dir))
    fid = fid or ""
    # the page is a function of the run and the URL: built once, then served from the shared cache
    # (the names changed with the forecast on the verdict and the timeline: a shared cache kept
    # across an upgrade holds pages and sections of the old shape under the old names)
    return data.memo(
        "folder_page_with_forecast",
        (fid, at or "", request or "", view or ""),
        lambda: folder_page(data, fid, at, request, view),
    )


def folder_page(
    data: RunData, fid: str, at: str | None, request: str | None, view: str | None = None
) -> html.Main:
    """The folder at ``at`` (None: as of the run), ``request``'s candidates explained, the matrix
    in ``view``; a folder the run has not, or a time that is none, gets a page saying so."""
    folder = data.folder(fid)
    if folder is None:
        return _folder_not_found(data, fid)
    try:
        at_ts = parse_at(at)
    except TimeError as e:
        return _bad_parameter(fid, "at", at or "", f"{e}; use a time like 2026-11-02T08:15:00Z", data)
    page = Page(
        data,
        fid,
        folder,
        at,
        at_ts,
        data.summary(),
        f.history_times(data.state_history(fid)),
        matrix_mode(data, fid, view),
    )
    requests = folder_requests(data, fid)
    replicas_view, entries_view, step, timeline_view, pending_view = replay(data, fid, at_ts)
    return html.Main(
        className="pf-page",
        children=[
            *_heading(page),
            _who_section(page, step),
            c.section(
                "Replicas",
                html.Div(replicas_view, id="folder-replicas"),
                help="Health at the slider's step (as of the run: on a store that is down, the health is "
                "as last known).",
                term="overdue",
            ),
            c.section(
                "Delete-pending replicas",
                html.Div(pending_view, id="folder-pending"),
                help="Content only this replica holds: the replica is deleted once none is left.",
                term="delete-pending",
            ),
            c.section(
                "Backfill entries",
                html.Div(entries_view, id="folder-entries"),
                id="pf-entries-section",
                help="At the slider's step: entries opened by then, open unless closed by then, requests "
                "made by then.",
            ),
            _timelines_section(
                timeline_view,
                f.entry_timeline_marks(data.backfill_entries(fid=fid), requests),
                forecast=not data.forecast(fid=fid).empty,
            ),
            _requests_section(page, requests, request),
            _responders_section(data, fid),
        ],
    )


def _folder_not_found(data: RunData, fid: str) -> html.Main:
    """A FID the run has not: the folders whose FID or path come near it, to follow."""
    folders = data.folders()
    choices = [
        (str(r.fid), f"{r.fid} {r.path}", c.folder_href(r.fid)) for r in folders.itertuples(index=False)
    ]
    choices += [
        (str(r.path), f"{r.fid} {r.path}", c.folder_href(r.fid))
        for r in folders.itertuples(index=False)
        if isinstance(r.path, str)
    ]
    return c.not_found(
        "Folder not found", f"This run has no folder with FID {fid!r}.", c.suggestions(fid, choices)
    )


def _heading(page: Page) -> list[Any]:
    """The page's state for the callbacks (the slider's stops), then its top: the folder's path
    as links, its FID and path, the report of what is on screen, its verdict, its replica list."""
    fid, folder = page.fid, page.folder
    return [
        dcc.Store(id="folder-fid", data=fid),
        dcc.Store(id="folder-view", data=page.mode),
        dcc.Store(id="folder-times", data=page.texts),
        dcc.Store(id="folder-positions", data=page.positions),
        dcc.Store(id="folder-url-sync"),
        html.Nav(
            html.Ol(
                [
                    html.Li(
                        dcc.Link(
                            f.folder_label(f_id, path if path != f_id else None) or f_id,
                            href=c.folder_href(f_id),
                        )
                    )
                    for f_id, path in page.data.breadcrumb(fid)
                ]
            ),
            className="pf-breadcrumb",
            **c.html_attrs({"aria-label": "folder path"}),
        ),
        html.H1(
            [
                html.Span("Folder "),
                html.Span(fid, className="pf-mono"),
                " ",
                html.Span(
                    c.path_text(f.folder_label(fid, folder.get("path"))),
                    id="pf-folder-path",
                    className="pf-folder-path",
                ),
                *((" ", c.term_link("hierarchy")) if fid == f.HIERARCHY_FID else ()),
            ]
        ),
        c.download_link(c.report_href(fid, page.url_at), "folder-report-link"),
        verdict_view(page.data, fid),
        html.P(
            [
                "Replica list ",
                c.term_link("replica-list"),
                ": ",
                *[html.Span([c.link_store(s, {}), " "]) for s in folder["replicas"]],
                f" · run as of {f.fmt_time(page.summary.get('as_of'))}",
            ]
        ),
    ]


def _who_section(page: Page, step: html.Div) -> html.Section:
    """Who knows what: the slider that replays the state tables, and the matrix at its step."""
    return c.section(
        "Who knows what",
        _slider(page, step) if page.times else html.P("This folder has no history rows."),
        view_switch(page.fid, page.url_at, page.mode),
        html.Div(matrix_view(page.data, page.fid, page.at_ts, page.mode), id="folder-matrix"),
        id="pf-who",
        help="One column per observer (its replication state table), one row per subject. "
        "Lag is against the subject's own row at the same time.",
    )


def _slider(page: Page, step: html.Div) -> html.Div:
    """The slider at the asked time's step, the time it shows, the change times on a time axis,
    and what changed at that step."""
    positions, index = page.positions, _slider_index(page.times, page.at_ts)
    return html.Div(
        className="pf-slider",
        **c.html_attrs({"data-positions": json.dumps(positions)}),
        children=[
            html.Label("Replay the state tables at", htmlFor="folder-slider"),
            # placed by time: seconds since the first change; step=None stops only at the
            # changes and the as-of (the keyboard steps from change to change: assets/pfscope-slider.js)
            dcc.Slider(
                id="folder-slider",
                min=0,
                max=positions[-1],
                step=None,
                value=positions[index],
                marks=_slider_marks(positions, page.texts, index),
                updatemode="mouseup",
                allow_direct_input=False,
            ),
            html.P(
                id="folder-at",
                className="pf-at",
                **c.html_attrs({"aria-live": "polite"}),
                children=f"at {ts_text(page.at_ts)}" if page.at_ts is not None else "as of the run",
            ),
            time_strip(page.times, page.summary.get("as_of"), index),
            step,
        ],
    )


def _timelines_section(timeline_view: Any, marks: pd.DataFrame, forecast: bool = False) -> html.Section:
    """The entries' timelines; the help names only the marks they draw."""
    events = set(marks["event"])
    return c.section(
        "Entry timelines",
        html.Div(timeline_view, id="folder-timeline-wrap"),
        help="Solid line: local entry, dotted: remote. Filled diamond: observed request (in the log); "
        "open diamond: expected (the model's)."
        + (" Grey ticks: due times." if "due" in events else "")
        + (" Triangle: next due." if "next due" in events else "")
        + (
            " Crossed diamond: an observed request its source had not processed by the as-of "
            "(in transit, queued or expired: see the hover)."
            if (marks["kind"] == UNPROCESSED).any()
            else ""
        )
        + " A red line marks the slider's step."
        + (
            " As of the run, after the as-of (grey dashed line), the forecast in hollow grey: its "
            "requests (tall diamond, on their entry's row), their replies (circle) and each lacking "
            "replica's in-sync time (star) and its bound (bar); the forecast's explanation is linked "
            "from each verdict line."
            if forecast
            else ""
        ),
    )


def _requests_section(page: Page, requests: pd.DataFrame, request: str | None) -> html.Section:
    """Every backfill request of the folder, and the candidates of the one asked for (a request
    the folder has not is said so, and none is shown)."""
    fid, at = page.fid, page.at
    options = f.request_options(requests)
    if request and request not in {o["value"] for o in options}:
        request_note: html.P | html.Div = html.P(
            f"request={request!r} is not a request of this folder.", className="pf-error"
        )
        request = None
    else:
        request_note = html.Div()
    return c.section(
        "Backfill requests and their candidates",
        html.Label("Request", htmlFor="folder-request"),
        dcc.Dropdown(
            id="folder-request",
            options=options,
            value=request,
            placeholder="Select a request",
            clearable=True,
        ),
        request_note,
        html.Div(candidates_view(page.data, request), id="folder-candidates"),
        html.H3("Every request of this folder"),
        c.table(
            requests.sort_values(["at", "entry_id", "attempt"]) if not requests.empty else requests,
            [
                ("at", "at"),
                ("observer", "store"),
                ("entry_id", "entry"),
                ("attempt", "attempt"),
                ("kind", "kind"),
                ("algorithm", "algorithm"),
                ("source", "source"),
                ("cnset", "asked for"),
                ("reached_text", "did the source process it?"),
                ("due_at", "due"),
                ("model_chose", "model's choice"),
                ("explain", ""),
            ],
            {
                "observer": c.link_store,
                "source": c.link_store,
                "cnset": c.as_cnset,
                "explain": lambda _v, r: (
                    dcc.Link(
                        "candidates",
                        href=c.folder_href(fid, at=at, request=f"{r['entry_id']}:{int(r['attempt'])}"),
                    )
                    if r.get("entry_id")
                    else ""
                ),
            },
            id="pf-request-list",
        ),
        id="pf-requests",
        help="Observed: sent by the store (in the log); expected: due by the model. "
        "A request with no entry overlapped no open entry.",
    )


def _responders_section(data: RunData, fid: str) -> html.Section:
    """The folder's status requests, each responder named by the log set against the model's."""
    return c.section(
        "Status requests and responders",
        c.table(
            f.responder_rows(data.responders(fid=fid)),
            [
                ("sent_at", "sent"),
                ("msg", "message"),
                ("requester", "requester"),
                ("responder", "responder"),
                ("position", "position"),
                ("group", c.with_term("chosen by", "responder-groups")),
                ("expected", c.with_term("model names it", "model-names")),
                ("observed", "named in log"),
                ("agreement", "model vs log"),
                ("should_respond", c.with_term("should respond (newer content)", "should-respond")),
            ],
            {
                "requester": c.link_store,
                "responder": c.link_store,
                "group": lambda v, _r: f.responder_group_text(v),
                "expected": c.as_yes_no,
                "observed": c.as_yes_no,
                "should_respond": c.as_yes_no,
            },
            id="pf-responders",
        ),
        help="Model names it: on the responder list the model says the requester should name. Should respond: "
        "the responder holds newer content than the requester (a named store can have nothing to send).",
        term="responder-groups",
    )


@callback(
    Output("folder-matrix", "children"),
    Output("folder-at", "children"),
    Output("folder-report-link", "href"),
    Output("folder-replicas", "children"),
    Output("folder-entries", "children"),
    Output("pf-step", "children"),
    Output("folder-timeline-wrap", "children"),
    Output("folder-time-strip", "children"),
    Output("folder-pending", "children"),
    Input("folder-slider", "value"),
    State("folder-fid", "data"),
    State("folder-times", "data"),
    State("folder-positions", "data"),
    State("folder-view", "data"),
    prevent_initial_call=True,
)
def replay_matrix(
    value: float | None, fid: str, times: list[str], positions: list[float], mode: str | None = None
) -> tuple[Any, ...]:
    """Slider moved: the matrix, replicas, entries, timeline and delete-pending replicas at that
    change time (the last stop: as of the run); the download link follows, so the report shows
    what the page shows."""
    data = current_data()
    if data is None or value is None:
        return (dash.no_update,) * 9
    try:  # the times come back from the browser: a tampered request gets no update, not a 500
        i = f.position_index(value, positions)
        if i is None or len(positions) != len(times) + 1:
            return (dash.no_update,) * 9
        at = parse_at(times[i]) if i < len(times) else None
        moments = [parse_at(t) for t in times]
    except (TimeError, TypeError, ValueError):
        return (dash.no_update,) * 9
    label = f"at {times[i]}" if at is not None else "as of the run"
    mode = mode if mode in ("counts", "full") else "full"
    matrix = data.memo("folder_matrix_framed", (fid, label, mode), lambda: matrix_view(data, fid, at, mode))
    replicas, entries, step, timeline, pending = data.memo(
        "folder_replay_with_forecast", (fid, label), lambda: replay(data, fid, at)
    )
    strip = time_strip(moments, data.summary().get("as_of"), i).children
    return (
        matrix,
        label,
        c.report_href(fid, times[i] if at is not None else None),
        replicas,
        entries,
        step.children,
        timeline,
        strip,
        pending,
    )


@callback(
    Output("folder-candidates", "children"),
    Input("folder-request", "value"),
    prevent_initial_call=True,
)
def show_candidates(request: str | None) -> Any:
    data = current_data()
    if data is None:
        return dash.no_update
    return candidates_view(data, request)


# Mirror the controls into the address bar without re-rendering the page (shareable URL).
clientside_callback(
    """
    function(value, request, times, positions) {
        const params = new URLSearchParams(window.location.search);
        let index = -1;
        if (value !== null && value !== undefined && positions) {
            index = positions.reduce((best, p, k) => Math.abs(p - value) < Math.abs(positions[best] - value) ? k : best, 0);
        }
        if (index >= 0 && index < times.length) { params.set('at', times[index]); }
        else { params.delete('at'); }
        if (request) { params.set('request', request); } else { params.delete('request'); }
        const q = params.toString();
        const url = window.location.pathname + (q ? '?' + q : '');
        if (url !== window.location.pathname + window.location.search) {
            window.history.replaceState(window.history.state, '', url);
        }
        return url;
    }
    """,
    Output("folder-url-sync", "data"),
    Input("folder-slider", "value"),
    Input("folder-request", "value"),
    State("folder-times", "data"),
    State("folder-positions", "data"),
    prevent_initial_call=True,
)
