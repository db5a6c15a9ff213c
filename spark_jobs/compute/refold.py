"""Which folders a refresh folds again, and from where.

A folder is folded again when an event of it stamped before the previous as-of changed (late
data), when a file holding its lines is read again whole, or when the topology changed its start.
It goes on from the latest kept fold state that still holds for it (``checkpoints``), or from
its first event; either way its final rows made after that state are replaced.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pfscope.spark_jobs.compute.checkpoints import Checkpoints, Resumed
from pfscope.spark_jobs.compute.job import STATE_EVENTS
from pfscope.spark_jobs.compute.restarts import sql_list
from pfscope.spark_jobs.compute.retaken import Retaken
from pfscope.spark_jobs.compute.state_rows import gather


@dataclass(frozen=True)
class Refold:
    """The folders folded again: late data's, a file read again whole's and those the topology
    changed. Each folds on from the latest kept state that still holds for it (``resumed``), or
    from its first event (``first``)."""

    first: list[str]
    resumed: Resumed

    @property
    def fids(self) -> list[str]:
        return sorted({*self.first, *self.resumed.fids})

    @property
    def where(self) -> str:
        """SQL: a row of one of them."""
        return of_folders(self.fids)

    def made_again(self, table: str) -> str:
        """SQL: an earlier final row of ``table`` this run makes again (its folder's, made after
        the state it folds on from)."""
        return f"({self.first_events()} OR {self.resumed.rows(table)})"

    def first_events(self) -> str:
        """SQL: an event the folders from their first event fold."""
        return of_folders(self.first)


def of_folders(fids: list[str]) -> str:
    """SQL: a row of one of ``fids``."""
    return f"fid IN ({sql_list(fids)})" if fids else "false"


def changed_events(
    spark: SparkSession, new: DataFrame, retaken: Retaken | None, prev_dir: Path
) -> dict[str, int]:
    """Each folder's earliest changed event (its time): a new event, or, in a file read again
    whole, an event of its earlier lines or of its lines now that the other does not hold (row
    for row, ``seq`` included: an unchanged line keeps its place). ``new``: this run's events
    (checkpointed: few). A file's events then and now are compared in the driver (pyarrow reads
    the earlier ones of ``_state/events``): in Spark the comparison was two shuffles, the
    largest job of a chain's hourly refresh after the fold."""
    import pyarrow as pa
    import pyarrow.compute as pc

    new = new.filter("fid IS NOT NULL")
    spark.sparkContext.setJobDescription("refresh: the folders' earliest changed events")
    if not retaken:
        return {r.fid: r.t for r in new.groupBy("fid").agg(F.min("ts").alias("t")).collect()}
    now = new.toArrow()
    columns = now.column_names
    mine = retaken.theirs(now)
    paths = sorted(str(f) for f in (prev_dir / STATE_EVENTS).glob("*.parquet"))
    old = (
        gather(
            paths, ["seq", "fid"], lambda p: pc.and_(retaken.theirs(p), pc.is_valid(p.column("fid"))), columns
        )
        if paths
        else now.slice(0, 0)
    )
    changed = pa.concat_tables(
        [now.filter(pc.invert(mine)).select(["fid", "ts"]), unmatched(old, now.filter(mine), columns)],
        promote_options="default",  # a column not null on one side
    )
    earliest = changed.group_by("fid", use_threads=False).aggregate([("ts", "min")])
    return dict(zip(earliest.column("fid").to_pylist(), earliest.column("ts_min").to_pylist(), strict=True))


#: joins a list column's items into one key (a list holding it is compared as Python tuples)
_ITEMS = "\x1f"


def unmatched(before: Any, after: Any, columns: list[str]) -> Any:
    """The rows of each Table that the other does not hold, as multisets (``EXCEPT ALL`` both
    ways), as a Table of ``fid`` and ``ts``. Counted in Arrow, each list column keyed by its
    length and its items joined (a 1M log's hour compares some 145,000 rows a side: 11.6 s as
    Python tuples, 1.0 s so); as Python tuples when a list holds a null or the joining
    character, which would make two lists one key."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def keyed(table: Any, sign: int) -> Any:
        keys = {}
        for c in columns:
            col = table.column(c)
            if pa.types.is_list(col.type):
                keys[f"{c}#n"] = pc.list_value_length(col)
                col = pc.binary_join(col, _ITEMS)
            keys[c] = col
        return pa.table({**keys, "#sign": pa.array([sign] * table.num_rows, pa.int64())})

    lists = [
        t.column(c) for t in (before, after) for c in columns if pa.types.is_list(t.schema.field(c).type)
    ]
    items = [pc.list_flatten(col) for col in lists]
    if any(i.null_count or pc.any(pc.match_substring(i, _ITEMS)).as_py() for i in items):
        return _unmatched_as_tuples(before, after, columns)
    both = pa.concat_tables([keyed(before, 1), keyed(after, -1)])
    counts = both.group_by([c for c in both.column_names if c != "#sign"], use_threads=False).aggregate(
        [("#sign", "sum")]
    )
    return counts.filter(pc.not_equal(counts.column("#sign_sum"), 0)).select(["fid", "ts"])


def _unmatched_as_tuples(before: Any, after: Any, columns: list[str]) -> Any:
    import pyarrow as pa

    then, now = _rows(before, columns), _rows(after, columns)
    fid, ts = columns.index("fid"), columns.index("ts")
    rows = list((then - now) + (now - then))
    return pa.table(
        [pa.array([r[fid] for r in rows], pa.string()), pa.array([r[ts] for r in rows], pa.int64())],
        names=["fid", "ts"],
    )


def _rows(table: Any, columns: list[str]) -> Counter[tuple[Any, ...]]:
    """A table's rows as a multiset (a list column as a tuple), as EXCEPT ALL compares them."""
    values = [[tuple(v) if isinstance(v, list) else v for v in table.column(c).to_pylist()] for c in columns]
    return Counter(zip(*values, strict=True))


def refolded(
    as_of: int,
    retaken: Retaken | None,
    entries: list[tuple[str, int | None]],
    changed: dict[str, int],
    kept_states: Checkpoints,
    in_topology: tuple[str, ...] = (),
) -> Refold:
    """The folders with a changed event stamped before the previous as-of (``as_of``), a file
    read again whole's, and those the topology added or changed (``in_topology``: their start is
    the new topology's, so they fold from their first event). An event stamped at the previous
    as-of itself comes after every event read before at that time (its line does), so it folds
    on from the state as it would in a full run, unless a request fell due at that very time: the
    previous run made it before the event, a full run makes it after. (The as-of is the last
    event's time, so the next export's lines of that second are the usual case; refolding them
    rewrote a 10M log's whole history: 11 s.)"""
    asked_then = {fid for fid, at in entries if at == as_of}
    late = {fid for fid, t in changed.items() if t < as_of or (t == as_of and fid in asked_then)}
    again = set(retaken.fids) if retaken else set()
    never = (1 << 63) - 1  # no changed event: every state holds
    redo = {fid: changed.get(fid, never) for fid in sorted(late | again | set(in_topology))}
    resumed = kept_states.resumed(redo, first=in_topology)
    on = set(resumed.fids)
    return Refold(sorted(f for f in redo if f not in on), resumed)
