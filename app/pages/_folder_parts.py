"""Parts of the folder page built outside its layout and callbacks: the verdict, the matrix in
its two views (CN sets or counts only), and a request's candidates explained. (A module whose
name starts with ``_`` is not a Dash page.)"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from dash import dcc, html

from pfscope.app import components as c
from pfscope.app import figures as f
from pfscope.app import matrix_table as mt
from pfscope.app.data import RunData, matrix_frame
from pfscope.app.figures.text import ts_text
from pfscope.app.frozen import frozen


@dataclass
class Page:
    """What the folder page's sections are built from (here, not in the page's module: Dash runs a
    page's module before it is in ``sys.modules``, where a dataclass looks its module up): the folder, the time asked for (``at`` as the
    URL gives it, ``at_ts`` parsed: None as of the run), the folder's change times and the
    slider's stops, placed by time (the last: the run's as-of)."""

    data: RunData
    fid: str
    folder: dict[str, Any]
    at: str | None
    at_ts: pd.Timestamp | None
    summary: dict[str, Any]
    times: list[pd.Timestamp]
    mode: str  # the matrix's view
    texts: list[str] = field(init=False)  # the change times as the URL and the slider's labels print them
    positions: list[float] = field(init=False)

    def __post_init__(self) -> None:
        self.texts = [ts_text(t) for t in self.times]
        self.positions = f.slider_positions(self.times, self.summary.get("as_of"))

    @property
    def url_at(self) -> str | None:
        """The time the links the page makes keep (none as of the run)."""
        return self.at if self.at_ts is not None else None


def verdict_line(fid: str, v: f.Verdict) -> list[Any]:
    """A verdict's words, its forecast a link to the forecast's explanation (``/forecast``)."""
    if not v.forecast:
        return [v.text]
    return [
        v.head(),
        dcc.Link(
            v.forecast,
            href=c.forecast_href(fid, v.store),
            className="pf-forecast-link",
            title=f"Why? {v.store}'s forecast explained: its requests, sources and transit times",
        ),
        ".",
    ]


def verdict_view(data: RunData, fid: str) -> html.Section:
    """The verdict first: each unhealthy replica in one line, as of the run, most urgent first."""
    verdicts = f.folder_verdicts(
        data.replicas(fid=fid),
        data.backfill_entries(fid=fid),
        data.next_requests(fid=fid),
        data.stores(),
        data.summary().get("as_of"),
        data.forecast(fid=fid),
    )
    if not verdicts:
        body: Any = html.P("Every replica is in sync, as of the run.", className="pf-verdict-ok")
    else:
        body = html.Ul(
            [
                html.Li(
                    [*verdict_line(fid, v), *c.trace_link(fid, v.store, v.lacks_cnset)],
                    className=f"pf-verdict-{v.tier}",
                    **c.html_attrs({"data-store": v.store}),
                )
                for v in verdicts
            ]
        )
    return html.Section(
        [
            html.H2(
                ["Verdict ", c.term_link("overdue"), " ", c.term_link("lacks"), " ", c.term_link("forecast")]
            ),
            body,
        ],
        id="pf-verdict",
        className="pf-verdict",
        **c.html_attrs({"aria-label": "verdict, as of the run"}),
    )


def replicas_table(replicas: pd.DataFrame, down: set[str]) -> html.Div:
    """The folder's replicas: health with what each lacks (known missing and not told yet, so "in
    sync" never hides CNs a replica lacks), then what only it holds, each labelled by whose view
    it is. A replayed step (no columns of what is so) shows the store's belief only."""
    replicas = replicas.assign(store_status=["down" if s in down else "up" for s in replicas["store"]])
    so = "lacks_count" in replicas.columns
    if so:
        replicas = replicas.assign(
            lacks=[f.lacks_summary(f.Lacks.of(r)) for r in replicas.to_dict("records")]
        )
    columns: list[tuple[str, Any]] = [
        ("store", "store"),
        ("health", c.with_term("health", "in-sync")),
        ("on_list", c.with_term("on list", "replica-list")),
        ("open_entries", "open entries"),
    ]
    if so:
        columns += [("lacks", c.with_term("lacks", "lacks")), ("lacks_cnset", "lacks CNs")]
    columns += [
        ("missing_count", c.with_term("known missing", "missing")),
        ("missing_cnset", "known missing CNs"),
    ]
    if so:
        columns += [
            ("not_told_cnset", c.with_term("not told yet", "lacks")),
            ("at_risk_count", c.with_term("content at risk", "content-at-risk")),
            ("really_unique_count", c.with_term("really unique (only here)", "really-unique")),
        ]
    columns += [
        ("unique_count", c.with_term("believed unique (its store's belief)", "believed-unique")),
        ("next_status_at", c.with_term("next status", "next-status")),
    ]
    return c.table(
        replicas.sort_values("store") if not replicas.empty else replicas,
        columns,
        {
            "store": c.link_store,
            "health": c.as_health_lacks if so else c.as_health,
            "missing_cnset": c.as_cnset,
            "lacks_cnset": c.as_cnset,
            "not_told_cnset": c.as_cnset,
        },
        id="pf-replicas",
    )


