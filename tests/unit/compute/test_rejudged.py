"""Lines rejected before, judged otherwise by a refresh: their earlier rows found by file and
line, and each verdict's outcome (without Spark)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pfscope.spark_jobs.compute.rejudged import Rejudged, place
from pfscope.spark_jobs.model.events import make_seq

FILES = ["/logs/a.jsonl", "/logs/b.jsonl"]


def _rejects(run: Path, rows: list[tuple[str, int, str]], name: str) -> None:
    (run / "rejects").mkdir(parents=True, exist_ok=True)
    source, line, text = zip(*rows, strict=True)
    pq.write_table(
        pa.table(
            {
                "source": list(source),
                "line": pa.array(line, pa.int64()),
                "reason": ["never sent"] * len(rows),
                "text": list(text),
            }
        ),
        run / "rejects" / name,
    )


def test_place_is_the_inverse_of_make_seq() -> None:
    assert place(make_seq(1, 7), FILES) == ("/logs/b.jsonl", 7)
    assert place(make_seq(0, 0), FILES) == ("/logs/a.jsonl", 0)


def test_each_verdict_has_its_outcome(tmp_path: Path) -> None:
    # the same line number in both files: only the right file's row is the line's
    _rejects(tmp_path, [("/logs/a.jsonl", 3, "a3"), ("/logs/b.jsonl", 9, "b9")], "final-r1-part-0.parquet")
    _rejects(tmp_path, [("/logs/b.jsonl", 3, "b3"), ("/logs/a.jsonl", 5, "a5")], "final-r2-part-0.parquet")
    parsed = []

    def parse(seq: int, text: str) -> tuple[object, ...]:
        parsed.append(text)
        return (seq, None, None, text)

    a3, b3, a5, b9 = make_seq(0, 3), make_seq(1, 3), make_seq(0, 5), make_seq(1, 9)
    got = Rejudged.of(
        [
            (b3, b3, None, None, 300),  # accepted now: an event, parsed again from its text
            (a3, a3, None, None, 100),
            (a5, a3, None, None, 500),  # a repeat of a line accepted now
            (b9, b9, "receive before its send", a3, 900),  # rejected for another reason, naming a line
        ],
        tmp_path,
        FILES,
        parse,
    )
    assert got.seqs == [a3, a5, b3, b9]  # input order
    assert got.lines == [
        ("/logs/a.jsonl", 3),
        ("/logs/a.jsonl", 5),
        ("/logs/b.jsonl", 3),
        ("/logs/b.jsonl", 9),
    ]
    assert [r[3] for r in got.revived] == ["a3", "b3"] == parsed
    assert got.duplicates == 1
    assert got.rejects == [("/logs/b.jsonl", 9, "receive before its send", "b9", "/logs/a.jsonl", 3)]
    assert got.last_ts == 300 and got.late(100) and not got.late(99)


def test_a_line_without_its_earlier_row_is_an_error(tmp_path: Path) -> None:
    _rejects(tmp_path, [("/logs/a.jsonl", 3, "a3")], "final-r1-part-0.parquet")
    with pytest.raises(AssertionError, match="no earlier reject row"):
        Rejudged.of(
            [(make_seq(1, 3), make_seq(1, 3), None, None, 1)], tmp_path, FILES, lambda s, t: (s, None)
        )
