"""Who a request went to: backfill candidates with the sort key that placed each, and status responders."""

from __future__ import annotations

from typing import Any

import pandas as pd

from pfscope.app.figures.text import fmt_time
from pfscope.spark_jobs.model.cnset import EMPTY, CNSet
from pfscope.spark_jobs.model.rules.sources import Candidate, sort_key_2003
from pfscope.spark_jobs.model.topology import VERSION_RANK, VERSIONS

#: the 2003+ sort keys, in order: (column, how it sorts, label)
SORT_KEYS_2003: tuple[tuple[str, str], ...] = (
    ("status", "up and available first"),
    ("preferred", "preferred backfill source first"),
    ("cost", "lowest transport cost first (no affinity last)"),
    ("version", "newest version first"),
    ("holds_count", "holds the most of the missing CNs"),
    ("candidate", "name"),
)


def _sort_key_2003(r: dict[str, Any]) -> tuple[Any, ...]:
    """The model's 2003+ sort key (:func:`sort_key_2003`) of a ``backfill_candidates`` row, one
    element per :data:`SORT_KEYS_2003` (the model's cost is two elements: no affinity, cost).

    A row says how many of the missing CNs a candidate holds, not which: ``holds`` stands in with
    that many. A version the model does not know (it never publishes one) sorts after every other.
    """
    cost = r.get("cost")
    version = str(r.get("version"))
    known = version in VERSION_RANK
    name = str(r.get("candidate"))
    held = int(r.get("holds_count") or 0)
    status, preferred, no_affinity, by_cost, newest, most, name = sort_key_2003(
        Candidate(
            name=name,
            same_site=False,
            cost=None if cost is None or pd.isna(cost) else int(cost),
            version=version if known else VERSIONS[0],
            down=bool(r.get("down")),
            unavailable=bool(r.get("unavailable")),
            preferred=bool(r.get("preferred")),
            holds=CNSet.of(name, 1, held) if held > 0 else EMPTY,
            last_backfill_request_at=None,
            mean_transit_us=None,
        )
    )
    return status, preferred, (no_affinity, by_cost), newest if known else 1, most, name


def explain_candidates(candidates: pd.DataFrame) -> pd.DataFrame:
    """One attempt's candidates in rank order, each with ``decided_by``: the first sort key that
    puts it after the candidate ranked just above it (the 2003+ keys, or the 2000 search group)."""
    if candidates.empty:
        return candidates.assign(decided_by=pd.Series(dtype="object"))
    c = candidates.sort_values("rank").reset_index(drop=True)
    rows = c.to_dict("records")
    reasons: list[str] = []
    for i, r in enumerate(rows):
        if i == 0:
            reasons.append("first in the sort order")
            continue
        prev = rows[i - 1]
        if str(r.get("algorithm")) == "2000":
            if r.get("group") != prev.get("group"):
                reasons.append(f"search group {r.get('group')} comes after group {prev.get('group')}")
            else:
                reasons.append(
                    "same group: "
                    + (
                        "oldest last backfill request first"
                        if r.get("group") in (1, 4)
                        else "lowest cost first"
                        if r.get("group") in (2, 5)
                        else "shortest mean transit first"
                    )
                    + ", then name"
                )
            continue
        a, b = _sort_key_2003(prev), _sort_key_2003(r)
        for (name, label), ka, kb in zip(SORT_KEYS_2003, a, b, strict=True):
            if ka != kb:
                reasons.append(f"{name}: {label}")
                break
        else:
            reasons.append("tie")
    return c.assign(decided_by=reasons)


def request_options(requests: pd.DataFrame) -> list[dict[str, str]]:
    """Dropdown options for a folder's request attempts: value ``<entry_id>:<attempt>``."""
    if requests.empty:
        return []
    r = requests.dropna(subset=["entry_id"])
    r = r[r["entry_id"] != ""]
    agg = (
        r.groupby(["entry_id", "attempt"], as_index=False)
        .agg(
            observer=("observer", "first"),
            at=("at", "min"),
            kind=("kind", "first"),
            sources=("source", lambda s: ", ".join(sorted({x for x in s if isinstance(x, str) and x}))),
        )
        .sort_values(["at", "entry_id", "attempt"])
    )
    return [
        {
            "value": f"{x.entry_id}:{int(x.attempt)}",
            "label": f"{fmt_time(x.at)} · {x.observer} · entry {x.entry_id} attempt {int(x.attempt)} ({x.kind})"
            + (f" → {x.sources}" if x.sources else ""),
        }
        for x in agg.itertuples(index=False)
    ]


#: what each rule of the responder list means, in a few words (the glossary says it in full)
RESPONDER_GROUPS: dict[str, str] = {
    "1": "same site, backfilled from before",
    "2": "other site with a cost, heard from",
    "3": "same site",
    "4": "other site with a cost",
    "5": "other site, no cost, known transit",
    "6": "other site",
    "oldest": "oldest copy (fewest CNs)",
}


def responder_group_text(group: Any) -> str:
    """``group 5: other site, no cost, known transit``; empty for a store not on the model's list."""
    if group is None or (pd.api.types.is_scalar(group) and pd.isna(group)) or group == "":
        return ""
    g = str(group)
    if g.endswith(".0"):
        g = g[:-2]
    meaning = RESPONDER_GROUPS.get(g)
    if g == "oldest":
        return meaning or g
    return f"group {g}: {meaning}" if meaning else f"group {g}"


def responder_rows(responders: pd.DataFrame) -> pd.DataFrame:
    """Status requests with their responders: expected versus observed, and the group that chose each."""
    cols = [
        "sent_at",
        "msg",
        "requester",
        "responder",
        "position",
        "group",
        "expected",
        "observed",
        "should_respond",
        "agreement",
    ]
    if responders.empty:
        return pd.DataFrame(columns=cols)
    r = responders.copy()
    exp = r["expected"].fillna(False).astype(bool)
    obs = r["observed"].fillna(False).astype(bool)
    r["agreement"] = [
        "model and log name it" if e and o else "model only" if e else "log only" if o else ""
        for e, o in zip(exp, obs, strict=True)
    ]
    return r.sort_values(["sent_at", "msg", "position"], na_position="last")[cols].reset_index(drop=True)
