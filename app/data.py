"""Reading a published run: find it through ``LATEST``, read tables with column and row filters.

Readers never recompute the model: every frame here is a (filtered) published table, or a small
aggregate of one. Used by the dashboard and by the HTML reports.

- :func:`find_run` follows ``DIR/LATEST`` each time it is called, so a newer run is picked up
  without a restart.
- :func:`read_table` reads one table with pyarrow.dataset, only the columns asked for and only
  the rows the filter keeps (never all of ``state_history`` for one folder); times come back as
  tz-aware UTC pandas timestamps, and an empty table still has its declared columns. A run
  published before a table or a column existed reads it as empty, or as nulls.
- :class:`RunData` wraps a run with an optional cache (anything with ``get``/``set``: a
  flask-caching ``Cache`` or a cachelib cache); every key starts with the run id, so a new run is
  never served from an old run's entries.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from pfscope.app import figures as f
from pfscope.spark_jobs.model.errors import OperatorError
from pfscope.spark_jobs.model.tables import PUBLISHED
from pfscope.spark_jobs.published.runs import read_latest

T = TypeVar("T")

#: a row filter: column -> one value, or a list/tuple/set of accepted values
Filters = Mapping[str, Any]


class NoRunError(OperatorError, RuntimeError):
    """Nothing is published in the data folder yet; one line for the operator."""


class CacheLike(Protocol):
    def get(self, key: str) -> Any: ...

    def set(self, key: str, value: Any, timeout: int | None = None) -> Any: ...


@dataclass(frozen=True)
class RunRef:
    """One published run: where it is and what ``LATEST`` said about it."""

    data_dir: Path
    run_id: str
    path: Path
    pointer: Mapping[str, Any]

    def table_path(self, table: str) -> Path:
        return self.path / table


def _given(**equal: Any) -> dict[str, Any]:
    """Equality filters for the arguments a caller gave (None: no filter on that column)."""
    return {column: value for column, value in equal.items() if value is not None}


def find_run(data_dir: str | os.PathLike[str]) -> RunRef | None:
    """The run ``DIR/LATEST`` points at, or None when nothing is published yet."""
    root = Path(data_dir)
    pointer = read_latest(root)
    if pointer is None:
        return None
    path = Path(pointer["path"])
    if not path.is_absolute():
        path = root / path
    return RunRef(data_dir=root, run_id=str(pointer["run_id"]), path=path, pointer=pointer)


def require_run(data_dir: str | os.PathLike[str]) -> RunRef:
    run = find_run(data_dir)
    if run is None:
        raise NoRunError(
            f"{data_dir}: no published run (no LATEST); run `pfscope compute --out {data_dir}` first"
        )
    return run


def _expression(filters: Filters | None) -> ds.Expression | None:
    expr = None
    for name, value in (filters or {}).items():
        if isinstance(value, (list, tuple, set, frozenset)):
            part = pc.field(name).isin(list(value))
        elif value is None:
            part = pc.field(name).is_null()
        else:
            part = pc.field(name) == value
        expr = part if expr is None else expr & part
    return expr


def empty_frame(table: str, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """A frame with the table's declared columns and no rows."""
    names = list(columns) if columns is not None else [n for n, _ in PUBLISHED[table]]
    frame = pd.DataFrame({n: pd.Series(dtype="object") for n in names})
    return _typed(table, frame)


def _typed(table: str, frame: pd.DataFrame) -> pd.DataFrame:
    """Times as tz-aware UTC timestamps, whatever unit the Parquet writer chose."""
    for name, kind in PUBLISHED.get(table, ()):
        if kind == "timestamp" and name in frame.columns:
            col = frame[name]
            if getattr(col.dtype, "tz", None) is None:
                frame[name] = pd.to_datetime(col, utc=True)
            elif str(col.dtype.tz) != "UTC":
                frame[name] = col.dt.tz_convert("UTC")
    return frame


