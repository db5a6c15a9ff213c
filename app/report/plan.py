"""The plan as a standalone report (the ``/plan`` page's "Download report", ``/plan-report``): the
same plan, verdict first, to attach to a change request. Everything from the data and the URL is
escaped (:mod:`.html`); the figure travels as JSON (:mod:`.document`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import pandas as pd

from pfscope.app.figures import plan as fp
from pfscope.app.report.cells import facts, section
from pfscope.app.report.document import Document
from pfscope.app.report.html import Html, table, tag
from pfscope.spark_jobs.compute.planning import Plan, make_plan
from pfscope.spark_jobs.model.errors import OperatorError
from pfscope.spark_jobs.model.forecast.restore import restore_stories, story_lines
from pfscope.spark_jobs.model.forecast.summary import suggestion_texts


def plan_filename(run_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", f"pfscope-plan-{run_id}") + ".html"


def _table(frame: pd.DataFrame, heads: Sequence[tuple[str, str]], numeric: Sequence[int] = ()) -> Html:
    return table(
        [h for _, h in heads],
        [[r[k] for k, _ in heads] for r in frame.to_dict("records")],
        numeric=numeric,
    )


def plan_report(plan: Plan, texts: Sequence[str]) -> str:
    """The report of a plan made (``texts``: its actions as the URL gives them)."""
    run = plan.run
    doc = Document(title=f"pfscope · plan · run {run.run_id}")
    doc.body.append(_verdict_section(plan))
    for story in restore_stories(plan.played, plan.result):
        doc.body.append(
            section(
                f"restore-{story.restore.store}",
                f"Restoring {story.restore.store}",
                tag("pre", "\n".join(story_lines(story)[1:])),
            )
        )
    if plan.suggestions:
        doc.body.append(_suggestions_section(plan))
    doc.body.append(section("actions", "The plan", tag("ol", *(tag("li", tag("code", t)) for t in texts))))
    doc.body.append(_at_risk_section(plan))
    doc.body.append(_moved_section(plan))
    doc.body.append(_traffic_section(plan))
    doc.body.append(_timeline_section(doc, plan))
    toc = [
        ("verdict", "Verdict"),
        ("actions", "The plan"),
        ("at-risk", "Content at risk"),
        ("moved", "In-sync times"),
        ("traffic", "Traffic"),
        ("timeline", "Timeline"),
    ]
    return doc.render(_header(plan, texts), toc, _footer(plan))


def _verdict_section(plan: Plan) -> Html:
    """Is it safe: the verdict, its reasons, when the organisation settles, what is decommissioned."""
    result = plan.result
    verdict = [
        tag("p", fp.verdict_line(result), id="verdict-line", class_="count"),
        tag("ul", *(tag("li", r) for r in result.reasons)) if result.reasons else Html(""),
        tag("p", fp.settles_text(result)),
        *(tag("p", line) for line in fp.decommissioned_lines(plan.played.decommissioned)),
        tag(
            "p",
            "What is so by the forecast (the model's rules played forward from every store's state at "
            "the as-of), under the plan and without it; not a store's belief.",
            class_="note",
        ),
    ]
    return section("verdict", "Is it safe?", *verdict)


def _suggestions_section(plan: Plan) -> Html:
    """The safe variants of a plan that is not safe, each with its actions."""
    return section(
        "suggestions",
        "Safe instead",
        tag(
            "ul",
            *(
                tag("li", s.why, tag("ul", *(tag("li", tag("code", t)) for t in suggestion_texts(s))))
                for s in plan.suggestions
            ),
        ),
    )


def _at_risk_section(plan: Plan) -> Html:
    risks = fp.risk_frame(plan.result)
    return section(
        "at-risk",
        "Content at risk, step by step",
        _table(risks, fp.RISK_HEADS) if not risks.empty else tag("p", "None."),
        tag(
            "p",
            "Without the plan (the baseline) nothing is put at risk: it takes no action.",
            class_="note",
        ),
    )


def _moved_section(plan: Plan) -> Html:
    moved = fp.moved_frame(plan.result, plan.played.played)
    return section(
        "moved",
        "Replicas whose in-sync time moves",
        _table(moved, fp.MOVED_HEADS) if not moved.empty else tag("p", "None."),
    )


def _traffic_section(plan: Plan) -> Html:
    traffic = fp.traffic_frame(plan.result)
    return section(
        "traffic",
        "Backfill traffic per store pair",
        _table(traffic, fp.TRAFFIC_HEADS, numeric=range(2, 8))
        if not traffic.empty
        else tag("p", "The plan changes no pair's traffic."),
    )


def _timeline_section(doc: Document, plan: Plan) -> Html:
    steps = plan.played.played
    return section(
        "timeline",
        "Timeline of the play",
        doc.figure(
            fp.timeline_figure(steps, plan.result, plan.run.as_of),
            "The plan's steps, content at risk and in-sync times by store",
        ),
        _table(fp.played_frame(steps), [("at", "at"), ("store", "store"), ("what", "step")]),
    )


def _header(plan: Plan, texts: Sequence[str]) -> Html:
    run = plan.run
    return tag(
        "header",
        tag("p", "pfscope plan report", class_="muted"),
        tag("h1", f"Plan: {fp.verdict_line(plan.result)}"),
        facts([("run", run.run_id), ("as of", fp.ts_text(run.as_of, "")), ("actions", len(texts))]),
        class_="report",
    )


def _footer(plan: Plan) -> Html:
    return tag(
        "footer",
        tag(
            "p",
            f"pfscope plan of run {plan.run.run_id}. Times are UTC. Nothing of the plan is written into the run.",
        ),
        class_="report",
    )


def _refusal(title: str, line: str) -> str:
    doc = Document(title=f"pfscope · plan · {title}")
    doc.body.append(tag("p", line, id="reason"))
    return doc.render(tag("header", tag("h1", title), class_="report"), [], Html(""))


def plan_report_response(
    data_dir: Any, latest_run: str, texts: Sequence[str], run: str | None
) -> tuple[int, str, str | None]:
    """(HTTP status, HTML, file name to download as; None for a refusal page)."""
    if run and run != latest_run:
        return (
            409,
            _refusal(
                "Plan made on an older run",
                f"This plan was made on run {run}; recompute it on run {latest_run}.",
            ),
            None,
        )
    if not texts:
        return 400, _refusal("No action", "The plan has no action: add one on the /plan page."), None
    try:
        plan = make_plan(data_dir, texts)
    except OperatorError as e:
        return 400, _refusal("This plan cannot be played", str(e)), None
    return 200, plan_report(plan, texts), plan_filename(plan.run.run_id)
