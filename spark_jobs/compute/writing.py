"""Writing a run's tables: pieces written by Spark side by side, then put in place.

A table's folder holds Parquet files of two kinds: ``final-*`` files hold rows that never change
(a state-history row, a closed entry, a processed message) and are kept by every later run, by
a hard link (no copy: a refresh costs what changed, and retention can remove the earlier run's
folder without losing them); ``live-*`` files hold rows of this run only. Readers see one
dataset per table, whatever its files. After many refreshes a table's small final files (the
refreshes' few rows) are written again as one (``to_compact``), so a reader never opens hundreds
of small files; the files of a full run, one per fold partition (the kept lines and events: one
per range of input order), stay as they are.
"""

from __future__ import annotations

import bisect
import errno
import os
import shutil
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pfscope.spark_jobs.model.events import LINE_BITS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from pfscope.spark_jobs.compute.job import JobResult, Piece

SMALL_TABLES = {
    "stores",
    "store_periods",
    "transits",
    "forecast",
    "forecast_requests",
    "folders",
    "summary",
    "replicas",
    "rejects",
    "backfill_entries",
    "responders",
}
#: tables the dashboard reads one folder at a time: written sorted by fid (see ``fold_groups``)
#: in row groups of about 1 MB, so a reader's ``fid ==`` filter skips the rest by statistics
FOLDER_TABLES = {"state_history", "state_table"}
ROW_GROUP_BYTES = 1 << 20
#: the kept lines and events, in input order in row groups of about 1 MB: a refresh reads the few
#: rows it wants (mostly recent ones) from the row groups that hold them (``state_rows.gather``)
SEQ_ORDERED = {"_state/lines", "_state/events"}
#: a table's small final files, once they come from this many runs, are compacted into one by
#: the next refresh
MAX_FINAL_FILES = 24
#: a final file below this size is small (a refresh's rows; a full run's are larger, or few)
SMALL_FILE_BYTES = 1 << 20
PIECES = "_pieces"
#: columns whose values hardly repeat, written without Parquet's dictionary: the writer fills a
#: dictionary for every row group, then finds it does not pay and writes the values again plain.
#: At 1M events, each table written again from a run's own files, two rounds (the process tree's
#: CPU s): the kept lines 7.6, 3.9 -> 3.2, 2.5 (4 % larger); messages 4.3, 2.5 -> 2.1, 1.7 (10 %
#: smaller); the kept events 6.2, 5.1 -> 3.9, 5.9 (no larger; within the noise). Columns whose
#: dictionary pays (a CN set sent to several stores, store names, times) keep it.
UNIQUE_COLUMNS = {
    "_state/lines": ("key", "seq", "first_seq", "shard", "msg"),
    "_state/events": ("seq", "msg_seq", "bytes"),
    "messages": ("msg", "cnset", "processed_at"),
}


def write_table(df: DataFrame, name: str, path: str) -> None:
    """One table (or piece), one Spark job."""
    out = df.coalesce(1) if name in SMALL_TABLES else df
    if name in SEQ_ORDERED:
        out = out.sortWithinPartitions("seq")
    writer = out.write.mode("error")
    if name in FOLDER_TABLES or name in SEQ_ORDERED:
        writer = writer.option("parquet.block.size", ROW_GROUP_BYTES)
    for column in UNIQUE_COLUMNS.get(name, ()):
        writer = writer.option(f"parquet.enable.dictionary#{column}", "false")
    writer.parquet(path)


def write_piece(piece: Piece, table_path: Callable[[str], str]) -> None:
    """Write one piece beside the tables, then move its files into the table's folder, named
    by kind and run (``final-<run>-part-...``), so pieces of several runs never collide."""
    dest = Path(table_path(piece.table))
    run_dir = Path(table_path("x")).parent
    kind = "final" if piece.final else "live"
    tmp = run_dir / PIECES / f"{piece.table.replace('/', '.')}.{kind}"
    # the job's name in the Spark UI and event log (this thread's jobs only)
    piece.df.sparkSession.sparkContext.setJobDescription(f"write {piece.table} ({kind})")
    write_table(piece.df, piece.table, str(tmp))
    dest.mkdir(parents=True, exist_ok=True)
    for f in sorted(tmp.iterdir()):
        if f.name.startswith("part-"):
            os.replace(f, dest / f"{kind}-{run_dir.name}-{f.name}")


def final_files(run_dir: Path, table: str) -> list[Path]:
    return sorted((run_dir / table).glob("final-*"))


def to_compact(files: list[Path]) -> list[Path]:
    """The final files to write again as one: the small ones, once they come from
    ``MAX_FINAL_FILES`` runs. (Counting files compacted a 10M log's whole history at every
    refresh: its full run wrote 42 files per table, one per fold partition, below 1 MB for the
    smaller tables: 7 s of a refresh for ``replica_history`` alone.)"""
    small = [f for f in files if f.stat().st_size < SMALL_FILE_BYTES]
    return small if len({run_of(f) for f in small}) >= MAX_FINAL_FILES else []


def run_of(file: Path) -> str:
    """The run that wrote a final file (``final-<run>-part-...``, as ``write_piece`` names it)."""
    return file.name.removeprefix("final-").split("-part-", 1)[0]


