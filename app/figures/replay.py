"""The folder page at a past step: entries, replicas and what changed, replayed from published tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from pfscope.spark_jobs.model.cnset import CNSet, union_all
from pfscope.spark_jobs.model.rules.deletion import unique_cns
from pfscope.spark_jobs.model.rules.health import replica_health
from pfscope.spark_jobs.model.rules.reality import replica_reality

#: what the folder page cannot replay exactly from the published tables, said on the page
REPLAY_LIMITS = (
    "Replayed from state_history, backfill_entries, backfill_requests and each replica's last "
    "delete-pending period. Missing CNs use the replica list as of the run (the tables do not "
    "record earlier lists)."
)
#: why unique CNs are blank at a past step of a folder other than the hierarchy
UNIQUE_NOT_REPLAYED = (
    "Unique CNs are not replayed for this folder: they are counted against the replica list "
    "at that time, and the published tables hold the list only as of the run "
    "(folders.replicas)."
)
#: the hierarchy: every store is always on its list, so its unique CNs replay exactly
UNIQUE_REPLAYED = (
    "Unique CNs at this step: the store's own row minus every other store's row in its state "
    "table at that time (every store is on the hierarchy's list)."
)
#: why next status is blank at a past step
NEXT_STATUS_NOT_REPLAYED = (
    "Next status is not replayed: it counts 24 h from the last change the store made or "
    "received, and receiving changes it already held leaves no row in state_history, "
    "so that time cannot be read from the published tables."
)
#: a past step of a run that publishes the replicas' history: every figure replays
WHOLE_REPLAYED = (
    "Replayed whole at this step: the replica list then (replica_lists), each replica's lifecycle "
    "and next status message then (replica_history), unique and missing CNs against that list."
)
#: the hierarchy at a past step: no replica of it is ever delete pending
PENDING_NEVER = (
    "No replica of the hierarchy is ever delete pending: every store is on its list at every time."
)
#: which delete-pending periods a past step can show
PENDING_REPLAYED = (
    "Delete pending at this step by each replica's last delete-pending period (pending since, "
    "until deleted): an earlier period that ended when the store rejoined the list is not "
    "recorded in the published tables."
)


def _owned_at(cells: pd.DataFrame) -> dict[str, CNSet]:
    """Each store's own row (observer == subject) in ``cells``: what it owned then."""
    return {
        o: CNSet.parse(t or "")
        for o, s, t in zip(cells["observer"], cells["subject"], cells["cnset"], strict=True)
        if o == s
    }


def _believed_at(cells: pd.DataFrame) -> dict[str, list[tuple[str, CNSet]]]:
    """Each observer's other rows in ``cells``: (subject, what it believed the subject held)."""
    believed: dict[str, list[tuple[str, CNSet]]] = {}
    for o, s, txt in zip(cells["observer"], cells["subject"], cells["cnset"], strict=True):
        if o != s:
            believed.setdefault(o, []).append((s, CNSet.parse(txt or "")))
    return believed


def entries_at(entries: pd.DataFrame, requests: pd.DataFrame, cells: pd.DataFrame, at: Any) -> pd.DataFrame:
    """The folder's backfill entries as they stood at ``at``: those opened by then, open unless
    closed by then, requests made by then, remaining = opened minus what the observer owned then
    (CNs that arrive leave an entry), next due = the due time of its first request after ``at``.

    ``cells`` are the state rows at ``at`` (:func:`cells_at`)."""
    t = pd.Timestamp(at)
    e = entries[entries["opened_at"] <= t].copy()
    if e.empty:
        return e
    owned = _owned_at(cells)
    done = e["closed_at"].notna() & (e["closed_at"] <= t)
    open_at_run = (e["state"] == "open").tolist()
    e["state"] = e["state"].where(done, "open")
    e["closed_at"] = e["closed_at"].where(done, pd.NaT)
    made = requests[requests["entry_id"].notna() & (requests["at"] <= t)]
    later = requests[requests["entry_id"].notna() & (requests["at"] > t)].sort_values("at", kind="stable")
    count = made.groupby("entry_id")["attempt"].nunique()
    last = made.groupby("entry_id")["at"].max()
    next_due = later.groupby("entry_id")["due_at"].first()
    e["requests"] = [int(count.get(i, 0)) for i in e["entry_id"]]
    e["last_request_at"] = pd.to_datetime([last.get(i, pd.NaT) for i in e["entry_id"]], utc=True)
    remaining, remaining_n, due = [], [], []
    for r, still_open in zip(e.to_dict("records"), open_at_run, strict=True):
        if r["state"] != "open":
            remaining.append(r["cnset_remaining"])
            remaining_n.append(r["cnset_remaining_count"])
            due.append(pd.NaT)
            continue
        left = CNSet.parse(r["cnset_opened"] or "").difference(owned.get(r["observer"], CNSet.empty()))
        remaining.append(left.text())
        remaining_n.append(left.count())
        nd = next_due.get(r["entry_id"], pd.NaT)
        if pd.isna(nd) and still_open:  # no request after ``at``: the run's next due time still holds
            nd = r["next_due_at"]
        due.append(nd)
    e["cnset_remaining"] = remaining
    e["cnset_remaining_count"] = remaining_n
    e["next_due_at"] = pd.to_datetime(due, utc=True)
    return e.reset_index(drop=True)


