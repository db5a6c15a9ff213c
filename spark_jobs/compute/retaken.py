"""Files a refresh reads again whole because their bytes changed (``state.Plan.retaken``).

Ingest writes its events as files by folder and writes one again when a later export changes a
line of it (a send's recipients grow, a receive's send is the sender's own after all, a change
is seen earlier). A refresh takes such a file back: the verdicts, events, pending events and
reject rows of its earlier lines are dropped, its lines as they are now are judged as new lines,
and its folders are folded again from their first event.

That equals a full run when no other file shares a shard (a message, a store's changes to a
folder, a meaning) or a folder with it: no other line's verdict depended on its earlier lines,
no other line's verdict depends on its new ones, and every event of its folders is in it. When
another file does, or it held up/down lines (the organisation's timeline), the job runs in full
and says why.

Plain Python and pyarrow: the earlier run's state is read in the driver.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pfscope.spark_jobs.compute.job import STATE_EVENTS, STATE_LINES
from pfscope.spark_jobs.compute.refresh_lines import CannotRefresh
from pfscope.spark_jobs.compute.rejudged import LINE_BITS
from pfscope.spark_jobs.compute.restarts import sql_list
from pfscope.spark_jobs.compute.state import Manifest


@dataclass(frozen=True)
class Retaken:
    """The files read again whole, and what their earlier lines were."""

    files: dict[int, str]  # by file index, the path
    fids: tuple[str, ...]  # the folders of their lines, earlier and new
    seqs: frozenset[int]  # their earlier lines that stage 1 accepted (rows of ``_state/lines``)
    lines: int  # their lines read before
    accepted: int  # of which accepted
    duplicates: int  # of which repeats
    last_ts: int | None  # the last accepted event of every other file (pending ones included)

    @property
    def taken_back(self) -> tuple[int, int, int]:
        """Their lines read before: how many, accepted, repeats."""
        return (self.lines, self.accepted, self.duplicates)

    @property
    def kept(self) -> str:
        """SQL: a row of the earlier state that stays (not from these files; no line: stays)."""
        indexes = ", ".join(str(i) for i in sorted(self.files))
        return f"NOT coalesce(shiftright(seq, {LINE_BITS}) IN ({indexes}), false)"

    @property
    def outside(self) -> str:
        """SQL: a row not of these files' folders."""
        return f"NOT fid IN ({sql_list(self.fids)})" if self.fids else "true"


def retaken_files(
    previous: Manifest, prev_dir: Path, retaken: dict[int, str], files: list[str], new_lines: Iterable[Any]
) -> Retaken | None:
    """What the refresh takes back of the files ``retaken`` names (their index, why), or None when
    it names none; raises :class:`CannotRefresh` when taking them back would not equal a full run.
    ``new_lines``: (seq, shard, fid) of every new line stage 1 accepts."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not retaken:
        return None
    for _ts, seq, _store, _down in previous.status:
        if seq >> LINE_BITS in retaken:
            raise CannotRefresh(
                f"{retaken[seq >> LINE_BITS]}, and it held up/down lines (the organisation's timeline)"
            )
    indexes = pa.array(sorted(retaken), pa.int64())
    old = _earlier(prev_dir / STATE_LINES)
    new = pa.Table.from_pylist(
        [{"seq": seq, "shard": shard, "fid": fid} for seq, shard, fid in new_lines],
        schema=pa.schema([("seq", pa.int64()), ("shard", pa.string()), ("fid", pa.string())]),
    )
    every = pa.concat_tables([old.select(["seq", "shard", "fid"]), new])
    mine = pc.is_in(pc.shift_right(every.column("seq"), LINE_BITS), value_set=indexes)
    theirs = every.filter(mine)
    shards = pc.unique(theirs.column("shard"))
    fids = pc.unique(pc.drop_null(theirs.column("fid")))
    shared = pc.and_(
        pc.invert(mine),
        pc.or_(
            pc.is_in(every.column("shard"), value_set=shards),
            pc.fill_null(pc.is_in(every.column("fid"), value_set=fids), False),
        ),
    )
    if pc.any(shared).as_py():
        other = every.filter(shared).column("seq")[0].as_py() >> LINE_BITS
        raise CannotRefresh(
            f"{retaken[min(retaken)]}, and {files[other]} shares a message or a folder with it"
        )
    was = old.filter(pc.is_in(pc.shift_right(old.column("seq"), LINE_BITS), value_set=indexes))
    accepted = pc.is_null(was.column("why"))
    first = pc.equal(was.column("seq"), was.column("first_seq"))
    return Retaken(
        {i: files[i] for i in sorted(retaken)},
        tuple(sorted(fids.to_pylist())),
        frozenset(was.column("seq").to_pylist()),
        sum(previous.files[i].lines for i in retaken),
        _count(pc.and_(accepted, first)),
        _count(pc.and_(accepted, pc.invert(first))),
        _last_ts(prev_dir / STATE_EVENTS, indexes),
    )


def _count(mask: Any) -> int:
    import pyarrow.compute as pc

    return int(pc.sum(pc.cast(mask, "int64")).as_py() or 0)


def _earlier(folder: Path) -> Any:
    """The earlier lines stage 1 accepted (``_state/lines``): seq, shard, fid, first_seq, why."""
    import pyarrow.parquet as pq

    paths = sorted(str(f) for f in folder.glob("*.parquet"))
    if not paths:
        raise CannotRefresh("the earlier run's state has no lines")
    return pq.read_table(paths, columns=["seq", "shard", "fid", "first_seq", "why"])


def _last_ts(folder: Path, indexes: Any) -> int | None:
    """The last accepted event's time of the files not in ``indexes`` (pending ones included)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    paths = sorted(str(f) for f in folder.glob("*.parquet"))
    if not paths:
        return None
    t = pq.read_table(paths, columns=["ts", "seq"])
    kept = t.filter(pc.invert(pc.is_in(pc.shift_right(t.column("seq"), LINE_BITS), value_set=indexes)))
    last = pc.max(kept.column("ts")).as_py()
    return int(last) if last is not None else None
