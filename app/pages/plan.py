"""``/plan?run=<run>&action=...&action=...``: is it safe to do X? A dry run of maintenance, replica
changes, decommissioning and restores on the published run (``make_plan``), as Ceph's
``ok-to-stop`` or Cruise Control's dry run answer it: the verdict first, then, beside the baseline
(the forecast without the plan), the content at risk at each step, the replicas whose in-sync time
moves, the backfill per store pair, when everything settles, and a timeline of the play.

The actions are in the URL, so the page can be sent to a change board; the form rewrites it. A
plan is never written into the run. Logic: ``figures.plan``; the report: ``report.plan``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import dash
import pandas as pd
from dash import Input, Output, State, callback, dcc, html

from pfscope.app import components as c
from pfscope.app.data import RunData
from pfscope.app.figures import plan as fp
from pfscope.app.runtime import current_data, settings
from pfscope.spark_jobs.compute.planning import Plan, add_suggestions, make_plan
from pfscope.spark_jobs.model.errors import OperatorError
from pfscope.spark_jobs.model.forecast.plan import FORMS
from pfscope.spark_jobs.model.forecast.restore import restore_stories, story_lines
from pfscope.spark_jobs.model.forecast.summary import suggestion_texts
from pfscope.spark_jobs.model.forecast.verdict import PlanResult
from pfscope.spark_jobs.runtime.collector import cyclic_gc_paused

dash.register_page(__name__, path="/plan", name="Plan", title="pfscope · plan")

#: the most folders the folder picker offers at once (type to narrow)
FOLDER_CHOICES = 50
#: the most reasons the verdict lists (the report lists them all)
REASONS = 100
#: the most rows each of the page's tables shows (a decommission moves thousands of replicas;
#: the report lists every row)
ROWS = 100


def layout(action: str | list[str] | None = None, run: str | None = None, **_query: Any) -> html.Main:
    data = current_data()
    if data is None:
        return c.no_run(str(settings().data_dir))
    actions = fp.actions_of(action)
    if run and run != data.run_id:
        return _stale(data, actions, run)
    children: list[Any] = [
        html.H1("Plan: is it safe?"),
        html.P(
            [
                "A dry run on run ",
                html.Span(data.run_id, className="pf-mono"),
                f", as of {fp.ts_text(_as_of(data), '')}: the model's rules played forward under the plan "
                "and without it (what is so, by the forecast; not a store's belief). Nothing is written "
                "into the run. ",
                c.term_link("plan", "What a plan is"),
            ],
            className="pf-muted",
        ),
        _actions_section(data, actions),
        _form_section(data, actions),
    ]
    if actions:  # the same plan on the same run gives the same page: played once per cache
        children += data.memo("plan_result", actions, lambda: _result(data, actions))
    return html.Main(children, className="pf-page", id="plan-page")


def _as_of(data: RunData) -> int | None:
    stamp = data.summary().get("as_of")
    return None if stamp is None or pd.isna(stamp) else int(pd.Timestamp(stamp).value // 1000)


def _stale(data: RunData, actions: list[str], run: str) -> html.Main:
    """A plan made on an older run: its result would be the old run's, so it is not shown."""
    return html.Main(
        className="pf-page",
        id="plan-page",
        children=[
            html.H1("Plan: is it safe?"),
            html.P(
                [
                    f"This plan was made on run {run}; run {data.run_id} is published since. ",
                    dcc.Link("Recompute", href=fp.plan_href(actions), id="plan-recompute"),
                    " on the latest run (times relative to the as-of, such as +6h, count from its as-of).",
                ],
                id="plan-stale",
                role="status",
                className="pf-banner",
            ),
            html.Ul([html.Li(a, className="pf-mono") for a in actions], id="plan-actions"),
        ],
    )


