"""``/replicas?health=<health>``: every replica of one health, worst first; ``?at_risk=1``: the
replicas holding content at risk (the overview's headline links here). ``&store=`` narrows it.

Content at risk and what a replica lacks are what is so; a store's belief (the CNs it believes
only it holds, the CNs it knows it is missing) stands beside them, labelled as its belief.
"""

from __future__ import annotations

from typing import Any

import dash
import pandas as pd
from dash import dcc, html

from pfscope.app import components as c
from pfscope.app import figures as f
from pfscope.app.runtime import current_data, settings

dash.register_page(__name__, path="/replicas", name="Replicas", title="pfscope · replicas")

ROWS = 500

#: the replicas table's columns: what is so first, then the store's belief, each labelled
COLUMNS: list[tuple[str, Any]] = [
    ("store", "store"),
    ("fid", "FID"),
    ("path", "path"),
    ("health", c.with_term("health, and what it lacks", "lacks")),
    ("at_risk_count", c.with_term("content at risk (CNs)", "content-at-risk")),
    ("really_unique_count", c.with_term("really unique (only here)", "really-unique")),
    ("unique_count", c.with_term("believed unique (its store's belief)", "believed-unique")),
    ("lacks_count", c.with_term("lacks (CNs)", "lacks")),
    ("missing_count", c.with_term("known missing", "missing")),
    ("not_told_count", c.with_term("not told yet", "lacks")),
    ("open_entries", "open entries"),
]


def _counts(frame: pd.DataFrame, column: str) -> pd.Series:
    return pd.to_numeric(frame[column], errors="coerce").fillna(0).astype("int64")


def belief_lines(replicas: pd.DataFrame, limit: int = 50) -> html.Div | None:
    """Where a store believes more is only there than really is (delete-pending replicas and those
    on a store that is down): its belief, said as its belief, with what is so."""
    believed, really = _counts(replicas, "unique_count"), _counts(replicas, "really_unique_count")
    odd = replicas.assign(believed=believed, really=really)
    odd = odd[(believed > really) & ((odd["health"] == "delete_pending") | (odd["store_status"] == "down"))]
    if odd.empty:
        return None
    odd = odd.sort_values(["store", "fid"], kind="stable")
    lines = [
        html.Li(
            [
                c.link_store(r["store"], r),
                " in ",
                c.link_fid(r["fid"], r),
                ": ",
                f.believed_unique_text(str(r["store"]), int(r["believed"]), int(r["really"])),
            ]
        )
        for r in odd.head(limit).to_dict("records")
    ]
    more = len(odd) - len(lines)
    return html.Div(
        [
            html.H2("What the stores believe"),
            html.P(
                "A store's belief (its state table) of the CNs only it holds, beside what is so: those held by "
                "another replica on the list are not at risk.",
                className="pf-help",
            ),
            html.Ul(lines, id="pf-replica-beliefs"),
            html.P(f"{more:,} more.", className="pf-muted") if more > 0 else "",
        ],
        className="pf-section",
    )


def layout(
    health: str | None = None, store: str | None = None, at_risk: str | None = None, **_query: Any
) -> html.Main:
    data = current_data()
    if data is None:
        return c.no_run(str(settings().data_dir))
    if health and health not in f.HEALTH_ORDER:
        return c.not_found(
            "Bad health parameter",
            f"health={health!r} is not a replica health.",
            [(h.replace("_", " "), f"/replicas?health={h}") for h in f.HEALTH_ORDER],
        )
    risky = at_risk not in (None, "", "0")
    replicas = data.replica_summary()
    down = set(data.stores().query("status == 'down'")["store"])
    replicas = replicas.assign(store_status=["down" if s in down else "up" for s in replicas["store"]])
    if health:
        replicas = replicas[replicas["health"] == health]
    if store:
        replicas = replicas[replicas["store"] == store]
    believing = replicas
    if risky:
        replicas = replicas[_counts(replicas, "at_risk_count") > 0]
    replicas = _worst_first(replicas)
    name = "content at risk" if risky else health.replace("_", " ") if health else "every health"
    if risky and health:
        name += f", {health.replace('_', ' ')}"
    return html.Main(
        className="pf-page",
        children=[
            html.H1(f"Replicas: {name}" + (f" on {store}" if store else "")),
            _count_line(replicas, health),
            _chips(health, risky),
            c.table(
                replicas,
                COLUMNS,
                {"store": c.link_store, "fid": c.link_fid, "health": c.as_health_lacks},
                id="pf-replica-list",
                limit=ROWS,
            ),
            *[x for x in [belief_lines(believing)] if x is not None],
        ],
    )


def _worst_first(replicas: pd.DataFrame) -> pd.DataFrame:
    """Content at risk first, then the CNs only the replica holds, what its store believes only it
    holds, what it lacks; each count a number (none: 0), each path labelled."""
    for col in (
        "at_risk_count",
        "really_unique_count",
        "unique_count",
        "lacks_count",
        "missing_count",
        "not_told_count",
    ):
        replicas = replicas.assign(**{col: _counts(replicas, col)})
    return replicas.assign(
        path=[f.folder_label(a, b) for a, b in zip(replicas["fid"], replicas["path"], strict=True)],
    ).sort_values(
        [
            "at_risk_count",
            "really_unique_count",
            "unique_count",
            "lacks_count",
            "missing_count",
            "open_entries",
            "fid",
            "store",
        ],
        ascending=[False, False, False, False, False, False, True, True],
        kind="stable",
    )


def _count_line(replicas: pd.DataFrame, health: str | None) -> html.P:
    """How many replicas are shown, the CNs of content at risk among them, and the order."""
    at_risk_n = f.at_risk_total(replicas)
    return html.P(
        [
            f"{f.plural(len(replicas), 'replica')}, {f.plural(at_risk_n, 'CN')} of content at risk. ",
            c.term_link("content-at-risk", "What is content at risk?"),
            " ",
            c.term_link(f.HEALTH_TERMS[health], f"What is {health.replace('_', ' ')}?") if health else "",
            " Content at risk first, then the CNs only the replica holds, then what its store believes only "
            "it holds, then what it lacks.",
        ],
        id="pf-replicas-count",
    )


def _chips(health: str | None, risky: bool) -> html.Nav:
    """Content at risk, then each health: a link to its view, the one shown marked."""
    return html.Nav(
        [
            dcc.Link(
                "content at risk",
                href=f.AT_RISK_HREF,
                className="pf-chip" + (" pf-chip-on" if risky else ""),
            ),
            *[
                dcc.Link(
                    h.replace("_", " "),
                    href=f"/replicas?health={h}",
                    className="pf-chip" + (" pf-chip-on" if h == health and not risky else ""),
                )
                for h in f.HEALTH_ORDER
            ],
        ],
        className="pf-chips",
    )
