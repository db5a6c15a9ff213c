"""``/folder/<FID>``: who knows what (seed 004's matrix) replayed in time, and the folder's backfill.

URL state: ``?at=<RFC 3339>`` replays the page through ``state_history`` (absent: the run's
as-of; a time between changes: the change at or before it); ``?request=<entry_id>:<attempt>``
selects a request whose candidates are explained. The slider's value is seconds since the
folder's first change: its stops (one per change, then the as-of) are spaced by time.
Controls update their sections by callback and mirror their state into the URL (replaceState),
so the address bar is always a link to what is on screen.
"""

from __future__ import annotations

from typing import Any

import dash
import pandas as pd
from dash import Input, Output, State, callback, clientside_callback, html

from pfscope.app import components as c
from pfscope.app import figures as f
from pfscope.app.data import RunData
from pfscope.app.figures.text import ts_text
from pfscope.app.pages._folder_parts import Page, candidates_view, matrix_mode, matrix_view
from pfscope.app.pages._folder_replay import folder_requests, replay
from pfscope.app.pages._folder_sections import (
    heading,
    requests_section,
    responders_section,
    time_strip,
    timelines_section,
    who_section,
)
from pfscope.app.runtime import current_data, settings
from pfscope.spark_jobs.model.timeutil import TimeError, parse_ts


def title(fid: str | None = None, **_: Any) -> str:
    """The tab names the folder, so several open folders are told apart."""
    return f"pfscope · folder {fid}" if fid else "pfscope · folder"


dash.register_page(__name__, path_template="/folder/<fid>", name="Folder", title=title)


def parse_at(text: str | None) -> pd.Timestamp | None:
    """``?at=`` to a UTC time; :class:`TimeError` for anything that is not RFC 3339 with an offset."""
    if text is None or text == "":
        return None
    return pd.Timestamp(parse_ts(text), unit="us", tz="UTC")


def _bad_parameter(fid: str, name: str, value: str, why: str, data: RunData) -> html.Main:
    times = f.history_times(data.state_history(fid))
    links = [(f"{fid} as of the run", c.folder_href(fid))]
    if times:
        links += [
            (f"{fid} at its first change ({ts_text(times[0])})", c.folder_href(fid, at=ts_text(times[0]))),
            (f"{fid} at its last change ({ts_text(times[-1])})", c.folder_href(fid, at=ts_text(times[-1]))),
        ]
    return c.not_found(f"Bad {name} parameter", f"{name}={value!r}: {why}", links)


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
        return c.folder_not_found(fid, data.folders(), c.folder_href, by_path=True)
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
            *heading(page),
            who_section(page, step),
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
            timelines_section(
                timeline_view,
                f.entry_timeline_marks(data.backfill_entries(fid=fid), requests),
                forecast=not data.forecast(fid=fid).empty,
            ),
            requests_section(page, requests, request),
            responders_section(data, fid),
        ],
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