def _actions_section(data: RunData, actions: list[str]) -> html.Section:
    items = [
        html.Li(
            [
                html.Span(a, className="pf-mono"),
                " ",
                dcc.Link(
                    "remove",
                    href=fp.plan_href(actions[:i] + actions[i + 1 :], data.run_id),
                    className="plan-remove",
                    title=f"The plan without {a}",
                ),
            ]
        )
        for i, a in enumerate(actions)
    ]
    return c.section(
        "The plan",
        html.Ol(items, id="plan-actions")
        if items
        else html.P("No action yet: add one below.", className="pf-muted", id="plan-actions"),
        help="Its actions, in the URL: send this page's address to the change board. Forms: "
        + "; ".join(FORMS)
        + ". Times are RFC 3339 or relative to the as-of (+30m, +6h, +2d).",
    )


def _form_section(data: RunData, actions: list[str]) -> html.Section:
    stores = sorted(data.stores()["store"].astype(str))
    return c.section(
        "Add an action",
        html.Div(
            [
                dcc.Store(id="plan-state", data={"actions": actions, "run": data.run_id}),
                html.Label(
                    ["what", dcc.Dropdown(fp.VERBS, "down", id="plan-verb", clearable=False)],
                    className="plan-field",
                ),
                html.Label(
                    ["store", dcc.Dropdown(stores, id="plan-store", placeholder="store")],
                    className="plan-field",
                ),
                html.Label(
                    [
                        "folder (add, remove)",
                        dcc.Dropdown([], id="plan-fid", placeholder="type a FID or path"),
                    ],
                    className="plan-field",
                ),
                html.Label(
                    ["at", dcc.Input(id="plan-at", type="text", placeholder="+2h (default: as-of)")],
                    className="plan-field",
                ),
                html.Label(
                    ["until (down)", dcc.Input(id="plan-until", type="text", placeholder="+8h")],
                    className="plan-field",
                ),
                html.Label(
                    [
                        "backup taken (restore)",
                        dcc.Input(id="plan-backup", type="text", placeholder="RFC 3339"),
                    ],
                    className="plan-field",
                ),
                dcc.Checklist(
                    [{"label": " immediately (decommission)", "value": "yes"}], [], id="plan-immediately"
                ),
                html.Button("Add to the plan", id="plan-add", type="button", n_clicks=0),
            ],
            className="plan-form",
        ),
        html.P(id="plan-form-error", role="alert", className="pf-error"),
    )


def _result(data: RunData, actions: list[str]) -> list[Any]:
    """The plan made and drawn with the cyclic garbage collector paused (``compute.planning``'s
    docstring): the page's components would have it scan the plan's results again and again."""
    with cyclic_gc_paused():
        try:
            plan = _made(str(settings().data_dir), data.run_id, tuple(actions))
        except OperatorError as e:  # PlanError: one line saying what to fix
            return [
                html.P(
                    f"This plan cannot be played: {e}. Fix or remove that action.",
                    id="plan-error",
                    role="alert",
                    className="pf-banner",
                )
            ]
        return _shown(data, plan, actions)


@lru_cache(maxsize=2)
def _made(data_dir: str, run_id: str, actions: tuple[str, ...]) -> Plan:
    """The plan without its suggestions, kept in this process for the suggestions' callback that
    follows the page (``run_id``: a newer run is another plan)."""
    return make_plan(data_dir, list(actions), suggest=False)


def _reasons(reasons: list[str]) -> html.Ul:
    shown, more = fp.first_reasons(reasons, REASONS)
    items = [html.Li(r) for r in shown]
    if more:
        items.append(html.Li(more, className="pf-muted"))
    return html.Ul(items, id="plan-reasons")


def _suggestions_slot(data: RunData, plan: Plan, actions: list[str]) -> html.Section | None:
    """Where what would be safe instead goes (only for a plan that is not safe): filled by
    :func:`suggestions_of` once the verdict is on screen, since each variant plays the folders at
    issue again (seconds, for a plan over a store's folders)."""
    if plan.result.safe:
        return None
    return c.section(
        "Safe instead",
        dcc.Store(id="plan-suggest-ask", data={"run": data.run_id, "actions": actions}),
        html.Div(
            html.P(
                "Trying later starts, stores brought back first and replicas added first...",
                className="pf-muted",
            ),
            id="plan-suggestions-slot",
            **c.html_attrs({"aria-live": "polite"}),
        ),
        help="The smallest changes to this plan that are safe on the folders where it is not: start later, "
        "bring a store that is down back first, or add a replica first. Each opens as a plan; its verdict "
        "there is the whole plan's.",
    )


