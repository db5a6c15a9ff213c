"""``/replicas?health=<health>``: every replica of one health, worst first (the overview's
headline links here: content at risk is ``?health=delete_pending``). ``&store=`` narrows it."""

from __future__ import annotations

from typing import Any

import dash
from dash import dcc, html

from pfscope.app import components as c
from pfscope.app import figures as f
from pfscope.app.runtime import current_data, settings

dash.register_page(__name__, path="/replicas", name="Replicas", title="pfscope · replicas")

ROWS = 500


def layout(health: str | None = None, store: str | None = None, **_query: Any) -> html.Main:
    data = current_data()
    if data is None:
        return c.no_run(str(settings().data_dir))
    if health and health not in f.HEALTH_ORDER:
        return c.not_found("Bad health parameter", f"health={health!r} is not a replica health.",
                           [(h.replace("_", " "), f"/replicas?health={h}") for h in f.HEALTH_ORDER])
    replicas = data.replica_summary()
    if health:
        replicas = replicas[replicas["health"] == health]
    if store:
        replicas = replicas[replicas["store"] == store]
    down = set(data.stores().query("status == 'down'")["store"])
    replicas = replicas.assign(
        store_status=["down" if s in down else "up" for s in replicas["store"]],
        path=[f.folder_label(a, b) for a, b in zip(replicas["fid"], replicas["path"], strict=True)],
    ).sort_values(["unique_count", "missing_count", "open_entries", "fid", "store"],
                  ascending=[False, False, False, True, True], kind="stable")
    name = health.replace("_", " ") if health else "every health"
    at_risk = int(replicas["unique_count"].fillna(0).sum()) if health == "delete_pending" else None
    return html.Main(className="pf-page", children=[
        html.H1(f"Replicas: {name}" + (f" on {store}" if store else "")),
        html.P([f"{f.plural(len(replicas), 'replica')}"
                + (f", {f.plural(at_risk, 'CN')} of content at risk" if at_risk is not None else "") + ". ",
                c.term_link(f.HEALTH_TERMS[health], f"What is {name}?") if health else "",
                " Most unique CNs first, then most missing CNs."], id="pf-replicas-count"),
        html.Nav([dcc.Link(h.replace("_", " "), href=f"/replicas?health={h}", className="pf-chip"
                           + (" pf-chip-on" if h == health else "")) for h in f.HEALTH_ORDER], className="pf-chips"),
        c.table(replicas, [("store", "store"), ("fid", "FID"), ("path", "path"),
                           ("health", c.with_term("health", f.HEALTH_TERMS.get(health or "", "in-sync"))),
                           ("unique_count", c.with_term("unique CNs (content at risk)", "content-at-risk")),
                           ("missing_count", c.with_term("missing CNs", "missing")), ("open_entries", "open entries")],
                {"store": c.link_store, "fid": c.link_fid, "health": c.as_health}, id="pf-replica-list", limit=ROWS),
    ])
