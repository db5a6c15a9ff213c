"""What a refresh takes back of a rewritten file (``compute.retaken``), and when it cannot."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pfscope.spark_jobs.compute.refresh_lines import CannotRefresh
from pfscope.spark_jobs.compute.retaken import retaken_files
from pfscope.spark_jobs.compute.state import FileRead, Manifest
from pfscope.spark_jobs.model.events import make_seq

FILES = ["a.jsonl", "b.jsonl"]
WHY = "b.jsonl was rewritten since it was read"
SHARED = f"^{WHY}, and a.jsonl shares a message or a store's changes with it$"


def earlier_run(
    tmp_path: Path, status: list[tuple[int, int, str, bool]] | None = None
) -> tuple[Manifest, Path]:
    """Two files of one folder's days, as ingest writes them: a (day 1) and b (day 2); b's lines
    (a send, its receive, a store's changes to the folder that a's began, a repeat, a reject)."""
    lines = [
        # seq, shard, fid, ts, first_seq, why
        (make_seq(0, 1), "m<1>", "1-A", 10, make_seq(0, 1), None),
        (make_seq(0, 2), "c2:S11-A", "1-A", 11, make_seq(0, 2), None),
        (make_seq(1, 1), "m<2>", "1-A", 20, make_seq(1, 1), None),
        (make_seq(1, 2), "m<2>", None, 21, make_seq(1, 2), None),
        (make_seq(1, 3), "c2:S11-A", "1-A", 22, make_seq(1, 3), None),
        (make_seq(1, 4), "c2:S11-A", "1-A", 22, make_seq(1, 3), None),  # a repeat
        (make_seq(1, 5), "m<9>", None, 23, make_seq(1, 5), "a receive of a message never sent"),
    ]
    names = ["seq", "shard", "fid", "ts", "first_seq", "why"]
    state = tmp_path / "run" / "_state"
    (state / "lines").mkdir(parents=True)
    (state / "events").mkdir()
    rows = [dict(zip(names, r, strict=True)) for r in lines]
    pq.write_table(pa.Table.from_pylist(rows), state / "lines" / "a.parquet")
    events = [
        {"ts": r["ts"], "seq": r["seq"]} for r in rows if r["why"] is None and r["seq"] == r["first_seq"]
    ]
    pq.write_table(pa.Table.from_pylist(events), state / "events" / "a.parquet")
    m = Manifest(
        run_id="r",
        as_of=30,
        last_ts=22,
        code="c",
        topology="t",
        files=[FileRead(FILES[0], 50, 2, False, "x"), FileRead(FILES[1], 100, 5, False, "y")],
        lines_read=7,
        accepted=5,
        duplicates=1,
        status=status or [],
    )
    return m, tmp_path / "run"


def test_a_later_file_is_taken_back(tmp_path: Path) -> None:
    """The store's changes to the folder began in a (before b, stamped before b's): a's verdicts
    did not depend on b's lines; the folder is in both files."""
    m, run = earlier_run(tmp_path)
    new = [(make_seq(1, 1), "m<2>", "1-A"), (make_seq(1, 2), "c2:S11-C", "1-C")]
    r = retaken_files(m, run, {1: WHY}, FILES, new)
    assert r is not None
    assert r.files == {1: "b.jsonl"}
    assert r.fids == ("1-A", "1-C")  # its folders before and now
    assert r.msgs == {"<2>", "<9>"}
    assert r.seqs == {make_seq(1, n) for n in range(1, 6)}
    assert (r.lines, r.accepted, r.duplicates) == (5, 3, 1)
    assert r.last_ts == 11  # a's: b's events are taken back


def test_nothing_to_take_back() -> None:
    m = Manifest("r", 1, 1, "c", "t", [], 0, 0, 0)
    assert retaken_files(m, Path("/nonexistent"), {}, FILES, []) is None


@pytest.mark.parametrize(
    "new",
    [
        [(make_seq(0, 3), "m<2>", None)],  # a receive in a of a message b sends
        [(make_seq(1, 1), "m<1>", "1-A")],  # b's new line is of a's message
    ],
)
def test_a_message_in_two_files_cannot_be(tmp_path: Path, new: list[tuple[int, str, str | None]]) -> None:
    m, run = earlier_run(tmp_path)
    with pytest.raises(CannotRefresh, match=SHARED):
        retaken_files(m, run, {1: WHY}, FILES, new)


def test_an_earlier_file_whose_changes_go_on_in_a_later_one_cannot_be(tmp_path: Path) -> None:
    """a's store's changes to the folder go on in b: b's verdicts depended on a's lines."""
    m, run = earlier_run(tmp_path)
    other = "a.jsonl was rewritten since it was read"
    with pytest.raises(CannotRefresh, match=f"^{other}, and b.jsonl shares"):
        retaken_files(m, run, {0: other}, FILES, [])


def test_a_file_with_up_down_lines_cannot_be(tmp_path: Path) -> None:
    m, run = earlier_run(tmp_path, status=[(5, make_seq(1, 6), "S1", True)])
    with pytest.raises(CannotRefresh, match="held up/down lines"):
        retaken_files(m, run, {1: WHY}, FILES, [])
