"""A worker's own Parquet files, by kind: Spark's layout, renamed into place only when complete."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pfscope.spark_jobs.runtime import worker_files
from pfscope.spark_jobs.runtime.worker_files import KindFiles

SCHEMA = pa.schema(
    [
        ("kind", pa.string()),
        ("n", pa.int64()),
        ("text", pa.string()),
        ("blob", pa.binary()),
        ("lines", pa.list_(pa.string())),
    ]
)


def _rows(kind: str, count: int, start: int = 0) -> list[dict[str, object]]:
    return [
        {
            "kind": kind,
            "n": i,
            "text": f"t{i}" if i % 3 else None,
            "blob": bytes([i % 256]),
            "lines": [f"l{i}", "x"] if i % 2 else None,
        }
        for i in range(start, start + count)
    ]


def _files(dest: Path) -> list[str]:
    return sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())


def test_rows_go_to_one_file_per_kind_without_the_kind_column(tmp_path: Path) -> None:
    files = KindFiles(str(tmp_path), SCHEMA, "kind", "part-7", dictionary=["text"])
    rows = _rows("a", 5) + _rows("b", 3, start=100) + _rows("a", 2, start=5)
    for row in rows:
        files.add(row)
    assert _files(tmp_path) == []  # nothing written yet: the rows are held until a row group is full
    assert files.close() == {"a": 7, "b": 3}
    assert _files(tmp_path) == ["kind=a/part-7.parquet", "kind=b/part-7.parquet"]
    got = pq.read_table(tmp_path / "kind=a" / "part-7.parquet")
    assert got.schema.names == ["n", "text", "blob", "lines"]
    want = [{k: v for k, v in r.items() if k != "kind"} for r in rows if r["kind"] == "a"]
    assert got.to_pylist() == want


def test_a_full_row_group_is_written_while_the_task_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worker_files, "ROW_GROUP_ROWS", 4)
    files = KindFiles(str(tmp_path), SCHEMA, "kind", "p")
    for row in _rows("a", 10):
        files.add(row)
    hidden = _files(tmp_path)  # from Spark until the task ends
    assert len(hidden) == 1 and hidden[0].startswith("kind=a/.p.") and hidden[0].endswith(".tmp")
    files.close()
    meta = pq.ParquetFile(tmp_path / "kind=a" / "p.parquet").metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [4, 4, 2]


def test_a_failed_task_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker_files, "ROW_GROUP_ROWS", 2)
    with (
        pytest.raises(ValueError, match="the task broke"),
        KindFiles(str(tmp_path), SCHEMA, "kind", "p") as files,
    ):
        for row in _rows("a", 5) + _rows("b", 1):
            files.add(row)
        assert _files(tmp_path)  # full row groups written, under hidden names
        raise ValueError("the task broke")
    assert _files(tmp_path) == []


def test_a_task_that_ends_well_renames_its_files_into_place(tmp_path: Path) -> None:
    with KindFiles(str(tmp_path), SCHEMA, "kind", "p") as files:
        for row in _rows("a", 3):
            files.add(row)
    assert _files(tmp_path) == ["kind=a/p.parquet"]


def test_a_retried_task_replaces_its_first_attempts_file(tmp_path: Path) -> None:
    for n in (3, 2):
        files = KindFiles(str(tmp_path), SCHEMA, "kind", "part-1")
        for row in _rows("a", n):
            files.add(row)
        files.close()
    assert _files(tmp_path) == ["kind=a/part-1.parquet"]
    assert pq.read_table(tmp_path / "kind=a" / "part-1.parquet").num_rows == 2


def test_two_attempts_at_once_write_apart_and_the_last_to_end_wins_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worker_files, "ROW_GROUP_ROWS", 2)
    first, second = (KindFiles(str(tmp_path), SCHEMA, "kind", "part-1") for _ in range(2))
    for row in _rows("a", 4):  # interleaved, as a task and its speculative copy
        first.add(row)
        second.add({**row, "text": "copy"})
    assert len(_files(tmp_path)) == 2
    first.close()
    second.close()
    assert _files(tmp_path) == ["kind=a/part-1.parquet"]
    assert pq.read_table(tmp_path / "kind=a" / "part-1.parquet").column("text").to_pylist() == ["copy"] * 4


def test_a_task_whose_files_cannot_be_completed_leaves_no_hidden_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(src: str, dst: str) -> None:
        raise OSError("the disk is full")

    monkeypatch.setattr(worker_files.os, "replace", refuse)
    with (
        pytest.raises(OSError, match="the disk is full"),
        KindFiles(str(tmp_path), SCHEMA, "kind", "p") as files,
    ):
        for row in _rows("a", 2) + _rows("b", 2):
            files.add(row)
    assert _files(tmp_path) == []