def suggestions_list(data: RunData, plan: Plan) -> Any:
    """The safe variants of a plan that is not safe, each a plan to open, or why there is none."""
    items = [
        html.Li(
            [
                s.why + " ",
                dcc.Link("open this plan", href=fp.plan_href(suggestion_texts(s), data.run_id)),
                html.Ul([html.Li(t, className="pf-mono") for t in suggestion_texts(s)]),
            ]
        )
        for s in plan.suggestions
    ]
    if items:
        return html.Ul(items, id="plan-suggestions")
    empty = (
        plan.unsuggested
        or "none found: no later start, no store brought back first and no replica added first makes it safe"
    )
    return html.P(empty, id="plan-suggestions", className="pf-muted")


@callback(Output("plan-suggestions-slot", "children"), Input("plan-suggest-ask", "data"))
def suggestions_of(ask: dict[str, Any] | None) -> Any:
    """The ``Safe instead`` section's list, after the page: the plan's variants tried (once per run
    and plan, shared through the run's cache)."""
    data = current_data()
    if not ask or data is None:
        return dash.no_update
    if ask.get("run") != data.run_id:
        return html.P(
            f"Run {data.run_id} is published since this plan was made: reload.", id="plan-suggestions"
        )
    actions = [str(a) for a in ask.get("actions") or []]

    def tried() -> Any:
        plan = _made(str(settings().data_dir), data.run_id, tuple(actions))
        if plan.run.run_id != data.run_id:  # published between the page and this callback
            return html.P("A newer run is published: reload.", id="plan-suggestions")
        add_suggestions(plan)
        return suggestions_list(data, plan)

    try:
        return data.memo("plan_suggestions", actions, tried)
    except OperatorError as e:
        return html.P(f"No suggestion: {e}.", id="plan-suggestions", className="pf-muted")


def _shown(data: RunData, plan: Plan, actions: list[str]) -> list[Any]:
    return [
        _verdict_section(data, plan, actions),
        _suggestions_slot(data, plan, actions),
        *_restore_sections(plan),
        _risks_section(plan.result),
        _moved_section(plan),
        _traffic_section(plan.result),
        _timeline_section(plan),
    ]


def _verdict_section(data: RunData, plan: Plan, actions: list[str]) -> html.Section:
    """Is it safe: the verdict, its reasons, when it settles, what is decommissioned, the report."""
    result = plan.result
    return html.Section(
        [
            html.H2(
                fp.verdict_line(result),
                id="plan-verdict",
                className=f"plan-verdict plan-{'safe' if result.safe else 'unsafe'}",
            ),
            _reasons(result.reasons) if result.reasons else None,
            html.P(fp.settles_text(result), id="plan-settles"),
            *(
                html.P(line, className="plan-decommissioned")
                for line in fp.decommissioned_lines(plan.played.decommissioned)
            ),
            html.P(
                c.download_link(fp.plan_report_href(actions, data.run_id), "plan-report-link"),
                className="plan-download",
            ),
        ],
        className="pf-section",
        id="plan-verdict-section",
    )


def _restore_sections(plan: Plan) -> list[html.Section]:
    """Each store restored to an older copy: what it loses, backfills and how long it takes."""
    stories = restore_stories(plan.played, plan.result)
    return [
        c.section(
            f"Restoring {story.restore.store}",
            html.Pre("\n".join(story_lines(story)[1:]), className="plan-restore"),
            help="What the store loses (its changes after the backup that no other replica holds), what it "
            "backfills and from whom, and how long the status requests, time-outs and retries take, by "
            "the plan's play; docs/model.md says what the model cannot know of a restore.",
        )
        for story in stories
    ]


