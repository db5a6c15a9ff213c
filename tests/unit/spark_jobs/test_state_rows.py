"""What a refresh reads of a kept state in the driver: rows of a Parquet folder by a column's
values, and of a store's changes to a folder only those the rules between lines still need."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from spark_jobs.state import lines_that_judge, rows_where


def _lines(rows: list[tuple[str, int, int | None, int]]) -> pa.Table:
    shard, ts, cn, seq = zip(*rows, strict=True)
    return pa.table({"shard": list(shard), "ts": pa.array(ts, pa.int64()), "cn": pa.array(cn, pa.int64()),
                     "seq": pa.array(seq, pa.int64())})


def test_changes_before_the_first_new_one_leave_only_the_highest() -> None:
    lines = _lines([
        ("c4:PFS11-1", 10, 1, 1), ("c4:PFS11-1", 20, 5, 2), ("c4:PFS11-1", 20, 5, 9),  # a repeat, later input
        ("c4:PFS11-1", 30, 3, 3), ("c4:PFS11-1", 40, 6, 4),  # a change not above 5; one after the new line's time
        ("mmsg-1", 5, None, 5), ("mmsg-1", 50, None, 6),  # a message's lines: all stay
        ("c4:PFS21-1", 10, 1, 7),  # a shard whose new line is earlier: it stays
    ])
    kept = lines_that_judge(lines, {"c4:PFS11-1": 35, "mmsg-1": 30, "c4:PFS21-1": 10})
    assert kept.column("seq").to_pylist() == [2, 4, 5, 6, 7]


def test_a_change_at_the_first_new_lines_time_stays() -> None:
    # same time: it may be the first occurrence of a new line's meaning
    lines = _lines([("c4:PFS11-1", 10, 1, 1), ("c4:PFS11-1", 35, 2, 2)])
    assert lines_that_judge(lines, {"c4:PFS11-1": 35}).column("seq").to_pylist() == [1, 2]


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
