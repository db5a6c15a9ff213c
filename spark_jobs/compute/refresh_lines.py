"""A refresh's first steps (``refresh``): its new lines read and parsed, then judged with the
earlier lines of their shards, and what that changes of the earlier verdicts.

The new lines are read and parsed in the driver: a refresh's new lines are few, and a Python
worker would cost more to start than they cost to parse (the same ``parsed_row``, the one set of
rules). The rules between lines see every earlier line: the new lines are judged with the
earlier lines of the same shards (the previous runs' ``_state/lines``, of which pyarrow reads
those few rows in the driver), by the same ``judge``. A refresh that would take back a line
accepted before, or whose up/down line is stamped before the previous as-of, gives up
(:class:`CannotRefresh`): the job runs in full.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pfscope.spark_jobs.compute.frames import arrow_frame, local_frame
from pfscope.spark_jobs.compute.job import STATE_EVENTS, STATE_LINES
from pfscope.spark_jobs.compute.reading import NARROW, SHARD, judge
from pfscope.spark_jobs.compute.rejudged import Rejudged
from pfscope.spark_jobs.compute.stage1 import PARSED_COLUMNS, parsed_row
from pfscope.spark_jobs.compute.state import Manifest, Plan, read_new_lines
from pfscope.spark_jobs.compute.state_rows import earlier_lines
from pfscope.spark_jobs.model.events import make_seq
from pfscope.spark_jobs.model.topology import Topology

#: a new line accepted (not a repeat of one); an earlier line whose verdict the new lines change
_ACCEPTED = "old IS NULL AND why IS NULL AND seq = first_seq"
_CHANGED = "old AND NOT (first_seq <=> f0 AND why <=> w0 AND conflict <=> c0)"


class CannotRefresh(Exception):
    """The new lines cannot be folded on from the state: the job runs in full, for this reason."""


def given_up(reason: str, *made: DataFrame) -> CannotRefresh:
    """The refresh given up, for ``reason``: the frames it made so far let go."""
    for df in made:
        df.unpersist()
    return CannotRefresh(reason)


@dataclass(frozen=True)
class NewLines:
    """The new bytes' lines (``seq``, text), stage 1's rows of them, and each file as now read."""

    rows: list[tuple[int, str | None]]
    reads: dict[int, Any]
    frame: DataFrame  # the lines as read: seq, text
    parsed_rows: list[tuple[Any, ...]]
    parsed: DataFrame  # a local relation: nothing to cache
    ok: DataFrame  # the lines stage 1 accepts


def read_new(spark: SparkSession, topo: Topology, plan: Plan) -> NewLines:
    """Only the new bytes of each file (``state.plan_refresh`` says which), read and parsed in
    the driver by stage 1's ``parsed_row``."""
    rows: list[tuple[int, str | None]] = []
    reads = {}
    for nb in plan.new:
        lines, read = read_new_lines(nb)
        rows += [(make_seq(nb.index, n), text) for n, text in lines]
        reads[nb.index] = read
    frame = local_frame(spark, rows, {"seq": "long", "text": "string"})
    parsed_rows = [parsed_row(topo, seq, text) for seq, text in rows]
    parsed = local_frame(spark, parsed_rows, PARSED_COLUMNS)
    return NewLines(rows, reads, frame, parsed_rows, parsed, parsed.filter("reason IS NULL"))


@dataclass(frozen=True)
class Verdicts:
    """Every line judged (checkpointed), the earlier lines' verdicts beside it (``f0``, ``w0``,
    ``c0``, and ``old``), and the counts of what that says (``verdict_counts``)."""

    judged: DataFrame
    verdicts: DataFrame
    counts: Any  # a Row


def judge_new(
    spark: SparkSession, previous: Manifest, prev_dir: Path, new: NewLines, kept: str = "true"
) -> Verdicts:
    """The new lines judged with the earlier lines of their shards (those ``kept`` keeps: a file
    read again whole takes its earlier lines back); gives up when that would take back a line
    accepted before, or a new up/down line changes the organisation's past."""
    old = _earlier_lines(spark, prev_dir, new).filter(kept)
    # the verdicts, the new events and the folds are checkpointed, not cached: every frame made
    # from a cached one is analysed down its whole plan and matched against every cached plan,
    # and the refresh makes about a hundred (a small log's refresh: its 15 joins took 6.6 s to
    # plan, 0.14 s on checkpoints); a checkpoint is a leaf. Each is computed once either way. (A
    # checkpoint has no lineage: on a cluster, an executor lost after one fails the run, which
    # leaves the previous run published, as any failed run does.)
    # (in one task per core: the session is sized by the new bytes and states, and the earlier
    # lines read here are more: on the 1M log, in one task the judging took 3.6 s)
    spark.sparkContext.setJobDescription(
        "refresh: the new lines judged with the earlier lines of their shards"
    )
    judged = judge(
        old.select(*NARROW, "fid").unionByName(new.ok.select(*NARROW, "fid")),
        spark.sparkContext.defaultParallelism,
    ).localCheckpoint()
    verdicts = judged.join(
        old.selectExpr("seq", "first_seq AS f0", "why AS w0", "conflict AS c0", "true AS old"), "seq", "left"
    )
    c = verdict_counts(verdicts, previous.as_of)
    if c["retracted"]:
        raise given_up(
            f"new lines change the verdict on lines accepted before ({c['retracted']:,}: the new "
            "lines come before them in input order, or are changes numbered past them)",
            new.parsed,
            judged,
        )
    if any(st.ts <= previous.as_of for st in c["status"]):
        raise given_up(
            "a new up/down line is stamped before the earlier run's as-of (the organisation's "
            "timeline changed)",
            new.parsed,
            judged,
        )
    return Verdicts(judged, verdicts, c)


