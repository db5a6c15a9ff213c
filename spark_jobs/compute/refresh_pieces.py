"""A refresh's writing: the tables as pieces (final rows beside the previous run's final files,
which are kept; live rows), and the earlier final rows it replaces (a refolded folder's, a line
judged again, the lines of a file read again whole): the files holding them are written again
without them, the others kept (``writing``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pfscope.spark_jobs.compute.frames import local_frame
from pfscope.spark_jobs.compute.job import (
    FINAL_STATE,
    FINAL_TABLES,
    SPLIT_TABLES,
    STATE_EVENTS,
    STATE_LINES,
    Piece,
)
from pfscope.spark_jobs.compute.rejudged import Rejudged
from pfscope.spark_jobs.compute.restarts import sql_list
from pfscope.spark_jobs.compute.retaken import Retaken
from pfscope.spark_jobs.compute.writing import SEQ_ORDERED, InputFiles, files_holding, final_files, to_compact

#: the fold's tables of final rows: a refolded folder's rows in them are written anew
REFOLDED_TABLES = (
    "state_history",
    "backfill_requests",
    "backfill_candidates",
    "replica_history",
    "backfill_entries",
)

#: earlier final rows a run replaces in one table: the column that tells them, its values, and
#: a frame of that table without them (a table may have several)
Replaced = tuple[str, set[str] | set[int] | InputFiles, Callable[[DataFrame], DataFrame]]


def replaced_rows(
    spark: SparkSession,
    refold: tuple[list[str], Callable[[str], str]],
    again: Rejudged | None,
    again_seqs: DataFrame,
    restart: tuple[str, ...] = (),
    retaken: Retaken | None = None,
) -> dict[str, list[Replaced]]:
    """Earlier final rows this run replaces, by table: a refolded folder's rows, the start of a
    folder the topology changed or a file read again whole starts again (its replica list at
    null), a line judged again (its reject row, its verdict), and every row of the lines of a
    file read again whole (``retaken``)."""
    fids, made_again = refold
    replaced: dict[str, list[Replaced]] = {
        name: [("fid", set(fids), lambda df, name=name: df.filter(f"NOT {made_again(name)}"))]  # type: ignore[misc]
        for name in REFOLDED_TABLES
        if fids
    }
    if restart:
        restarted = f"fid IN ({sql_list(restart)}) AND at IS NULL"
        replaced.setdefault("replica_lists", []).append(
            ("fid", set(restart), lambda df: df.filter(f"NOT ({restarted})"))
        )
    if again:
        again_lines = F.broadcast(local_frame(spark, again.lines, {"source": "string", "line": "long"}))
        replaced.setdefault("rejects", []).append(
            (
                "line",
                {line for _, line in again.lines},
                lambda df: df.join(again_lines, ["source", "line"], "left_anti"),
            )
        )
        replaced.setdefault(STATE_LINES, []).append(
            ("seq", set(again.seqs), lambda df: df.join(F.broadcast(again_seqs), "seq", "left_anti"))
        )
    if retaken:
        for name, entry in _taken_back(spark, retaken).items():
            replaced.setdefault(name, []).append(entry)
    return replaced


def _taken_back(spark: SparkSession, retaken: Retaken) -> dict[str, Replaced]:
    """The earlier final rows of the lines of files read again whole: their verdicts, events and
    reject rows, their replica-list changes, and their folders' messages (all of those are in
    the files, and come again from their lines as they are now)."""
    kept = retaken.kept
    fids: set[str] = set(retaken.fids)
    sources = set(retaken.files.values())
    not_theirs = f"NOT source IN ({sql_list(sorted(sources))})"
    return {
        # the rows of their lines by their place: a file of other lines is kept as it is
        STATE_LINES: ("seq", retaken.inputs, lambda df: df.filter(kept)),
        STATE_EVENTS: ("seq", retaken.inputs, lambda df: df.filter(kept)),
        "rejects": ("source", sources, lambda df: df.filter(not_theirs)),
        "replica_lists": ("fid", fids, lambda df: df.filter(kept)),
        "messages": ("msg", set(retaken.msgs), lambda df: retaken.without_messages(spark, df)),
    }


def pieces_of(
    spark: SparkSession,
    prev_dir: Path,
    frames: dict[str, DataFrame],
    empty: set[str],
    replaced: dict[str, list[Replaced]],
) -> tuple[list[Piece], list[str], set[str]]:
    """The tables and state as pieces to write, final rows (beside the previous run's final files,
    which are kept) and live ones; the tables whose final files are kept, and those of them
    written again (``table/name``)."""
    pieces, carry, rewritten = [], [], set()
    for name, df in frames.items():
        final, live = _final_and_live(name, df)
        if final is not None:
            carry.append(name)
            final, redone = _final_with_files_redone(spark, prev_dir, name, final, replaced.get(name, []))
            rewritten |= redone
            if name not in empty or redone:
                pieces.append(Piece(name, True, final))
        if live is not None:
            pieces.append(Piece(name, False, live))
    return pieces, carry, rewritten


def _final_and_live(name: str, df: DataFrame) -> tuple[DataFrame | None, DataFrame | None]:
    """A table's rows that never change, and those of this run only (as ``job.pieces_of`` splits them)."""
    if name in SPLIT_TABLES:
        cond = SPLIT_TABLES[name]
        return df.filter(cond), df.filter(f"NOT ({cond})")
    if name in FINAL_TABLES or name in FINAL_STATE:
        return df, None
    return None, df


def _final_with_files_redone(
    spark: SparkSession, prev_dir: Path, name: str, final: DataFrame, replaced: list[Replaced]
) -> tuple[DataFrame, set[str]]:
    """A table's final rows, with the earlier final files written again (the others kept): the
    small ones once there are many, and those holding a row this run replaces (a refolded
    folder's rows come anew; one late folder costs its files, not the table); and those files."""
    kept = final_files(prev_dir, name)
    compact = to_compact(kept)
    redo = sorted(
        {*compact, *(f for column, values, _ in replaced for f in files_holding(kept, values, column))}
    )
    if not redo:
        return final, set()
    earlier = spark.read.parquet(*map(str, redo))
    for _, _, without in replaced:
        earlier = without(earlier)
    # as many files as large ones are written again, and one: the small ones and this run's rows
    # in a file of their own; the kept lines and events in ranges of input order, as a full run
    # writes them, so that the next file read again rewrites the files of its lines only
    parts = len(set(redo) - set(compact)) + 1
    final = earlier.unionByName(final)
    final = final.repartitionByRange(parts, "seq") if name in SEQ_ORDERED else final.coalesce(parts)
    return final, {f"{name}/{f.name}" for f in redo}
