"""What a refresh takes back of a rewritten file (``compute.retaken``), and when it cannot."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pfscope.spark_jobs.compute import state
from pfscope.spark_jobs.compute.refresh_lines import CannotRefresh
from pfscope.spark_jobs.compute.retaken import retaken_files, widened
from pfscope.spark_jobs.compute.state import FileRead, Manifest, NewBytes, Plan
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


def on_disk(tmp_path: Path, sizes: tuple[int, int]) -> list[str]:
    """``FILES`` as files of ``sizes`` bytes (a refresh weighs what it reads again by them)."""
    paths = []
    for name, size in zip(FILES, sizes, strict=True):
        (tmp_path / name).write_bytes(b"x" * size)
        paths.append(str(tmp_path / name))
    return paths


def test_a_later_file_sharing_a_rewritten_ones_changes_is_read_again_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """a was rewritten; its store's changes to the folder go on in b, which only grew: b is read
    again whole too (its verdicts depended on a's lines), so the refresh can take both back."""
    monkeypatch.setattr(state, "RETAKE_LIMIT", 1.0)  # two files: each is much of the log
    m, run = earlier_run(tmp_path)
    files = on_disk(tmp_path, (50, 120))
    why = f"{files[0]} was rewritten since it was read"
    plan = Plan(new=[NewBytes(0, files[0], 0, 50, 1), NewBytes(1, files[1], 100, 120, 6)], retaken={0: why})
    wide = widened(plan, run, files)
    assert wide.retaken == {
        0: why,
        1: f"{files[1]} shares a store's changes or a message with {files[0]}, read again",
    }
    assert wide.new == [NewBytes(0, files[0], 0, 50, 1), NewBytes(1, files[1], 0, 120, 1)]
    assert plan.retaken == {0: why}  # the plan given stays as it was
    r = retaken_files(m, run, wide.retaken, files, [])
    assert r is not None and sorted(r.files) == [0, 1]


def test_a_later_file_sharing_nothing_is_not_read_again(tmp_path: Path) -> None:
    _, run = earlier_run(tmp_path)
    files = on_disk(tmp_path, (50, 100))
    plan = Plan(new=[NewBytes(1, files[1], 0, 100, 1)], retaken={1: WHY})
    assert widened(plan, run, files) is plan


def test_reading_too_much_again_is_a_full_run(tmp_path: Path) -> None:
    _, run = earlier_run(tmp_path)
    files = on_disk(tmp_path, (30, 70))  # b is 70 % of the log
    plan = Plan(new=[NewBytes(0, files[0], 0, 30, 1)], retaken={0: "a was rewritten"})
    shares = r"^a was rewritten, and .*b.jsonl shares a message or a store's changes with it"
    with pytest.raises(
        CannotRefresh, match=shares + r" \(2 files to read again whole, 100% of the log's bytes"
    ):
        widened(plan, run, files)