def _earlier_lines(spark: SparkSession, prev_dir: Path, new: NewLines) -> DataFrame:
    """The earlier lines of the new lines' shards (no new line to judge: none read)."""
    first_new = (
        {
            r.shard: r.first
            for r in new.ok.selectExpr(f"{SHARD} AS shard", "ts")
            .groupBy("shard")
            .agg(F.expr("min(ts) AS first"))
            .collect()
        }
        if any(r[1] is None for r in new.parsed_rows)
        else {}
    )
    lines = earlier_lines(
        prev_dir / STATE_LINES, first_new, [*NARROW, "fid", "shard", "first_seq", "why", "conflict"]
    )
    if lines is None:
        raise CannotRefresh("the earlier run's state has no lines")
    return arrow_frame(spark, lines)


def verdict_counts(verdicts: DataFrame, as_of: int) -> Any:
    """What the verdicts say, in one job: the new lines accepted, repeated, rejected and late, the
    last accepted one's time, the new up/down lines, and the earlier lines judged otherwise."""
    c = verdicts.selectExpr(
        "count_if(old IS NULL) AS ok",
        "count_if(old IS NULL AND why IS NULL AND seq != first_seq) AS duplicates",
        "count_if(old IS NULL AND why IS NOT NULL) AS rejected",
        # a line accepted before (or a repeat of one) that the new lines would take back
        f"count_if({_CHANGED} AND w0 IS NULL) AS retracted",
        # a line rejected before that the new lines judge otherwise (its message's send came late)
        f"count_if({_CHANGED} AND w0 IS NOT NULL) AS rejudged",
        f"count_if({_ACCEPTED} AND ts <= {as_of}) AS late",
        f"max(CASE WHEN {_ACCEPTED} THEN ts END) AS last_ts",
        f"collect_list(CASE WHEN {_ACCEPTED} AND kind = 'store_status' THEN struct(ts, seq, store, status) END) AS status",
    ).first()
    assert c is not None
    return c


def rejudged_lines(topo: Topology, prev_dir: Path, files: list[str], v: Verdicts) -> Rejudged | None:
    """Lines rejected before and judged otherwise now (``spark_jobs.rejudged``): accepted (as
    events, like new lines: from their text, which their reject row holds), repeats, or rejects
    for another reason."""
    if not v.counts["rejudged"]:
        return None
    return Rejudged.of(
        v.verdicts.filter(f"{_CHANGED} AND w0 IS NOT NULL")
        .select("seq", "first_seq", "why", "conflict", "ts")
        .collect(),
        prev_dir,
        files,
        lambda seq, text: parsed_row(topo, seq, text),
    )


@dataclass(frozen=True)
class Tally:
    """What this run adds to the previous run's accounting, and the up/down timeline since the first run."""

    lines: int  # new lines read
    ok: int  # new lines stage 1 accepts
    accepted: int  # new events, earlier lines accepted now included
    duplicates: int
    stage2: int  # new lines the rules between lines reject
    last_ts: int | None  # the last accepted event's time, of every run
    status: list[tuple[int, int, str, bool]]  # accepted up/down lines: (ts, seq, store, down)
    rejudged: int  # earlier lines judged again
    rejudged_rejects: int  # of which rejects still, for another reason
    #: the lines of files read again whole as they were read before: (read, accepted, repeats)
    taken_back: tuple[int, int, int] = (0, 0, 0)

    @classmethod
    def of(
        cls,
        new: NewLines,
        v: Verdicts,
        again: Rejudged | None,
        previous: Manifest,
        taken_back: tuple[int, int, int] = (0, 0, 0),
        last_before: int | None = None,
    ) -> Tally:
        """``taken_back``: the lines read before of files read again whole (read, accepted,
        repeats); ``last_before``: then the last accepted event's time of the other files."""
        c = v.counts
        before = last_before if any(taken_back) else previous.last_ts
        last_ts = max(
            (t for t in (before, c["last_ts"], again.last_ts if again else None) if t is not None),
            default=None,
        )
        duplicates, stage2 = int(c["duplicates"]), int(c["rejected"])
        accepted = int(c["ok"]) - duplicates - stage2
        if again:
            accepted, duplicates = accepted + len(again.revived), duplicates + again.duplicates
        status = sorted(
            [*previous.status, *((s.ts, s.seq, s.store, s.status == "down") for s in c["status"])]
        )
        return cls(
            len(new.rows),
            int(c["ok"]),
            accepted,
            duplicates,
            stage2,
            last_ts,
            status,
            len(again.seqs) if again else 0,
            len(again.rejects if again else []),
            taken_back,
        )

    def counts(self, previous: Manifest) -> dict[str, Any]:
        """The run's accounting (``JobResult.counts``): the previous run's, less the lines taken
        back, and this one's."""
        lines, accepted, duplicates = self.taken_back
        return {
            "lines_read": previous.lines_read - lines + self.lines,
            "accepted": previous.accepted - accepted + self.accepted,
            "duplicates": previous.duplicates - duplicates + self.duplicates,
            "last_ts": self.last_ts,
            "status": self.status,
        }

    def empty(self) -> set[str]:
        """The final pieces with no row: not written (each write is a Spark job)."""
        return {
            name
            for name, n in (
                ("rejects", self.lines - self.ok + self.stage2 + self.rejudged_rejects),
                (STATE_LINES, self.ok + self.rejudged),
                (STATE_EVENTS, self.accepted),
            )
            if n == 0
        }