def pending_table(replicas: pd.DataFrame) -> html.Div:
    """Delete-pending replicas: what only each holds (content at risk, what is so) beside what its
    store believes only it holds (by which Exchange deletes it)."""
    pending = replicas[replicas["health"] == "delete_pending"] if not replicas.empty else replicas
    so = "at_risk_count" in pending.columns
    columns: list[tuple[str, Any]] = [("store", "store"), ("delete_pending_since", "pending since")]
    if so:
        columns += [
            ("at_risk_count", c.with_term("content at risk (CNs)", "content-at-risk")),
            ("at_risk_cnset", "held alone"),
        ]
    columns += [
        ("unique_count", c.with_term("believed unique (its store's belief)", "believed-unique")),
        ("unique_cnset", "believed unique CNs"),
    ]
    return c.table(
        pending,
        columns,
        {"store": c.link_store, "unique_cnset": c.as_cnset, "at_risk_cnset": c.as_cnset},
        id="pf-pending",
    )


def folder_axes(data: RunData, fid: str) -> tuple[list[str], list[str]]:
    """Every observer and subject the folder's state tables ever had: the matrix's fixed frame."""

    def compute() -> tuple[list[str], list[str]]:
        history, state = data.state_history(fid), data.state_table(fid=fid)
        observers = set(history["observer"]) | set(state["observer"])
        subjects = set(history["subject"]) | set(state["subject"])
        return sorted(observers), sorted(subjects)

    return data.memo("folder_axes", (fid,), compute)


#: a matrix wider than this many observers opens with counts only (a wall of CN text otherwise)
COUNTS_ONLY_ABOVE = 6


def matrix_mode(data: RunData, fid: str, view: str | None) -> str:
    """``counts`` or ``full``: the URL's ``view``, else counts for a folder of many observers."""
    if view in ("counts", "full"):
        return view
    return "counts" if len(folder_axes(data, fid)[0]) > COUNTS_ONLY_ABOVE else "full"


def matrix_view(data: RunData, fid: str, at: pd.Timestamp | None, mode: str = "full") -> Any:
    """The matrix at ``at`` as one component (a large folder's has thousands of elements)."""
    observers, subjects = folder_axes(data, fid)
    return frozen(
        mt.matrix_table(
            matrix_frame(data, fid, at),
            observers=observers,
            subjects=subjects,
            fid=fid,
            counts_only=mode == "counts",
        )
    )


def view_switch(fid: str, at: str | None, mode: str) -> html.P:
    """A link to the other view of the matrix (the step kept)."""
    other = "full" if mode == "counts" else "counts"
    label = "Show the CN sets" if other == "full" else "Show counts only"
    return html.P(
        [
            ("Counts only. " if mode == "counts" else ""),
            dcc.Link(label, href=c.folder_href(fid, at=at, view=other), id="folder-view-switch"),
        ],
        className="pf-muted",
    )


