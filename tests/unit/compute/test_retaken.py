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
WHY = "a.jsonl was rewritten since it was read"


def earlier_run(
    tmp_path: Path, status: list[tuple[int, int, str, bool]] | None = None
) -> tuple[Manifest, Path]:
    """Two files: a's lines of folder 1-A (a send, its receive, a change, a repeat, a reject),
    b's of folder 1-B."""
    lines = [
        # seq, shard, fid, first_seq, why
        (make_seq(0, 1), "m<1>", "1-A", make_seq(0, 1), None),
        (make_seq(0, 2), "m<1>", None, make_seq(0, 2), None),
        (make_seq(0, 3), "c2:S11-A", "1-A", make_seq(0, 3), None),
        (make_seq(0, 4), "c2:S11-A", "1-A", make_seq(0, 3), None),  # a repeat
        (make_seq(0, 5), "m<9>", None, make_seq(0, 5), "a receive of a message never sent"),
        (make_seq(1, 1), "m<2>", "1-B", make_seq(1, 1), None),
    ]
    names = ["seq", "shard", "fid", "first_seq", "why"]
    state = tmp_path / "run" / "_state"
    (state / "lines").mkdir(parents=True)
    (state / "events").mkdir()
    pq.write_table(
        pa.Table.from_pylist([dict(zip(names, r, strict=True)) for r in lines]), state / "lines" / "a.parquet"
    )
    events = [
        {"ts": 10, "seq": make_seq(0, 1)},
        {"ts": 30, "seq": make_seq(0, 3)},
        {"ts": 20, "seq": make_seq(1, 1)},
    ]
    pq.write_table(pa.Table.from_pylist(events), state / "events" / "a.parquet")
    m = Manifest(
        run_id="r",
        as_of=30,
        last_ts=30,
        code="c",
        topology="t",
        files=[FileRead(FILES[0], 100, 5, False, "x"), FileRead(FILES[1], 50, 1, False, "y")],
        lines_read=6,
        accepted=4,
        duplicates=1,
        status=status or [],
    )
    return m, tmp_path / "run"


def test_a_file_of_its_own_is_taken_back(tmp_path: Path) -> None:
    m, run = earlier_run(tmp_path)
    new = [
        (make_seq(0, 1), "m<1>", "1-A"),
        (make_seq(0, 2), "c2:S11-C", "1-C"),
        (make_seq(1, 2), "m<3>", "1-B"),
    ]
    r = retaken_files(m, run, {0: WHY}, FILES, new)
    assert r is not None
    assert r.files == {0: "a.jsonl"}
    assert r.fids == ("1-A", "1-C")  # its folders before and now
    assert r.seqs == {make_seq(0, n) for n in range(1, 6)}
    assert (r.lines, r.accepted, r.duplicates) == (5, 3, 1)
    assert r.last_ts == 20  # b's: a's events are taken back


def test_nothing_to_take_back() -> None:
    m = Manifest("r", 1, 1, "c", "t", [], 0, 0, 0)
    assert retaken_files(m, Path("/nonexistent"), {}, FILES, []) is None


@pytest.mark.parametrize(
    "new",
    [
        [(make_seq(1, 2), "m<1>", None)],  # a receive in b of a message a sends
        [(make_seq(1, 2), "c2:S11-X", "1-A")],  # a change in b to a's folder
        [(make_seq(0, 1), "m<2>", "1-B")],  # a's new line is of b's message
    ],
)
def test_a_file_sharing_a_message_or_folder_cannot_be(
    tmp_path: Path, new: list[tuple[int, str, str | None]]
) -> None:
    m, run = earlier_run(tmp_path)
    with pytest.raises(CannotRefresh, match=f"^{WHY}, and b.jsonl shares a message or a folder with it$"):
        retaken_files(m, run, {0: WHY}, FILES, new)


def test_a_file_with_up_down_lines_cannot_be(tmp_path: Path) -> None:
    m, run = earlier_run(tmp_path, status=[(5, make_seq(0, 6), "S1", True)])
    with pytest.raises(CannotRefresh, match="held up/down lines"):
        retaken_files(m, run, {0: WHY}, FILES, [])
