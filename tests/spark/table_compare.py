"""Comparing tables from Spark (collected rows or published Parquet) with the replay's, row by
row, after putting both sides in the declared types and key order. Shared by the Spark tests."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq

from pfscope.spark_jobs.model.events import read_event_log
from pfscope.spark_jobs.model.forecast.record import Happened, carried, judged
from pfscope.spark_jobs.model.replay import replay
from pfscope.spark_jobs.model.tables import KEYS, PUBLISHED, TABLES
from pfscope.spark_jobs.model.topology import load_topology
from pfscope.spark_jobs.published.runs import read_latest

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def normalise(table: str, row: dict[str, Any]) -> tuple[Any, ...]:
    out = []
    for name, kind in PUBLISHED[table]:
        v = row.get(name)
        if isinstance(v, datetime):
            v = v.replace(tzinfo=UTC) if v.tzinfo is None else v.astimezone(UTC)
            v = int((v - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds() * 1_000_000)
        elif isinstance(v, float) and math.isnan(v):
            v = None
        elif kind == "double" and v is not None:
            v = round(float(v), 6)
        elif kind == "long" and v is not None:
            v = int(v)
        elif kind.startswith("array") and v is not None:
            v = tuple(v)
        out.append(v)
    return tuple(out)


def ordered(table: str, rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    # facts of the run itself: its wall clock, and how it went about it (in full, or as a refresh)
    skip = {
        "started_at",
        "finished_at",
        "run_id",
        "refresh",
        "refresh_reason",
        "lines_new",
        "folders_refolded",
        "folders_carried",
        "lines_rejudged",
        "folders_from_start",
    }
    cols = [n for n, _ in PUBLISHED[table]]
    keep = [i for i, n in enumerate(cols) if n not in skip]
    rows_n = [normalise(table, r) for r in rows]
    key_idx = [cols.index(k) for k in KEYS[table] if k in cols]
    rows_n.sort(key=lambda r: (*tuple(repr(r[i]) for i in key_idx), repr(r)))
    return [tuple(r[i] for i in keep) for r in rows_n]


def assert_published_equals_replay(
    out: Path, data: Path, events: Path | None = None, as_of: int | None = None
) -> dict[str, Any]:
    """The run ``out/LATEST`` points at holds every table, each equal to the replay of ``data``
    (a simulated folder: topology.json, events.jsonl; or the log at ``events``). Returns the
    replay's tables."""
    latest = read_latest(out)
    assert latest is not None, f"nothing published in {out}"
    topo = load_topology(data / "topology.json")
    expected = replay(topo, read_event_log([events or data / "events.jsonl"], topo), as_of).tables
    for table in TABLES:
        got = pq.read_table(out / latest["path"] / table)
        assert got.column_names == [n for n, _ in TABLES[table]], table
        assert ordered(table, got.to_pylist()) == ordered(table, expected[table]), table
    return expected


@dataclass
class RecordOracle:
    """The ``forecast_record`` a chain of runs should publish, run after run, from the replays of
    the log as each run saw it (the oracle never reads what the job published before)."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    forecast: list[dict[str, Any]] = field(default_factory=list)
    as_of: int | None = None

    def check(self, out: Path, expected: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
        """The run ``out/LATEST`` points at holds the record judged from the previous step's
        forecast and record (``expected``: the replay's tables of this step); returns it."""
        latest = read_latest(out)
        assert latest is not None
        as_of = expected["summary"][0]["as_of"]
        happened = Happened.from_rows(
            [r for r in expected["state_history"] if r["observer"] == r["subject"]],
            expected["store_periods"],
            expected["folders"],
        )
        rows = judged(carried(self.rows, self.forecast, self.as_of, as_of), happened, as_of)
        got = pq.read_table(out / latest["path"] / "forecast_record")
        assert got.column_names == [n for n, _ in PUBLISHED["forecast_record"]]
        assert ordered("forecast_record", got.to_pylist()) == ordered("forecast_record", rows)
        self.rows, self.forecast, self.as_of = rows, expected["forecast"], as_of
        return rows


def rows_of(df: DataFrame) -> list[dict[str, Any]]:
    """A Spark table's rows as dicts."""
    return [r.asDict(recursive=True) for r in df.collect()]