def read_table(
    run: RunRef,
    table: str,
    columns: Sequence[str] | None = None,
    filters: Filters | None = None,
    *,
    where: ds.Expression | None = None,
) -> pd.DataFrame:
    """One published table, only ``columns`` and only the rows ``filters`` (and ``where``) keep."""
    if table not in PUBLISHED:
        raise KeyError(f"unknown table {table!r}")
    path = run.table_path(table)
    if not path.exists():
        return empty_frame(table, columns)
    dataset = ds.dataset(str(path), format="parquet")
    expr = _expression(filters)
    if where is not None:
        expr = where if expr is None else expr & where
    # a run published before a column was declared: the column reads as nulls
    wanted = list(columns) if columns is not None else [n for n, _ in PUBLISHED[table]]
    present = set(dataset.schema.names)
    extra = [n for n in dataset.schema.names if n not in wanted] if columns is None else []
    arrow: pa.Table = dataset.to_table(columns=[n for n in wanted if n in present] + extra, filter=expr)
    if arrow.num_rows == 0:
        return empty_frame(table, wanted + extra)
    frame = arrow.to_pandas(types_mapper=None, timestamp_as_object=False)
    for name in wanted:
        if name not in present:
            frame[name] = None
    return _typed(table, frame[wanted + extra])


def missing_from(run: RunRef) -> dict[str, list[str]]:
    """What a run published by an earlier pfscope lacks: per table, the declared columns it has
    not (every one when the table is absent). Readers fill them with nulls; the dashboard says so."""
    out: dict[str, list[str]] = {}
    for table, columns in PUBLISHED.items():
        path = run.table_path(table)
        declared = [n for n, _ in columns]
        if not path.exists():
            out[table] = declared
            continue
        present = set(ds.dataset(str(path), format="parquet").schema.names)
        gone = [n for n in declared if n not in present]
        if gone:
            out[table] = gone
    return out


def _key_part(value: Any) -> str:
    if isinstance(value, (list, tuple, set, frozenset)):
        return "[" + ",".join(sorted(map(str, value))) + "]"
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{k}={_key_part(v)}" for k, v in sorted(value.items())) + "}"
    return repr(value)


