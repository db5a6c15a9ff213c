"""Lines an earlier run rejected that a refresh judges otherwise.

The usual late data of a share of exports: one server's export arrives a day late, after the
other servers' receives of its messages were read and rejected as receives of messages never
sent. The refresh judges those receives again with the late sends (``reading.judge``, the rules
between lines) and, where the verdict changed, this module takes the earlier rows back: a line
now accepted becomes an event like a new line (parsed again from its text, which its reject row
kept: the same ``parsed_row``, the one set of rules), a repeat of one counts as a duplicate, and
one rejected for another reason (or naming another line) gets its new reject row. Their folders
are then folded again from their first event, as for any late line.

Plain Python and pyarrow: the rows are few, and read from the earlier run's files directly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pfscope.spark_jobs.compute.writing import files_holding, final_files
from pfscope.spark_jobs.model.events import LINE_BITS


@dataclass
class Rejudged:
    """The lines judged again, in input order, and what becomes of them."""

    seqs: list[int]
    lines: list[tuple[str, int]]  # (source, line) of each: its row in the earlier ``rejects``
    revived: list[tuple[Any, ...]]  # parsed rows (``stage1.PARSED_COLUMNS``) of the lines accepted now
    duplicates: int  # lines that are repeats of a line accepted now
    rejects: list[tuple[Any, ...]]  # ``rejects`` rows of the lines still rejected, for their new reason
    times: list[int]  # each revived line's time

    @property
    def last_ts(self) -> int | None:
        return max(self.times, default=None)

    def late(self, as_of: int) -> bool:
        """Some line accepted now is stamped by ``as_of`` (its folder is folded again)."""
        return any(t <= as_of for t in self.times)

    @classmethod
    def of(
        cls,
        rows: Sequence[Any],
        run_dir: Path,
        files: list[str],
        parse: Callable[[int, str], tuple[Any, ...]],
    ) -> Rejudged:
        """``rows``: (seq, first_seq, why, conflict, ts) of each line judged otherwise now;
        ``run_dir``: the earlier run, whose ``rejects`` hold their text; ``parse``: stage 1."""
        rows = sorted(rows, key=lambda r: r[0])
        lines = [place(r[0], files) for r in rows]
        texts = earlier_texts(run_dir, set(lines))
        revived, rejects, times, duplicates = [], [], [], 0
        for (seq, first_seq, why, conflict, ts), (source, line) in zip(rows, lines, strict=True):
            text = texts[(source, line)]
            if why is None and seq == first_seq:
                parsed = parse(seq, text)
                assert parsed[1] is None, f"{source}:{line} no longer parses as it did: {parsed[1]}"
                revived.append(parsed)
                times.append(ts)
            elif why is None:
                duplicates += 1
            else:
                at = place(conflict, files) if conflict is not None else (None, None)
                rejects.append((source, line, why, text, *at))
        return cls([r[0] for r in rows], lines, revived, duplicates, rejects, times)


def place(seq: int, files: list[str]) -> tuple[str, int]:
    """A line's source file and line number, from its ``seq``."""
    return files[seq >> LINE_BITS], seq & ((1 << LINE_BITS) - 1)


def earlier_texts(run_dir: Path, lines: set[tuple[str, int]]) -> dict[tuple[str, int], str]:
    """The text of each of ``lines`` from the earlier run's ``rejects`` (read only from the
    files that hold one of their line numbers)."""
    import pyarrow.parquet as pq

    out: dict[tuple[str, int], str] = {}
    for f in files_holding(final_files(run_dir, "rejects"), {n for _, n in lines}, "line"):
        t = pq.read_table(f, columns=["source", "line", "text"])
        for source, line, text in zip(
            *(t.column(c).to_pylist() for c in ("source", "line", "text")), strict=True
        ):
            if (source, line) in lines:
                out[(source, line)] = text
    missing = lines - out.keys()
    assert not missing, f"no earlier reject row for {sorted(missing)[:3]}"
    return out
