"""The folder page's sections around what the slider replays: its heading (path, verdict, replica
list), who knows what and the slider with its time strip, the timelines, the requests and the
status requests. (A module whose name starts with ``_`` is not a Dash page.)"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
from dash import dcc, html

from pfscope.app import components as c
from pfscope.app import figures as f
from pfscope.app.data import RunData
from pfscope.app.figures.backfill import UNPROCESSED
from pfscope.app.figures.text import ts_text
from pfscope.app.frozen import frozen
from pfscope.app.pages._folder_parts import Page, candidates_view, matrix_view, verdict_view, view_switch

#: a change keeps its slider label only this far (a fraction of the slider) from the previous
#: labelled one and from "as of": at most 8 labels, ~128 px apart at 1440 px
MIN_LABEL_GAP = 1 / 8
#: the time strip under the slider draws at most one tick per 1/MAX_STRIP_TICKS of its width
MAX_STRIP_TICKS = 400


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


def heading(page: Page) -> list[Any]:
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


def who_section(page: Page, step: html.Div) -> html.Section:
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


def timelines_section(timeline_view: Any, marks: pd.DataFrame, forecast: bool = False) -> html.Section:
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


def requests_section(page: Page, requests: pd.DataFrame, request: str | None) -> html.Section:
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


def responders_section(data: RunData, fid: str) -> html.Section:
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
