"""The who-knows-what matrix: a folder's state-table cells at a time and their states (drawn by the
dashboard, app/components.py, and the folder report, app/report/matrix.py)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from pfscope.spark_jobs.model.cnset import CNSet, union_all

#: who-knows-what cell states (see :func:`who_knows_what`)
CELL_STATES: dict[str, str] = {
    "current": "knows the subject's real state",
    "not_told": "the subject holds CNs the observer has not heard of yet, and the observer lacks some of them",
    "told_later": "the subject holds CNs the observer has not heard it holds, all of which the observer holds "
    "itself: nothing is missing (normal between status messages)",
    "lacks": "the observer is current, and the subject really lacks CNs other replicas hold",
    "owned": "the observer's own row (owned set, last sent CN)",
    "unknown": "the observer never heard from this subject",
}
#: the mark of a cell whose CN set rests on knowledge ingest derived (``derived`` column)
DERIVED_MARK = "≥"
DERIVED_NOTE = "≥ lower bound (derived from Exchange logs)"
DERIVED_HELP = (
    "derived: the CN set was inferred from Exchange's event logs (which print CN ranges, not "
    "CN sets), so the store holds at least these CNs"
)


def history_times(history: pd.DataFrame) -> list[pd.Timestamp]:
    """The distinct times at which any row of the folder's state tables changed, in order."""
    if history.empty:
        return []
    return sorted(pd.unique(history["at"]))


def cells_at(history: pd.DataFrame, at: Any) -> pd.DataFrame:
    """Each (observer, subject) row of the folder's state tables as it stood at ``at``.

    From ``state_history``: the last change at or before ``at`` (ties: the last row). ``heard_at``
    is when that row last changed; ``derived`` whether its CN set then rested on derived knowledge.
    """
    cols = ["observer", "subject", "cnset", "cnset_count", "heard_at", "derived"]
    if history.empty:
        return pd.DataFrame(columns=cols)
    t = pd.Timestamp(at)
    past = history[history["at"] <= t]
    if past.empty:
        return pd.DataFrame(columns=cols)
    last = with_derived(past.groupby(["observer", "subject"], sort=False).tail(1))
    out = last.rename(columns={"at": "heard_at"})[cols].reset_index(drop=True)
    return out


def with_derived(frame: pd.DataFrame) -> pd.DataFrame:
    """``derived`` as plain booleans (a run published before the column existed: all False)."""
    flags = frame["derived"].fillna(False).astype(bool) if "derived" in frame.columns else False
    return frame.assign(derived=flags)


def cells_now(state_table: pd.DataFrame) -> pd.DataFrame:
    """The state tables as of the run's as-of time; ``heard_at`` is ``last_message_at``."""
    cols = ["observer", "subject", "cnset", "cnset_count", "heard_at", "last_sent_cn", "derived"]
    if state_table.empty:
        return pd.DataFrame(columns=cols)
    out = with_derived(state_table).rename(columns={"last_message_at": "heard_at"})
    return out[cols].reset_index(drop=True)


def who_knows_what(cells: pd.DataFrame, observers: Iterable[str] | None = None) -> pd.DataFrame:
    """Seed 004's matrix as a tidy frame: one row per (observer, subject) cell.

    Each cell gets the subject's real state (its own owned row at the same time), the knowledge
    ``lag`` (owned(subject) minus believed), what the subject really ``lacks`` (CNs some replica
    of the matrix owns that the subject does not) and a ``state``: ``owned`` on the diagonal,
    ``not_told`` when the observer lags and lacks some of those CNs itself, ``told_later`` when it
    lags but holds them all (harmless: nothing missing), ``lacks`` when the observer is current but the subject
    really lacks CNs, ``current`` otherwise, ``unknown`` when the observer has no row. ``derived``:
    the cell's CN set is a lower bound that ingest derived (the figures built on it are too).
    """
    cols = [
        "observer",
        "subject",
        "is_self",
        "cnset",
        "cnset_count",
        "heard_at",
        "last_sent_cn",
        "real_cnset",
        "lag_cnset",
        "lag_count",
        "lacks_cnset",
        "lacks_count",
        "state",
        "derived",
    ]
    if cells.empty:
        return pd.DataFrame(columns=cols)
    keys = list(zip(cells["observer"].tolist(), cells["subject"].tolist(), strict=True))
    parsed = {k: CNSet.parse(t or "") for k, t in zip(keys, cells["cnset"].tolist(), strict=True)}
    owned = {o: s for (o, subj), s in parsed.items() if o == subj}
    everything = union_all(owned.values())
    names = sorted(set(cells["observer"]) | set(cells["subject"]) | set(observers or ()))
    obs_names = sorted(set(observers)) if observers is not None else sorted(set(cells["observer"]))
    heard = cells["heard_at"].astype(object).where(cells["heard_at"].notna(), None).tolist()
    last_sent_col = cells["last_sent_cn"].tolist() if "last_sent_cn" in cells.columns else [None] * len(keys)
    derived_col = with_derived(cells)["derived"].tolist()
    by_key = {
        k: {"heard_at": h, "last_sent_cn": ls, "derived": d}
        for k, h, ls, d in zip(keys, heard, last_sent_col, derived_col, strict=True)
    }
    rows = []
    for o in obs_names:
        for s in names:
            row = by_key.get((o, s))
            real = owned.get(s)
            lacks = everything.difference(real) if real is not None else CNSet.empty()
            if row is None:
                rows.append(
                    {
                        "observer": o,
                        "subject": s,
                        "is_self": o == s,
                        "cnset": None,
                        "cnset_count": None,
                        "heard_at": pd.NaT,
                        "last_sent_cn": None,
                        "real_cnset": real.text() if real is not None else None,
                        "lag_cnset": None,
                        "lag_count": None,
                        "lacks_cnset": lacks.text(),
                        "lacks_count": lacks.count(),
                        "state": "unknown",
                        "derived": False,
                    }
                )
                continue
            believed = parsed[(o, s)]
            lag = real.difference(believed) if real is not None else CNSet.empty()
            if o == s:
                state = "owned"
                lag = CNSet.empty()
            elif lag:
                mine = owned.get(o, CNSet.empty())
                state = "not_told" if lag.difference(mine) else "told_later"
            elif lacks:
                state = "lacks"
            else:
                state = "current"
            last_sent = row.get("last_sent_cn")
            if o == s and (last_sent is None or pd.isna(last_sent)):
                last_sent = believed.max_cn(o)
            rows.append(
                {
                    "observer": o,
                    "subject": s,
                    "is_self": o == s,
                    "cnset": believed.text(),
                    "cnset_count": believed.count(),
                    "heard_at": row.get("heard_at"),
                    "last_sent_cn": None if last_sent is None or pd.isna(last_sent) else int(last_sent),
                    "real_cnset": real.text() if real is not None else None,
                    "lag_cnset": lag.text(),
                    "lag_count": lag.count(),
                    "lacks_cnset": lacks.text(),
                    "lacks_count": lacks.count(),
                    "state": state,
                    "derived": bool(row["derived"]),
                }
            )
    out = pd.DataFrame(rows, columns=cols)
    for col in ("cnset_count", "last_sent_cn", "lag_count", "lacks_count"):
        out[col] = out[col].astype("Int64")
    return out
