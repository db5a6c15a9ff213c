"""Files a refresh reads again whole because their bytes changed (``state.Plan.retaken``).

Ingest writes its events as files by block and folder and writes one again when a later export
changes a line of it (a send's recipients grow, a receive's send is the sender's own after all,
a change is seen earlier) or adds lines among its last hours' (``exchange.event_files``). A
refresh takes such a file back: the verdicts, events, pending events, reject rows and messages of
its earlier lines are dropped, its lines as they are now are judged as new lines (with the
earlier lines of their shards, as any new line is), and its folders are folded again from their
first event (their events in other files included).

That equals a full run when no other line's verdict depended on its earlier lines: a message of
its lines (before or now) is in no other file, and any other shard of its earlier lines (a store's
changes to a folder, a meaning) is only in files before it, in lines stamped no later than its
first line of that shard. A later file that shares such a shard is read again whole with it
(``widened``: ingest's blocks of hours split a folder's lines, and a later export that reaches
back past a block's start rewrites the earlier block's file, while the next one may only grow).
Otherwise, and when it held up/down lines (the organisation's timeline), the job runs in full and
says why. The earlier state is read by pyarrow in the driver.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pfscope.spark_jobs.compute import state
from pfscope.spark_jobs.compute.job import STATE_EVENTS, STATE_LINES
from pfscope.spark_jobs.compute.refresh_lines import CannotRefresh
from pfscope.spark_jobs.compute.state import Manifest, NewBytes, Plan
from pfscope.spark_jobs.compute.writing import InputFiles
from pfscope.spark_jobs.model.events import LINE_BITS


@dataclass(frozen=True)
class Retaken:
    """The files read again whole, and what their earlier lines were."""

    files: dict[int, str]  # by file index, the path
    fids: tuple[str, ...]  # the folders of their lines, earlier and new
    seqs: frozenset[int]  # their earlier lines that stage 1 accepted (rows of ``_state/lines``)
    msgs: frozenset[str]  # the messages of their lines, earlier and new (in no other file)
    lines: int  # their lines read before
    accepted: int  # of which accepted
    duplicates: int  # of which repeats
    last_ts: int | None  # the last accepted event of every other file (pending ones included)

    @property
    def taken_back(self) -> tuple[int, int, int]:
        """Their lines read before: how many, accepted, repeats."""
        return (self.lines, self.accepted, self.duplicates)

    @property
    def inputs(self) -> InputFiles:
        return InputFiles(frozenset(self.files))

    @property
    def kept(self) -> str:
        """SQL: a row of the earlier state that stays (not from these files; no line: stays)."""
        return f"NOT {self.inputs.sql()}"

    def theirs(self, table: Any) -> Any:
        """``kept``'s complement over a pyarrow Table with ``seq``, as a boolean array."""
        return self.inputs.holds(table.column("seq"))

    def without_messages(self, spark: SparkSession, df: DataFrame) -> DataFrame:
        """``df`` (rows with a ``msg``) without these files' messages, which come anew from their
        lines as they are now."""
        if not self.msgs:
            return df
        msgs = spark.createDataFrame([(m,) for m in sorted(self.msgs)], "msg string")
        return df.join(F.broadcast(msgs), "msg", "left_anti")


