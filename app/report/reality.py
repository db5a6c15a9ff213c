"""The reports' sections of what is so beside what each store believes, and of what happened.

- content at risk (the organisation report): the replicas whose content no other replica on the
  list holds, from ``replicas.at_risk_count``, the same number as the dashboard's headline and
  ``/metrics``; then each store's belief where it differs, said as its belief;
- what happened (the organisation report): every period a store was down (``store_periods``);
- a folder's replicas (the folder report): what each lacks, in its two parts (known missing, not
  told yet), and its content at risk, really unique and believed unique CNs, each labelled.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from pfscope.app import figures as f
from pfscope.app.data import RunData
from pfscope.app.report.cells import (
    Limits,
    cn_text,
    folder_path,
    health_cell,
    int_text,
    left_out,
    rows,
    section,
    time_text,
)
from pfscope.app.report.html import Html, join, table, tag

#: the ``replicas`` columns the content-at-risk section reads
RISK_COLUMNS = [
    "store",
    "fid",
    "path",
    "health",
    "unique_count",
    "really_unique_count",
    "at_risk_count",
    "at_risk_cnset",
    "delete_pending_since",
]


def _counts(frame: pd.DataFrame, column: str) -> pd.Series:
    return pd.to_numeric(frame[column], errors="coerce").fillna(0).astype("int64")


def at_risk_section(data: RunData, lim: Limits) -> Html:
    """Content at risk, what is so: the replicas holding CNs no other replica on the list holds
    (delete pending, or on a store that is down); then where a store believes more is only there."""
    r = data.table("replicas", RISK_COLUMNS)
    down = set(data.stores().query("status == 'down'")["store"])
    for col in ("unique_count", "really_unique_count", "at_risk_count"):
        r[col] = _counts(r, col)
    risky = r[r["at_risk_count"] > 0].sort_values(
        ["at_risk_count", "store", "fid"], ascending=[False, True, True], kind="stable"
    )
    total = int(risky["at_risk_count"].sum())
    shown = risky.head(lim.at_risk)
    body: list[Any] = [
        tag(
            "p",
            f"{f.plural(total, 'CN')} of content at risk, in {f.plural(len(risky), 'replica')}: "
            "what is so (from every store's log), not a store's belief. The CNs no other store "
            "on the folder's replica list holds, of a delete-pending replica (gone when it is "
            "deleted) or of a replica on a store that is down (out of reach until it is back).",
            class_="note",
            id="at-risk-total",
        )
    ]
    if risky.empty:
        body.append(
            tag("p", "Nothing is at risk: every CN is held by a replica on its folder's list that is up.")
        )
    else:
        body += [
            table(
                [
                    "store",
                    "FID",
                    "path",
                    "why",
                    "content at risk (CNs)",
                    "held alone",
                    "believed unique (its store's belief)",
                ],
                rows(
                    shown,
                    [
                        lambda x: x["store"],
                        lambda x: x["fid"],
                        lambda x: folder_path(x["path"]),
                        lambda x: (
                            "store down"
                            if x["store"] in down
                            else f"delete pending since {time_text(x['delete_pending_since'])}"
                        ),
                        lambda x: int_text(x["at_risk_count"]),
                        lambda x: cn_text(x["at_risk_cnset"], x["at_risk_count"], lim.cnset_chars),
                        lambda x: int_text(x["unique_count"]),
                    ],
                ),
                numeric=[4, 6],
            ),
            left_out(len(shown), len(risky), "replicas holding content at risk", "most CNs first"),
        ]
    believing = r[
        (r["unique_count"] > r["really_unique_count"])
        & ((r["health"] == "delete_pending") | (r["store"].isin(down) & (r["health"] != "deleted")))
    ]
    if not believing.empty:
        believing = believing.sort_values(["store", "fid"], kind="stable")
        listed = believing.head(lim.at_risk)
        body += [
            tag("h3", "What the stores believe"),
            tag(
                "p",
                "A store's belief (its state table) of the CNs only it holds, beside what is so: CNs "
                "another replica on the list holds are not at risk.",
                class_="note",
            ),
            tag(
                "ul",
                *[
                    tag(
                        "li",
                        f"{x['store']} in {x['fid']}: "
                        + f.believed_unique_text(
                            str(x["store"]), int(x["unique_count"]), int(x["really_unique_count"])
                        ),
                    )
                    for x in listed.to_dict("records")
                ],
                class_="beliefs",
            ),
            left_out(len(listed), len(believing), "beliefs", "by store and folder"),
        ]
    return section("at-risk", "Content at risk", *body)


def outages_section(data: RunData) -> Html:
    """What happened: every period a store was down, newest first, those that are over too."""
    outages = f.outage_rows(data.store_periods(), data.summary().get("as_of"))
    if outages.empty:
        return section(
            "happened",
            "What happened: stores down",
            tag("p", "No store was down in the log, up to the as-of."),
        )
    return section(
        "happened",
        "What happened: stores down",
        tag("p", "Every period a store was down, newest first, up to the as-of (UTC).", class_="note"),
        table(
            ["store", "down from", "back up", "down for"],
            rows(
                outages,
                [lambda x: x["store"], lambda x: x["from"], lambda x: x["to"], lambda x: x["down_for"]],
            ),
        ),
    )


def _lacks_cell(x: dict[str, Any], lim: Limits) -> Html:
    lacks = f.Lacks.of(x)
    if lacks.total <= 0:
        return tag("span", "nothing", class_="muted")
    return join(
        [tag("span", f.lacks_summary(lacks)), " ", cn_text(lacks.cnset, lacks.total, lim.cnset_chars)]
    )


def replicas_section(replicas: pd.DataFrame, lim: Limits) -> Html:
    """A folder's replicas, worst first: health with what each lacks (known missing and not told
    yet: "in sync" never hides CNs a replica lacks), then what only it holds, labelled by whose view."""
    if replicas.empty:
        return section("replicas", "Replicas", tag("p", "No replica of this folder in the run."))
    rank = {h: i for i, h in enumerate(("delete_pending", "overdue", "backfilling", "in_sync", "deleted"))}
    r = replicas.assign(_rank=replicas["health"].map(rank).fillna(len(rank)))
    r = r.sort_values(["_rank", "store"], kind="stable")
    shown = r.head(lim.folder_replicas)
    cells = rows(
        shown,
        [
            lambda x: x["store"],
            lambda x: "" if pd.isna(x["on_list"]) else ("yes" if x["on_list"] else "no"),
            lambda x: (
                join([health_cell(x["health"]), " (no backfill entry)"])
                if x["health"] == "in_sync" and f.Lacks.of(x).total > 0
                else health_cell(x["health"])
            ),
            lambda x: _lacks_cell(x, lim),
            lambda x: int_text(x["open_entries"]),
            lambda x: cn_text(x["missing_cnset"], x["missing_count"], lim.cnset_chars),
            lambda x: cn_text(x.get("not_told_cnset"), x.get("not_told_count"), lim.cnset_chars),
            lambda x: int_text(x.get("at_risk_count")),
            lambda x: int_text(x.get("really_unique_count")),
            lambda x: int_text(x["unique_count"]),
            lambda x: cn_text(x["unique_cnset"], x["unique_count"], lim.cnset_chars),
            lambda x: time_text(x["next_status_at"]),
            lambda x: time_text(x["delete_pending_since"]),
            lambda x: time_text(x["deleted_at"]),
        ],
    )
    return section(
        "replicas",
        "Replicas",
        tag(
            "p",
            "Lacks, content at risk and really unique are what is so (every store's log); known "
            "missing (its backfill entries) and believed unique (its state table) are the "
            "replica's store's belief. Lacks = known missing + not told yet.",
            class_="note",
        ),
        table(
            [
                "store",
                "on list",
                "health",
                "lacks",
                "open entries",
                "known missing",
                "not told yet",
                "content at risk",
                "really unique",
                "believed unique",
                "believed unique CNs",
                "next status message",
                "delete pending since",
                "deleted at",
            ],
            cells,
            numeric=[4, 7, 8, 9],
        ),
        left_out(len(shown), len(r), "replicas", "delete pending, overdue and backfilling first"),
    )