def non_candidates_view(data: RunData, entry_id: str, cand: pd.DataFrame) -> list[Any]:
    """ "Why not that store?": the folder's other replicas that were not candidates, each with what
    the requester believed it held then (a store holding none of the remaining CNs is no candidate)."""
    entry = data.table("backfill_entries", ["entry_id", "observer", "fid"], {"entry_id": entry_id})
    if entry.empty:
        return []
    requester, fid = str(entry["observer"].iloc[0]), str(entry["fid"].iloc[0])
    folder = data.folder(fid)
    at = cand["at"].iloc[0] if "at" in cand.columns else None
    others = [
        s for s in (folder or {}).get("replicas", []) if s != requester and s not in set(cand["candidate"])
    ]
    if not others:
        return []
    believed = {}
    if at is not None and not pd.isna(at):
        cells = f.cells_at(data.state_history(fid), at)
        believed = {r.subject: r.cnset for r in cells.itertuples(index=False) if r.observer == requester}
    frame = pd.DataFrame(
        {
            "store": others,
            "believed": [believed.get(s) for s in others],
            "reason": [
                "holds none of the CNs the entry still needed, in " + requester + "'s belief"
                if s in believed
                else requester + " never heard from it: believed to hold nothing"
                for s in others
            ],
        }
    )
    return [
        html.H4(["Not candidates ", c.term_link("candidate")]),
        html.P(
            f"Other stores on the folder's replica list (as of the run) that were not candidates at this "
            f"attempt, with what {requester} believed each held then.",
            className="pf-help",
        ),
        c.table(
            frame,
            [("store", "store"), ("believed", f"{requester} believed it held"), ("reason", "why not")],
            {"store": c.link_store, "believed": c.as_cnset},
            id="pf-non-candidates",
        ),
    ]


def candidates_view(data: RunData, request: str | None) -> html.Div | html.P:
    """The candidate table of one request attempt, key by key (``backfill_candidates``)."""
    if not request:
        return html.P("Select a request to see how its sources were chosen.", className="pf-muted")
    entry_id, _, attempt = request.rpartition(":")
    if not entry_id or not attempt.isdigit():
        return html.P(f"request={request!r} is not <entry>:<attempt>.", className="pf-error")
    cand = f.explain_candidates(data.backfill_candidates(entry_id, int(attempt)))
    if cand.empty:
        return html.P(
            f"No candidate held any remaining CN at entry {entry_id} attempt {attempt}: "
            "the request had no sources.",
            className="pf-muted",
            id="pf-candidates",
        )
    algorithm = str(cand["algorithm"].iloc[0])
    keys = (
        "status (down/unavailable last) · preferred · cost · version · CNs held · name"
        if algorithm != "2000"
        else "groups 1-6 (site, cost, transit; 2000+ then 5.5) · first store holding all, else the most"
    )
    return html.Div(
        [
            html.P(
                f"Algorithm {algorithm} at {f.fmt_time(cand['at'].iloc[0])}. Sort keys, in order: {keys}."
            ),
            c.table(
                cand,
                [
                    ("rank", "rank"),
                    ("candidate", c.with_term("candidate", "candidate")),
                    ("group", c.with_term("search group", "search-groups")),
                    ("down", c.with_term("down", "down")),
                    ("unavailable", c.with_term("unavailable", "unavailable")),
                    ("preferred", c.with_term("preferred", "preferred")),
                    ("cost", c.with_term("cost", "cost")),
                    ("version", "version"),
                    ("holds_count", "CNs held"),
                    ("holds_all", "holds all"),
                    ("chosen", "chosen"),
                    ("assigned_cnset", "asked for"),
                    ("asked", "asked (log)"),
                    ("decided_by", "placed here by"),
                ],
                {
                    "candidate": c.link_store,
                    "assigned_cnset": c.as_cnset,
                    "cost": lambda v, _r: "no affinity" if v is None or pd.isna(v) else str(int(v)),
                },
                id="pf-candidates",
            ),
            *non_candidates_view(data, entry_id, cand),
        ]
    )
