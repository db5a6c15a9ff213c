"""Ingest's events by block and folder (``exchange.event_files``): every line once, a folder's lines
of a block in one file in the log's order, a receive with its message's send, every block's files."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pfscope.spark_jobs.exchange.event_files import (
    BLOCK_HOURS,
    FILLED_DAYS,
    FOLDER_FILES,
    LINE_JSON,
    NO_BLOCK,
    _read_block,
    block_of,
    file_name,
    file_of,
    swap_in,
    write_event_files,
)


def line(**rec: object) -> str:
    return json.dumps(rec, separators=(",", ":")) + "\n"


def two_folders() -> tuple[str, str]:
    """Two folders that fall into different files."""
    fids = [f"1-{n:X}" for n in range(2, 200)]
    first = fids[0]
    return first, next(f for f in fids if file_of(f) != file_of(first))


def test_each_folder_in_one_file_in_the_log_order(tmp_path: Path) -> None:
    a, b = two_folders()
    lines = [
        line(ts="2026-11-02T08:00:00Z", store="S1", kind="change", fid=a, cn=1),
        line(
            ts="2026-11-02T08:00:01Z",
            store="S1",
            kind="send",
            msg="<m1>",
            type="content",
            fid=a,
            to=["S2"],
            cnset="S1:1",
        ),
        line(ts="2026-11-02T08:00:02Z", store="S2", kind="change", fid=b, cn=1),
        # a receive stamped before its send (a clock behind) still goes with the send
        line(ts="2026-11-02T08:00:03Z", store="S1", kind="receive", msg="<m2>"),
        line(
            ts="2026-11-02T08:00:04Z",
            store="S2",
            kind="send",
            msg="<m2>",
            type="content",
            fid=b,
            to=["S1"],
            cnset="S2:1",
        ),
        # processed a day later (a store down): in its send's block
        line(ts="2026-11-03T08:00:05Z", store="S2", kind="receive", msg="<m1>"),
        line(ts="2026-11-03T08:00:06Z", store="S1", kind="replicas", fid=a, replicas=["S1", "S2"]),
    ]
    log = tmp_path / "events.jsonl"
    log.write_text("".join(lines), encoding="utf-8")
    write_event_files(log, tmp_path / "events")
    files = sorted(p.name for p in (tmp_path / "events").iterdir())
    assert BLOCK_HOURS == 6
    # the blocks between too: every block's files
    blocks = ["2026-11-02T06", "2026-11-02T12", "2026-11-02T18", "2026-11-03T00", "2026-11-03T06"]
    assert files == [file_name(d, i) for d in blocks for i in range(FOLDER_FILES)]
    texts = {name: (tmp_path / "events" / name).read_text(encoding="utf-8") for name in files}
    assert texts[file_name(blocks[0], file_of(a))] == "".join(lines[i] for i in (0, 1, 5))
    assert texts[file_name(blocks[0], file_of(b))] == "".join(lines[i] for i in (2, 3, 4))
    assert texts[file_name(blocks[-1], file_of(a))] == lines[6]
    assert sum(len(t) for t in texts.values()) == len("".join(lines))  # nothing else


def test_a_clock_years_off_fills_no_blocks_between(tmp_path: Path) -> None:
    far = f"{2026 + FILLED_DAYS // 365 + 1}-11-02T08:00:00Z"
    lines = [
        line(ts="2026-11-02T08:00:00Z", store="S1", kind="change", fid="1-2", cn=1),
        line(ts=far, store="S1", kind="change", fid="1-2", cn=2),
        line(ts="not a time", store="S1", kind="change", fid="1-2", cn=3),
    ]
    log = tmp_path / "events.jsonl"
    log.write_text("".join(lines), encoding="utf-8")
    write_event_files(log, tmp_path / "events")
    blocks = sorted({p.name.rsplit("-folders-", 1)[0] for p in (tmp_path / "events").iterdir()})
    assert blocks == [NO_BLOCK, "2026-11-02T06", far[:11] + "06"]


@pytest.mark.parametrize(
    ("ts", "block"),
    [
        ("2026-11-02T23:59:59Z", "2026-11-02T18"),
        ("2026-11-03T01:00:00+02:00", "2026-11-02T18"),  # UTC's block
        ("2026-11-02T06:00:00Z", "2026-11-02T06"),
        ("2026-11-02T05:59:59.999Z", "2026-11-02T00"),
        ("not a time", NO_BLOCK),
    ],
)
def test_the_block_of_a_line(ts: str, block: str) -> None:
    assert block_of(ts) == block


@given(
    st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31)).map(
        lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ")
    )
    | st.from_regex(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", fullmatch=True)
)
def test_a_time_as_ingest_writes_it_has_the_block_its_reading_gives(ts: str) -> None:
    """The shortcut for times as ingest writes them (one reading per date and hour) gives what
    reading the time gives, out-of-range dates, hours, minutes and seconds included."""
    assert block_of(ts) == _read_block(ts)


def test_a_new_folder_replaces_the_old_whole(tmp_path: Path) -> None:
    folder = tmp_path / "events"
    folder.mkdir()
    (folder / "old.jsonl").write_text("x\n", encoding="utf-8")
    partial = tmp_path / "events.partial"
    partial.mkdir()
    (partial / file_name("2026-11-02T06", 0)).write_text("y\n", encoding="utf-8")
    swap_in(partial, folder)
    assert [p.name for p in folder.iterdir()] == [file_name("2026-11-02T06", 0)]
    assert not partial.exists() and not (tmp_path / "events.old").exists()


def test_the_new_folder_must_be_new(tmp_path: Path) -> None:
    (tmp_path / "events").mkdir()
    log = tmp_path / "events.jsonl"
    log.write_text("", encoding="utf-8")
    with pytest.raises(FileExistsError):
        write_event_files(log, tmp_path / "events")


plain = st.one_of(st.none(), st.booleans(), st.integers(), st.text(), st.floats(allow_nan=False))
line_values = st.recursive(plain, lambda inner: st.lists(inner, max_size=4), max_leaves=12)


@given(st.dictionaries(st.text(), line_values, max_size=8))
def test_a_line_is_written_as_json_dumps_writes_it(row: dict[str, object]) -> None:
    """One encoder for every line writes exactly what ``json.dumps`` with the line's options
    wrote: non-ASCII text as it is, lone surrogates and control characters escaped."""
    assert LINE_JSON.encode(row) == json.dumps(row, ensure_ascii=False, separators=(",", ":"))
