"""What a refresh reads of a kept state in the driver: rows of a Parquet folder by a column's
values, and of a store's changes to a folder only those the rules between lines still need."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pfscope.spark_jobs.compute.state_rows import earlier_lines, rows_where

COLUMNS = ["seq", "key", "kind", "store", "ts", "msg", "cn", "fid", "shard", "first_seq", "why"]


def _lines(folder: Path, rows: list[tuple[str, int, int | None, int]], row_group_size: int = 3) -> Path:
    """Kept lines of (shard, ts, cn, seq), in row groups of ``row_group_size``."""
    folder.mkdir(exist_ok=True)
    shard, ts, cn, seq = zip(*rows, strict=True)
    n = len(rows)
    pq.write_table(
        pa.table(
            {
                "seq": pa.array(seq, pa.int64()),
                "key": [f"({s},)" for s in seq],
                "kind": ["change" if s.startswith("c") else "receive" for s in shard],
                "store": ["PFS1"] * n,
                "ts": pa.array(ts, pa.int64()),
                "msg": [None] * n,
                "cn": pa.array(cn, pa.int64()),
                "fid": ["1-1"] * n,
                "shard": list(shard),
                "first_seq": pa.array(seq, pa.int64()),
                "why": pa.array([None] * n, pa.string()),
            }
        ),
        folder / f"final-r{len(list(folder.iterdir()))}-part-0.parquet",
        row_group_size=row_group_size,
    )
    return folder


def test_changes_before_the_first_new_one_leave_only_the_highest(tmp_path: Path) -> None:
    folder = _lines(
        tmp_path / "lines",
        [
            ("c4:PFS11-1", 10, 1, 1),
            ("c4:PFS11-1", 20, 5, 2),
            ("c4:PFS11-1", 20, 5, 9),  # a repeat, later input
            ("c4:PFS11-1", 30, 3, 3),
            ("c4:PFS11-1", 40, 6, 4),  # a change not above 5; one after the new line's time
            ("mmsg-1", 5, None, 5),
            ("mmsg-1", 50, None, 6),  # a message's lines: all stay
            ("c4:PFS21-1", 10, 1, 7),  # a shard whose new line is earlier: it stays
            ("c4:PFS31-1", 10, 1, 8),  # a shard no new line touches
        ],
    )
    _lines(folder, [("c4:PFS11-1", 25, 7, 20), ("c4:PFS11-1", 36, 8, 21)])  # a later run's file: its top
    kept = earlier_lines(folder, {"c4:PFS11-1": 35, "mmsg-1": 30, "c4:PFS21-1": 10}, COLUMNS)
    rows = {r["seq"]: r for r in kept.to_pylist()}
    assert sorted(rows) == [4, 5, 6, 7, 20, 21]
    # the highest change before 35 stands for the shard's history, made from the first columns read
    assert rows[20] == {
        "seq": 20,
        "key": "#20",
        "kind": "change",
        "store": "PFS1",
        "ts": 25,
        "msg": None,
        "cn": 7,
        "fid": "1-1",
        "shard": "c4:PFS11-1",
        "first_seq": 20,
        "why": None,
    }
    assert rows[4]["key"] == "(4,)"  # the others are read whole
    assert earlier_lines(folder, {}, COLUMNS).num_rows == 0
    assert earlier_lines(tmp_path / "none", {"x": 1}, COLUMNS) is None


def test_a_change_at_the_first_new_lines_time_stays(tmp_path: Path) -> None:
    # same time: it may be the first occurrence of a new line's meaning
    folder = _lines(tmp_path / "lines", [("c4:PFS11-1", 10, 1, 1), ("c4:PFS11-1", 35, 2, 2)])
    kept = earlier_lines(folder, {"c4:PFS11-1": 35}, COLUMNS)
    assert [(r["seq"], r["key"]) for r in kept.to_pylist()] == [(2, "(2,)"), (1, "#1")]


def test_rows_where_reads_by_a_columns_values(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    folder.mkdir()
    pq.write_table(pa.table({"fid": ["1-1", "1-2"], "n": [1, 2]}), folder / "final-a-part-0.parquet")
    pq.write_table(pa.table({"fid": ["1-3"], "n": [3]}), folder / "live-b-part-0.parquet")
    assert rows_where(folder, "fid", ["1-2", "1-3"]).column("n").to_pylist() == [2, 3]
    assert rows_where(folder, "fid", ["1-2", "1-3"], but=True).column("n").to_pylist() == [1]
    assert rows_where(folder, "fid", ["1-1"], ["n"], files="live-*").num_rows == 0
    assert rows_where(folder, "fid", [], but=True).num_rows == 3
    assert rows_where(folder, "fid", []).num_rows == 0
    assert rows_where(tmp_path / "none", "fid", ["1-1"]) is None