def _risks_section(result: PlanResult) -> html.Section:
    return c.section(
        "Content at risk, step by step",
        c.table(
            fp.risk_frame(result),
            fp.RISK_HEADS,
            {"fid": c.link_fid, "store": c.link_store, "cns": c.as_cnset},
            id="plan-risks",
            limit=ROWS,
        )
        if result.at_risk
        else html.P("None: no step leaves content held only on a store that is going.", id="plan-risks"),
        help="Under the plan: the CNs only one store holds when it goes down, is removed from a list or "
        "is restored to an older copy, and when another replica that is up holds them again. Without "
        "the plan (the baseline) nothing is put at risk: it takes no action.",
    )


def _moved_section(plan: Plan) -> html.Section:
    result = plan.result
    return c.section(
        "Replicas whose in-sync time moves",
        c.table(
            fp.moved_frame(result, plan.played.played),
            fp.MOVED_HEADS,
            {"store": c.link_store, "fid": c.link_fid},
            id="plan-moved",
            limit=ROWS,
        )
        if result.changed
        else html.P(
            "None: every replica the plan touches gets in sync when it would without it.", id="plan-moved"
        ),
        help="Each replica's in_sync_at by the forecast, without the plan and under it.",
        term="forecast",
    )


def _traffic_section(result: PlanResult) -> html.Section:
    return c.section(
        "Backfill traffic per store pair",
        c.table(
            fp.traffic_frame(result),
            fp.TRAFFIC_HEADS,
            {"sender": c.link_store, "recipient": c.link_store},
            id="plan-traffic",
        )
        if result.traffic
        else html.P("The plan changes no pair's traffic.", id="plan-traffic"),
        help="The folder messages of the touched folders in the play, per pair where the plan changes "
        "them: backfill requests, the CNs their responses carry, and all messages.",
    )


def _timeline_section(plan: Plan) -> html.Section:
    result = plan.result
    return c.section(
        "Timeline of the play",
        dcc.Graph(
            figure=fp.timeline_figure(plan.played.played, result, plan.run.as_of),
            id="plan-timeline",
            config={"displaylogo": False, "responsive": True},
            className="pf-figure",
        ),
        c.table(
            fp.played_frame(plan.played.played),
            [("at", "at"), ("store", "store"), ("what", "step")],
            id="plan-steps",
            limit=ROWS,
        ),
        help="A row per store: the plan's steps (diamonds), the content at risk (bars, until it is safe "
        "again), each moved replica's in-sync time without the plan (hollow) and under it (filled); "
        "dotted: the as-of, dashed: when everything settles.",
    )


@callback(
    Output("plan-fid", "options"),
    Input("plan-verb", "value"),
    Input("plan-store", "value"),
    Input("plan-fid", "search_value"),
    State("plan-fid", "value"),
)
def folder_choices(
    verb: str | None, store: str | None, search: str | None, chosen: str | None
) -> list[dict[str, str]]:
    """The folders the action can name: for remove, those listing the store; for add, the others."""
    data = current_data()
    if data is None or verb not in fp.FOLDER_VERBS or not store:
        return []
    folders = data.memo("plan_folders", (), lambda: data.table("folders", ["fid", "path", "replicas"]))
    return fp.folder_options(folders, store, verb == "add", search or "", chosen, FOLDER_CHOICES)


@callback(
    Output("pf-nav-location", "href", allow_duplicate=True),
    Output("plan-form-error", "children"),
    Input("plan-add", "n_clicks"),
    State("plan-state", "data"),
    State("plan-verb", "value"),
    State("plan-store", "value"),
    State("plan-fid", "value"),
    State("plan-at", "value"),
    State("plan-until", "value"),
    State("plan-backup", "value"),
    State("plan-immediately", "value"),
    prevent_initial_call=True,
)
def add_action(
    _clicks: int,
    state: dict[str, Any],
    verb: str | None,
    store: str | None,
    fid: str | None,
    at: str | None,
    until: str | None,
    backup: str | None,
    immediately: list[str] | None,
) -> tuple[Any, Any]:
    if not _clicks:  # Dash may call it as the page's components appear: only a click adds
        return dash.no_update, dash.no_update
    try:
        text = fp.compose_action(verb, store, fid, at, until, backup, bool(immediately))
    except ValueError as e:
        return dash.no_update, str(e)
    return fp.plan_href([*state["actions"], text], state["run"]), ""