@dataclass(frozen=True)
class InputFiles:
    """The rows of some input files, by ``seq`` (``make_seq``: the file's index in its high bits):
    what a refresh takes back of the files it reads again whole. The one test "is this row a line
    of these files", in each form a caller needs: ranges of ``seq``, SQL and pyarrow."""

    indexes: frozenset[int]

    def ranges(self) -> list[tuple[int, int]]:
        """Their ``seq`` ranges, sorted and apart."""
        return [(i << LINE_BITS, ((i + 1) << LINE_BITS) - 1) for i in sorted(self.indexes)]

    def sql(self, seq: str = "seq") -> str:
        """SQL: a row of these files (no line: not theirs)."""
        indexes = ", ".join(str(i) for i in sorted(self.indexes)) or "NULL"
        return f"coalesce(shiftright({seq}, {LINE_BITS}) IN ({indexes}), false)"

    def holds(self, seq: Any) -> Any:
        """``sql``'s twin over a pyarrow array of ``seq``: a boolean array, false where null."""
        import pyarrow as pa
        import pyarrow.compute as pc

        indexes = pa.array(sorted(self.indexes), pa.int64())
        return pc.fill_null(pc.is_in(pc.shift_right(seq, LINE_BITS), value_set=indexes), False)


def files_holding(
    files: list[Path], values: set[str] | set[int] | InputFiles, column: str = "fid"
) -> list[Path]:
    """The files among ``files`` with a row whose ``column`` is one of ``values`` (a refolded
    folder's, a line judged again): the ones a refresh must rewrite (the others are kept as they
    are). Row groups whose range of ``column`` misses every value are skipped by their
    statistics; the others' ``column`` is read (one narrow column)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    ranges: list[tuple[Any, Any]]
    held: Callable[[Any], Any]
    if isinstance(values, InputFiles):
        ranges, held = values.ranges(), values.holds
    else:
        ranges = [(v, v) for v in sorted(values)]
        value_set = pa.array(sorted(values))

        def held(col: Any) -> Any:
            return pc.is_in(col, value_set=value_set)

    if not ranges:
        return []
    out = []
    for f in files:
        pf = pq.ParquetFile(f)
        col = pf.schema_arrow.get_field_index(column)
        groups = []
        for g in range(pf.metadata.num_row_groups):
            st = pf.metadata.row_group(g).column(col).statistics
            if st is None or not st.has_min_max or _meets(ranges, st.min, st.max):
                groups.append(g)
        if groups and pc.any(held(pf.read_row_groups(groups, columns=[column]).column(column))).as_py():
            out.append(f)
    return out


def _meets(ranges: list[tuple[Any, Any]], low: Any, high: Any) -> bool:
    """Whether any of ``ranges`` (sorted, apart) meets ``[low, high]`` (a row group's statistics)."""
    at = bisect.bisect_left(ranges, (low,))  # the first range starting at or after low
    return (at < len(ranges) and ranges[at][0] <= high) or (at > 0 and ranges[at - 1][1] >= low)


def link_final_files(
    previous: Path, run_dir: Path, tables: tuple[str, ...], skip: frozenset[str] = frozenset()
) -> None:
    """Keep the previous run's final files of ``tables`` in this run, but those named in
    ``skip`` (rewritten by this run): hard links where the file system has them, else copies."""
    for table in tables:
        dest = run_dir / table
        dest.mkdir(parents=True, exist_ok=True)
        for f in final_files(previous, table):
            if f"{table}/{f.name}" not in skip:
                keep_file(f, dest / f.name)


def keep_file(source: Path, dest: Path) -> None:
    """An earlier run's file in this run: a hard link where the file system has them, else a copy."""
    try:
        os.link(source, dest)
    except OSError as e:
        if e.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
            raise
        shutil.copy2(source, dest)


def write_tables(
    result: JobResult,
    table_path: Callable[[str], str],
    pool: ThreadPoolExecutor,
    started: dict[str, Future[None]],
) -> None:
    """Write every piece, several Spark jobs at once from threads (Spark schedules concurrent
    jobs): each small table's job is mostly fixed latency (planning, task launch, commit), which
    runs side by side instead of one after the other. Two rounds: the rejects, the first fold
    table (which runs the fold and fills the cache) and the judged lines (cached until then),
    then all the others, which read the caches. ``started``: writes already running in ``pool``
    (the rejects, started while the fold's plans were built). Every write finishes before this
    returns or raises, so a failed run is abandoned whole."""
    from pfscope.spark_jobs.compute.job import FIRST_FOLD_TABLE, STATE_LINES

    run_dir = Path(table_path("x")).parent
    if result.previous and result.carry:
        link_final_files(Path(result.previous), run_dir, result.carry, result.rewritten)
    first = [p for p in result.pieces if p.table in ("rejects", FIRST_FOLD_TABLE, STATE_LINES)]
    rest = [p for p in result.pieces if all(p is not q for q in first)]
    for i, batch in enumerate((first, rest)):
        futures = [
            started[p.table]
            if p.table == "rejects" and p.table in started
            else pool.submit(write_piece, p, table_path)
            for p in batch
        ]
        wait(futures)
        for f in futures:
            f.result()  # the first failure, once none is still writing
        result.written(first_round=i == 0)
    shutil.rmtree(run_dir / PIECES, ignore_errors=True)
    if result.after_write is not None:
        result.after_write(run_dir)
    for table in {p.table for p in result.pieces} | set(result.carry):
        d = Path(table_path(table))
        d.mkdir(parents=True, exist_ok=True)
        (d / "_SUCCESS").touch()