def replicas_at(
    replicas: pd.DataFrame,
    entries: pd.DataFrame,
    cells: pd.DataFrame,
    at: Any,
    replica_list: Sequence[str],
    every_store: bool = False,
) -> pd.DataFrame:
    """The folder's replicas at ``at``: health (the model's order: deleted, delete pending, overdue,
    backfilling, in sync), open entries and missing CNs, from the entries at ``at``
    (:func:`entries_at`) and the state rows at ``at``. Missing uses ``replica_list`` (as of the
    run); for the hierarchy every store counts (``every_store``). Unique CNs (the model's
    :func:`unique_cns`) only for the hierarchy, whose list is every store at every time; for any
    other folder they rest on the list at ``at``, which no table records, and next status on
    receipts that leave no row: blank here, not invented (:data:`UNIQUE_NOT_REPLAYED`,
    :data:`NEXT_STATUS_NOT_REPLAYED`)."""
    t = pd.Timestamp(at)
    owned = _owned_at(cells)
    believed = _believed_at(cells)
    on_list = set(replica_list)
    listed_stores = {str(s) for s in replicas["store"]} if every_store else on_list
    open_e = entries[entries["state"] == "open"] if not entries.empty else entries
    rows = []
    for r in replicas.to_dict("records"):
        store = r["store"]
        mine = open_e[open_e["observer"] == store] if not open_e.empty else open_e
        n_open = len(mine)
        deleted = pd.notna(r.get("deleted_at")) and r["deleted_at"] <= t
        pending = pd.notna(r.get("delete_pending_since")) and r["delete_pending_since"] <= t
        lifecycle = "deleted" if deleted else "delete_pending" if pending else "active"
        health = replica_health(lifecycle, (int(n) for n in mine["requests"].fillna(0)))
        if store in on_list or every_store:
            others = [b for s, b in believed.get(store, []) if every_store or s in on_list]
            missing = union_all(others).difference(owned.get(store, CNSet.empty()))
        else:
            missing = CNSet.empty()
        unique = None
        if every_store and not deleted:
            unique = unique_cns(owned.get(store, CNSet.empty()), (b for _s, b in believed.get(store, [])))
        listed = store in on_list or every_store
        rows.append(
            {
                **r,
                "health": health,
                "open_entries": n_open,
                "missing_cnset": missing.text(),
                "missing_count": missing.count(),
                "unique_count": None if unique is None else unique.count(),
                "unique_cnset": None if unique is None else unique.text(),
                "next_status_at": pd.NaT,
                **reality_at(store, owned, listed_stores, listed, deleted, missing),
            }
        )
    return pd.DataFrame(rows, columns=list(replicas.columns))


def list_at(lists: pd.DataFrame, at: Any) -> list[str] | None:
    """The folder's replica list at ``at`` from its ``replica_lists`` rows (the topology's row has
    no time; later rows in time and input order); None when the run publishes none."""
    if lists is None or lists.empty:
        return None
    t = pd.Timestamp(at)
    known = lists[lists["at"].isna() | (lists["at"] <= t)]
    if known.empty:
        return []
    known = known.assign(
        _t=known["at"].fillna(pd.Timestamp.min.tz_localize("UTC")), _s=known["seq"].fillna(-1)
    )
    return [str(s) for s in known.sort_values(["_t", "_s"]).iloc[-1]["replicas"]]


