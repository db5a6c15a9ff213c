"""The ``forecast_record`` table of a run, written once its other tables are: the previous run's
record and forecast, judged against this run's ``state_history``, ``store_periods`` and
``folders`` (``model.forecast.record``). Small tables read with Arrow, not Spark: the record holds
a few rows per replica that lacked CNs, and the history it reads is those folders' own rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pfscope.spark_jobs.compute.arrow_rows import arrow_table, write_live
from pfscope.spark_jobs.model.forecast.record import Happened, carried, judged, record_fids
from pfscope.spark_jobs.model.tables import RECORD_TABLES

RECORD = "forecast_record"


def write_forecast_record(previous: Path | None, run_dir: Path, as_of: int) -> int:
    """Judge the forecasts on record as of this run and write them into ``run_dir``; the rows
    written. A first run (or one after a run without a forecast) starts the record empty."""
    earlier = _rows(previous / RECORD) if previous else []
    made_at = _as_of(previous) if previous else None
    before = _rows(previous / "forecast") if previous and made_at is not None else []
    rows = carried(earlier, before, made_at, as_of)
    fids = sorted(record_fids(rows))
    happened = Happened.from_rows(
        _rows(
            run_dir / "state_history",
            ["observer", "fid", "at", "cnset"],
            pc.field("fid").isin(fids) & (pc.field("observer") == pc.field("subject")),
        )
        if fids
        else [],
        _rows(run_dir / "store_periods"),
        _rows(run_dir / "folders", ["fid", "replicas"], pc.field("fid").isin(fids)) if fids else [],
    )
    out = judged(rows, happened, as_of)
    _write(run_dir / RECORD, out)
    return len(out)


def _rows(path: Path, columns: Sequence[str] | None = None, where: Any = None) -> list[dict[str, Any]]:
    """A published table's rows (times in microseconds); none when the run has not the table (a
    run published by an earlier pfscope), and null for a column it has not."""
    import pyarrow.dataset as ds  # here: it imports pandas (0.2 s), and the CLI imports this module for ingest too

    if not path.exists():
        return []
    dataset = ds.dataset(str(path), format="parquet")
    present = [c for c in (columns or dataset.schema.names) if c in dataset.schema.names]
    table = dataset.to_table(columns=present, filter=where)
    for i, f in enumerate(table.schema):
        if pa.types.is_timestamp(f.type):
            table = table.set_column(i, f.name, pc.cast(table.column(i), pa.timestamp("us")).cast(pa.int64()))
    rows: list[dict[str, Any]] = table.to_pylist()
    for c in columns or ():
        if c not in present:
            for r in rows:
                r[c] = None
    return rows


def _as_of(run_dir: Path) -> int | None:
    rows = _rows(run_dir / "summary", ["as_of"])
    return rows[0]["as_of"] if rows and rows[0]["as_of"] is not None else None


def _write(dest: Path, rows: list[dict[str, Any]]) -> None:
    write_live(dest, arrow_table(RECORD_TABLES[RECORD], rows))