def widened(plan: Plan, prev_dir: Path, files: list[str]) -> Plan:
    """``plan`` with every file read before whose earlier lines share a shard with a file it reads
    again whole, after that file's first line of the shard (in input order or in time), read again
    whole too, until none is left: those lines' verdicts may depend on the earlier lines taken
    back, so they are judged again with them. Raises :class:`CannotRefresh` when the files read
    again whole grow past ``state.RETAKE_LIMIT`` of the log's bytes."""
    import pyarrow.compute as pc

    if not plan.retaken:
        return plan
    old = _earlier(prev_dir / STATE_LINES)
    index = pc.shift_right(old.column("seq"), LINE_BITS)
    old = old.append_column("file", index).select(["file", "seq", "shard", "ts"])
    retaken = dict(plan.retaken)
    while True:
        theirs = InputFiles(frozenset(retaken)).holds(old.column("seq"))
        later = _after_their_first(old.filter(theirs), old.filter(pc.invert(theirs)))
        more = pc.unique(later.column("file")).to_pylist()
        if not more:
            break
        for i in more:
            retaken[i] = (
                f"{files[i]} shares a store's changes or a message with {files[min(retaken)]}, read again"
            )
    if len(retaken) == len(plan.retaken):
        return plan
    sizes = {i: Path(f).stat().st_size for i, f in enumerate(files)} | {nb.index: nb.end for nb in plan.new}
    total = sum(sizes.values())
    again = sum(sizes[i] for i in retaken)
    added = set(retaken) - set(plan.retaken)
    if again > state.RETAKE_LIMIT * total:
        raise CannotRefresh(
            f"{plan.retaken[min(plan.retaken)]}, and {files[min(added)]} shares a message or a store's changes with it "
            f"({len(retaken):,} files to read again whole, {again / total:.0%} of the log's bytes: "
            "a full run reads them faster)"
        )
    new = [nb for nb in plan.new if nb.index not in added] + [
        NewBytes(i, files[i], 0, sizes[i], 1) for i in added
    ]
    return replace(
        plan,
        new=sorted(new, key=lambda nb: nb.index),
        retaken={i: retaken[i] for i in sorted(retaken)},
    )


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
    inputs = InputFiles(frozenset(retaken))
    old = _earlier(prev_dir / STATE_LINES)
    theirs = inputs.holds(old.column("seq"))
    was, kept = old.filter(theirs), old.filter(pc.invert(theirs))
    new = pa.Table.from_pylist(
        [{"seq": seq, "shard": shard, "fid": fid} for seq, shard, fid in new_lines],
        schema=pa.schema([("seq", pa.int64()), ("shard", pa.string()), ("fid", pa.string())]),
    )
    now = new.filter(inputs.holds(new.column("seq")))
    shards = pa.chunked_array([was.column("shard"), now.column("shard")], pa.string())
    others = pa.concat_tables(
        [
            kept.select(["seq", "shard"]),
            new.filter(pc.invert(pc.is_in(new.column("seq"), now.column("seq")))).select(["seq", "shard"]),
        ]
    )
    # a message of theirs, before or now, is in no other file
    msgs = pc.unique(pc.filter(shards, pc.starts_with(shards, "m")))
    _refuse_shared(others.filter(pc.is_in(others.column("shard"), value_set=msgs)), retaken, files)
    # any other shard of their earlier lines (a store's changes to a folder, a meaning) only in
    # lines before their first line of it, in input order (a file before) and in time: no other
    # verdict depended on them (the new lines are judged with the earlier ones as any new line is)
    _refuse_shared(_after_their_first(was, kept), retaken, files)
    fids = pc.unique(pc.drop_null(pa.chunked_array([was.column("fid"), now.column("fid")], pa.string())))
    accepted = pc.is_null(was.column("why"))
    first = pc.equal(was.column("seq"), was.column("first_seq"))
    return Retaken(
        {i: files[i] for i in sorted(retaken)},
        tuple(sorted(fids.to_pylist())),
        frozenset(was.column("seq").to_pylist()),
        frozenset(m[1:] for m in msgs.to_pylist()),
        sum(previous.files[i].lines for i in retaken),
        _count(pc.and_(accepted, first)),
        _count(pc.and_(accepted, pc.invert(first))),
        _last_ts(prev_dir / STATE_EVENTS, inputs),
    )


def _after_their_first(was: Any, kept: Any) -> Any:
    """The rows of ``kept`` that share a shard with ``was`` and come after ``was``'s first line of
    it, in input order or in time (pyarrow Tables with ``seq``, ``shard``, ``ts``): lines whose
    verdicts may have depended on ``was``'s."""
    import pyarrow.compute as pc

    firsts = was.group_by("shard").aggregate([("ts", "min"), ("seq", "min")])
    joined = kept.join(firsts, "shard", join_type="inner")
    after = pc.or_(
        pc.greater(joined.column("seq"), joined.column("seq_min")),
        pc.greater(joined.column("ts"), joined.column("ts_min")),
    )
    return joined.filter(after)


def _refuse_shared(lines: Any, retaken: dict[int, str], files: list[str]) -> None:
    """A full run, naming the file of the first of ``lines`` (lines of other files that share a
    shard with these files in a way a refresh cannot take back)."""
    if lines.num_rows:
        other = lines.column("seq")[0].as_py() >> LINE_BITS
        raise CannotRefresh(
            f"{retaken[min(retaken)]}, and {files[other]} shares a message or a store's changes with it"
        )


def _count(mask: Any) -> int:
    import pyarrow.compute as pc

    return int(pc.sum(pc.cast(mask, "int64")).as_py() or 0)


def _earlier(folder: Path) -> Any:
    """The earlier lines stage 1 accepted (``_state/lines``): seq, shard, fid, ts, first_seq, why."""
    import pyarrow.parquet as pq

    paths = sorted(str(f) for f in folder.glob("*.parquet"))
    if not paths:
        raise CannotRefresh("the earlier run's state has no lines")
    return pq.read_table(paths, columns=["seq", "shard", "fid", "ts", "first_seq", "why"])


def _last_ts(folder: Path, inputs: InputFiles) -> int | None:
    """The last accepted event's time of the files not ``inputs`` (pending ones included)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    paths = sorted(str(f) for f in folder.glob("*.parquet"))
    if not paths:
        return None
    t = pq.read_table(paths, columns=["ts", "seq"])
    kept = t.filter(pc.invert(inputs.holds(t.column("seq"))))
    last = pc.max(kept.column("ts")).as_py()
    return int(last) if last is not None else None