def replicas_from_history(
    replicas: pd.DataFrame,
    entries: pd.DataFrame,
    cells: pd.DataFrame,
    at: Any,
    replica_list: Sequence[str],
    history: pd.DataFrame,
    every_store: bool,
) -> pd.DataFrame:
    """The folder's replicas at ``at``, replayed whole from the published histories: lifecycle
    (active, delete pending, deleted) and the next status message from ``replica_history`` (its
    last row by ``at``), missing and unique CNs (the model's :func:`unique_cns`) against the list
    at ``at`` (``replica_list``; every store for the hierarchy), health by the model's order."""
    t = pd.Timestamp(at)
    owned = _owned_at(cells)
    believed = _believed_at(cells)
    on_list = set(replica_list)
    listed_stores = {str(s) for s in replicas["store"]} if every_store else on_list
    past = history[history["at"] <= t].sort_values("at", kind="stable")
    last: dict[str, dict[str, Any]] = {}
    pending_since: dict[str, Any] = {}
    for h in past.to_dict("records"):  # the last row by ``at``, and when its delete-pending period began
        store = str(h["store"])
        if h["lifecycle"] == "delete_pending" and (
            store not in last or last[store]["lifecycle"] != "delete_pending"
        ):
            pending_since[store] = h["at"]
        last[store] = h
    open_e = entries[entries["state"] == "open"] if not entries.empty else entries
    rows = []
    for r in replicas.to_dict("records"):
        store = str(r["store"])
        h = last.get(store)
        lifecycle = str(h["lifecycle"]) if h is not None else "active"
        listed = every_store or store in on_list
        mine = open_e[open_e["observer"] == store] if not open_e.empty else open_e
        health = replica_health(lifecycle, (int(n) for n in mine["requests"].fillna(0)))
        others = [b for s, b in believed.get(store, []) if every_store or s in on_list]
        mine_owned = owned.get(store, CNSet.empty())
        missing = union_all(others).difference(mine_owned) if listed else CNSet.empty()
        unique = CNSet.empty() if lifecycle == "deleted" else unique_cns(mine_owned, others)
        due = h["status_due"] if h is not None else pd.NaT
        rows.append(
            {
                **r,
                "health": health,
                "open_entries": len(mine),
                "on_list": listed,
                "delete_pending_since": pending_since.get(store, pd.NaT)
                if lifecycle == "delete_pending"
                else pd.NaT,
                "deleted_at": h["at"] if h is not None and lifecycle == "deleted" else pd.NaT,
                "missing_cnset": missing.text(),
                "missing_count": missing.count(),
                "unique_count": unique.count(),
                "unique_cnset": unique.text(),
                "next_status_at": due if pd.notna(due) and pd.Timestamp(due) > t else pd.NaT,
                **reality_at(store, owned, listed_stores, listed, lifecycle == "deleted", missing),
            }
        )
    return pd.DataFrame(rows, columns=list(replicas.columns))


def reality_at(
    store: str, owned: dict[str, CNSet], listed_stores: set[str], listed: bool, deleted: bool, missing: CNSet
) -> dict[str, Any]:
    """What is so of a replica at a replayed step, by the model's rules (``rules.reality``) from
    every store's owned set at the step, so a past step never shows the as-of's figures. Content
    at risk is not replayed (it needs each store's status at the step): blank."""
    mine = CNSet.empty() if deleted else owned.get(store, CNSet.empty())
    listed_owned = {s: owned.get(s, CNSet.empty()) for s in listed_stores}
    return {
        **replica_reality(store, mine, listed_owned, listed, missing),
        "at_risk_cnset": None,
        "at_risk_count": None,
    }


def step_changes(history: pd.DataFrame, at: Any) -> list[str]:
    """What happened at ``at``: one sentence per state_history row stamped then (who learned
    what, from which message; or whose own content changed)."""
    t = pd.Timestamp(at)
    rows = history[history["at"] == t]
    out = []
    for r in rows.itertuples(index=False):
        cause = str(r.cause) if isinstance(r.cause, str) else "?"
        if r.observer == r.subject:
            how = "a change" if cause == "change" else f"from message {cause}"
            out.append(f"{r.observer}'s own content became {r.cnset or '∅'} ({how})")
        else:
            how = "a change" if cause == "change" else f"message {cause}"
            out.append(f"{r.observer} learned that {r.subject} holds {r.cnset or '∅'} (from {how})")
    return out
