"""Which final files a refold writes again: those, and only those, that hold a refolded folder."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pfscope.spark_jobs.compute import writing
from pfscope.spark_jobs.compute.writing import InputFiles, files_holding, link_final_files, to_compact
from pfscope.spark_jobs.model.events import make_seq


def _write(path: Path, fids: list[str], row_group_size: int = 2) -> Path:
    pq.write_table(pa.table({"fid": fids, "n": list(range(len(fids)))}), path, row_group_size=row_group_size)
    return path


def test_files_holding_reads_past_the_statistics(tmp_path: Path) -> None:
    # sorted by fid, as the fold writes them; row groups of two rows: [1-10, 1-30], [1-50, 1-70]
    a = _write(tmp_path / "a.parquet", ["1-10", "1-30", "1-50", "1-70"])
    b = _write(tmp_path / "b.parquet", ["1-20", "1-40"])
    c = _write(tmp_path / "c.parquet", ["2-10"])
    files = [a, b, c]
    assert files_holding(files, {"1-30"}) == [a]
    assert files_holding(files, {"1-40", "2-10"}) == [b, c]
    # inside a's and b's ranges by their statistics, in neither file
    assert files_holding(files, {"1-25", "1-60"}) == []
    assert files_holding(files, {"9-99"}) == []
    assert files_holding(files, set()) == []
    # another column, of numbers (a line judged again: its ``seq``)
    assert files_holding(files, {1}, "n") == [a, b]
    assert files_holding(files, {3}, "n") == [a]
    assert files_holding(files, {7}, "n") == []


def _seqs(path: Path, seqs: list[int | None], row_group_size: int = 2) -> Path:
    pq.write_table(pa.table({"seq": pa.array(seqs, pa.int64())}), path, row_group_size=row_group_size)
    return path


def test_files_holding_the_lines_of_input_files_by_their_place(tmp_path: Path) -> None:
    # ``seq``: the input file's index in the high bits, then the line number
    seq = make_seq

    # in input order, as a full run writes the kept lines: files 0-1, then 2-3, then 5
    a = _seqs(tmp_path / "a.parquet", [seq(0, 1), seq(0, 9), seq(1, 2), seq(1, 2**32 - 1)])
    b = _seqs(tmp_path / "b.parquet", [seq(2, 0), seq(3, 3), None])
    c = _seqs(tmp_path / "c.parquet", [seq(5, 1)])
    # a refresh's file: lines of several input files, not in ranges
    d = _seqs(tmp_path / "d.parquet", [seq(0, 3), seq(5, 2)], row_group_size=10)
    files = [a, b, c, d]

    def holding(*indexes: int) -> list[Path]:
        return files_holding(files, InputFiles(frozenset(indexes)), "seq")

    assert holding(5) == [c, d]
    assert holding(1) == [a]
    assert holding(3, 4) == [b]
    # within the statistics' range of d's one row group, and b's last, in no file
    assert holding(4) == []
    assert holding(2, 6) == [b]
    assert holding() == []
    assert InputFiles(frozenset({1, 3})).ranges() == [(seq(1, 0), seq(2, 0) - 1), (seq(3, 0), seq(4, 0) - 1)]


def test_rewritten_files_are_not_linked(tmp_path: Path) -> None:
    previous, run = tmp_path / "prev", tmp_path / "run"
    (previous / "state_history").mkdir(parents=True)
    for name in ("final-r1-part-0.parquet", "final-r1-part-1.parquet", "live-r1-part-0.parquet"):
        _write(previous / "state_history" / name, ["1-1"])
    link_final_files(previous, run, ("state_history",), frozenset({"state_history/final-r1-part-1.parquet"}))
    assert sorted(p.name for p in (run / "state_history").iterdir()) == ["final-r1-part-0.parquet"]
    assert (run / "state_history" / "final-r1-part-0.parquet").stat().st_ino == (
        previous / "state_history" / "final-r1-part-0.parquet"
    ).stat().st_ino


def test_small_final_files_are_compacted_once_there_are_many(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(writing, "MAX_FINAL_FILES", 3)
    big = _write(
        tmp_path / "final-full-part-0.parquet", [f"1-{i:06d}" for i in range(5000)], row_group_size=5000
    )
    monkeypatch.setattr(writing, "SMALL_FILE_BYTES", big.stat().st_size)  # it is not small; the others are
    small = [_write(tmp_path / f"final-r{i}-part-0.parquet", ["1-1"]) for i in range(3)]
    assert to_compact([big, *small[:2]]) == []
    assert to_compact([big, *small]) == small  # the full run's file stays as it is
    # many small files of one full run (one per fold partition) and one refresh's: two runs
    parts = [
        _write(tmp_path / f"final-20261126T094719Z-4ef657-part-0000{i}-c000.snappy.parquet", ["1-1"])
        for i in range(5)
    ]
    assert to_compact([*parts, small[0]]) == []
    assert to_compact([*parts, *small]) == [*parts, *small]