class RunData:
    """A published run's tables, read on demand with filters and cached per run id."""

    def __init__(self, run: RunRef, cache: CacheLike | None = None, timeout: int | None = None):
        self.run = run
        self.cache = cache
        self.timeout = timeout

    @property
    def run_id(self) -> str:
        return self.run.run_id

    def cache_key(self, name: str, *args: Any) -> str:
        """Every key starts with the run id: a new run never reads an old run's entries."""
        return f"pfscope:{self.run_id}:{name}:" + "|".join(_key_part(a) for a in args)

    def memo(self, name: str, args: Iterable[Any], compute: Callable[[], T]) -> T:
        """``compute()`` once per run and arguments (shared between workers when the cache is)."""
        if self.cache is None:
            return compute()
        key = self.cache_key(name, *args)
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        value = compute()
        self.cache.set(key, value, timeout=self.timeout)
        return value

    def table(
        self, table: str, columns: Sequence[str] | None = None, filters: Filters | None = None
    ) -> pd.DataFrame:
        """A filtered read of any table, cached (a copy, so callers may modify it)."""
        frame = self.memo(
            "table",
            (table, list(columns) if columns else "*", dict(filters or {})),
            lambda: read_table(self.run, table, columns, filters),
        )
        return frame.copy()

    # -- the run ----------------------------------------------------------------------------

    def missing(self) -> dict[str, list[str]]:
        """The tables and columns this run lacks, published by an earlier pfscope (``missing_from``)."""
        return self.memo("missing", (), lambda: missing_from(self.run))

    def summary(self) -> dict[str, Any]:
        """The run's one summary row (run id, as-of, input accounting, start and finish, how
        the run went about it); a figure the run has not (a full run's folders refolded): None."""
        frame = self.table("summary")
        if frame.empty:
            return {
                "run_id": self.run_id,
                "as_of": None,
                "lines_read": 0,
                "accepted": 0,
                "duplicates": 0,
                "rejected": 0,
                "started_at": None,
                "finished_at": None,
            }
        return {k: None if _missing(v) else v for k, v in frame.iloc[0].to_dict().items()}

    def rejects(self) -> pd.DataFrame:
        """Every rejected line by file and line, with the accepted line it conflicts with (null
        columns for a run published before ``conflict_source``/``conflict_line``)."""
        frame = self.table("rejects")
        for col in ("conflict_source", "conflict_line"):
            if col not in frame.columns:
                frame[col] = None
        return frame.sort_values(["source", "line"], kind="stable").reset_index(drop=True)

    def rejects_naming_a_line(self) -> pd.DataFrame:
        """The rejects caused by an accepted line (those with a ``conflict_line``), by file and
        line, without their text (the report lists them; empty for a run published before the
        column)."""

        def compute() -> pd.DataFrame:
            cols = ["source", "line", "reason", "conflict_source", "conflict_line"]
            try:
                frame = read_table(self.run, "rejects", cols, where=ds.field("conflict_line").is_valid())
            except pa.ArrowInvalid:  # no such column in this run
                return empty_frame("rejects", cols)
            return frame.sort_values(["source", "line"], kind="stable").reset_index(drop=True)

        return self.memo("rejects_naming_a_line", (), compute).copy()

    # -- the organisation -------------------------------------------------------------------

    def stores(self) -> pd.DataFrame:
        return self.table("stores").sort_values(["site", "store"]).reset_index(drop=True)

    def folders(self) -> pd.DataFrame:
        """Every folder's fid, path and parent (no replica lists: small enough for 100k folders)."""
        return self.table("folders", ["fid", "path", "parent"])

    def folder(self, fid: str) -> dict[str, Any] | None:
        """One folder with its replica list, or None when the run has no such FID."""
        frame = self.table("folders", filters={"fid": fid})
        if frame.empty:
            return None
        row = frame.iloc[0].to_dict()
        row["replicas"] = [str(r) for r in (row.get("replicas") if row.get("replicas") is not None else [])]
        return row

    def breadcrumb(self, fid: str) -> list[tuple[str, str]]:
        """(fid, path) from the hierarchy root down to ``fid``, through ``folders.parent``."""
        folders = self.memo("folder_index", (), lambda: self.folders().set_index("fid"))
        chain: list[tuple[str, str]] = []
        seen: set[str] = set()
        current: str | None = fid
        while current and current not in seen and current in folders.index:
            seen.add(current)
            row = folders.loc[current]
            chain.append((current, str(row["path"]) if row["path"] is not None else current))
            parent = row["parent"]
            current = parent if isinstance(parent, str) and parent else None
        return list(reversed(chain))

    # -- per folder / per store -------------------------------------------------------------

    def replicas(self, fid: str | None = None, store: str | None = None) -> pd.DataFrame:
        return self.table("replicas", filters=_given(fid=fid, store=store))

    def state_table(self, fid: str | None = None, observer: str | None = None) -> pd.DataFrame:
        return self.table("state_table", filters=_given(fid=fid, observer=observer))

    def state_history(self, fid: str) -> pd.DataFrame:
        """One folder's history rows only (row filter pushed into the Parquet scan)."""
        frame = self.table("state_history", filters={"fid": fid})
        return frame.sort_values(["at", "observer", "subject"], kind="stable").reset_index(drop=True)

    def backfill_entries(
        self, fid: str | None = None, observer: str | None = None, state: str | None = None
    ) -> pd.DataFrame:
        return self.table("backfill_entries", filters=_given(fid=fid, observer=observer, state=state))

    def backfill_requests(
        self, fid: str | None = None, observer: str | None = None, entry_id: str | None = None
    ) -> pd.DataFrame:
        return self.table("backfill_requests", filters=_given(fid=fid, observer=observer, entry_id=entry_id))

    def replica_lists(self, fid: str) -> pd.DataFrame:
        """The folder's replica list over time (empty for a run published before the table)."""
        return self.table("replica_lists", filters={"fid": fid})

    def replica_history(self, fid: str) -> pd.DataFrame:
        """Each replica's lifecycle and next status over time (empty for an older run)."""
        return self.table("replica_history", filters={"fid": fid})

    def next_requests(self, fid: str | None = None, observer: str | None = None) -> pd.DataFrame:
        """Each open entry's next request, one row per store it will ask (empty for a run
        published before the table existed)."""
        return self.table("next_requests", filters=_given(fid=fid, observer=observer))

    def backfill_candidates(self, entry_id: str, attempt: int | None = None) -> pd.DataFrame:
        filters: dict[str, Any] = {"entry_id": entry_id}
        if attempt is not None:
            filters["attempt"] = int(attempt)
        return (
            self.table("backfill_candidates", filters=filters)
            .sort_values(["attempt", "rank"])
            .reset_index(drop=True)
        )

    def responders(self, fid: str | None = None, requester: str | None = None) -> pd.DataFrame:
        return self.table("responders", filters=_given(fid=fid, requester=requester))

    def messages(self, fid: str) -> pd.DataFrame:
        """One folder's replication messages, one row per recipient (empty for a run published
        before the table existed)."""
        return self.table("messages", filters={"fid": fid})

    def forecast(self, fid: str | None = None, store: str | None = None) -> pd.DataFrame:
        """Each replica that lacks CNs at the as-of, played forward: when it will be in sync, at
        the latest, or what blocks it (empty for a run published before the table)."""
        return self.table("forecast", filters=_given(fid=fid, store=store))

    def forecast_summary(self) -> pd.DataFrame:
        """Every replica's forecast without its CN set (the overview's causes and recovery chart,
        the grid, the reports): when, at the latest, via which stores, or what blocks it and what
        the return of the stores it waits for would do."""
        return self.table(
            "forecast",
            [
                "store",
                "fid",
                "lacks_count",
                "in_sync_at",
                "latest_in_sync_at",
                "sources",
                "blocked_by",
                "waits_for",
                "after_back_s",
                "latest_after_back_s",
            ],
        )

    def forecast_requests(self, fid: str) -> pd.DataFrame:
        """The requests of a folder's forecast, each with its answer or why there is none."""
        return self.table("forecast_requests", filters={"fid": fid})

    def forecast_record(self, columns: Sequence[str] | None = None) -> pd.DataFrame:
        """How the forecasts of the last 7 days' runs came true, as this run judges them (empty
        for a first run, or one published before the table)."""
        return self.table("forecast_record", columns)

    def transits(self) -> pd.DataFrame:
        """Per sender and recipient, the messages it processed and their median and longest
        transit (empty for a run published before the table): a message's state reads from it."""
        return self.table("transits")

    # -- organisation-wide aggregates (cached; the overview reads these) ---------------------

    def lag_pairs(self) -> pd.DataFrame:
        """Knowledge lag summed over folders per (observer, subject): the overview heatmap's data."""

        def compute() -> pd.DataFrame:
            frame = read_table(
                self.run,
                "state_table",
                ["observer", "subject", "lag_count"],
                where=pc.field("is_self") == False,  # noqa: E712
            )
            frame["lag_count"] = frame["lag_count"].fillna(0).astype("int64")
            frame["lagging"] = (frame["lag_count"] > 0).astype("int64")
            out = frame.groupby(["observer", "subject"], as_index=False).agg(
                lag_count=("lag_count", "sum"),
                folders_lagging=("lagging", "sum"),
                folders=("lagging", "size"),
            )
            return out

        return self.memo("lag_pairs", (), compute).copy()

    def replica_summary(self) -> pd.DataFrame:
        """Every replica's health and counts (no CN-set text): the overview's per-store bars, with
        each store's belief (``unique_count``, ``missing_count``) beside what is so (really unique,
        content at risk, lacks, not told)."""
        return self.table(
            "replicas",
            [
                "store",
                "fid",
                "path",
                "health",
                "open_entries",
                "missing_count",
                "unique_count",
                "on_list",
                "really_unique_count",
                "at_risk_count",
                "at_risk_cnset",
                "lacks_count",
                "not_told_count",
            ],
        )

    def store_periods(self, store: str | None = None) -> pd.DataFrame:
        """Every period a store was down up to the as-of, newest first (``up_at`` null: still
        down); empty for a run published before the table."""
        frame = self.table("store_periods", filters=_given(store=store))
        return frame.sort_values(["down_at", "store"], ascending=[False, True], kind="stable").reset_index(
            drop=True
        )

    def open_entries(self) -> pd.DataFrame:
        """Every open backfill entry of the organisation (the /backfill grid)."""
        return self.backfill_entries(state="open")

    def backfill_trend(self) -> pd.DataFrame:
        """Open and overdue entries per store over the run's time span (the overview's trend)."""

        def compute() -> pd.DataFrame:
            entries = read_table(
                self.run,
                "backfill_entries",
                ["entry_id", "observer", "opened_at", "closed_at", "requests", "last_request_at"],
            )
            later = pc.field("attempt") >= 2
            attempts = pd.concat(
                [
                    read_table(self.run, t, ["entry_id", "attempt", "at"], where=later)
                    for t in ("backfill_requests", "backfill_candidates")
                ],
                ignore_index=True,
            )
            entries["overdue_at"] = f.overdue_since(entries, attempts)
            return f.backfill_trend(entries, self.stores()["store"].tolist(), end=self.summary().get("as_of"))

        return self.memo("backfill_trend", (), compute).copy()


def matrix_frame(data: RunData, fid: str, at: pd.Timestamp | None) -> pd.DataFrame:
    """The who-knows-what frame at ``at`` (through ``state_history``) or as of the run
    (``state_table``): the one reading the folder page and the folder report both draw."""
    if at is None:
        cells = f.cells_now(data.state_table(fid=fid))
    else:
        cells = f.cells_at(data.state_history(fid), at)
    return f.who_knows_what(cells)


def _missing(value: Any) -> bool:
    """A null as pandas gives it back (NaN in a column of numbers, NaT, None)."""
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):  # an array or list: a value
        return False
