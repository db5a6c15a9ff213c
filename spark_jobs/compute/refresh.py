"""A refresh: a run that goes on from the previous run's state instead of reading the whole log.

Exchange itself never re-reads history: each store keeps its replication state table and applies
new messages to it. A refresh does the same, on Spark (steps 1 and 2 are ``refresh_lines``'s):

1. Only the new bytes of each file are read (``state.plan_refresh`` says which), in
   the driver (a refresh's new lines are few), and parsed there by stage 1's ``parsed_row``.
2. The rules between lines see every earlier line: the new lines are judged with the earlier
   lines of the same shards (a message id, a store's changes to a folder, a meaning; the
   previous runs' ``_state/lines``, of which pyarrow reads those few rows in the driver), by
   the same ``judge``. A line rejected before that is
   judged otherwise now (a receive whose message's send came late) is taken back
   (``spark_jobs.rejudged``): accepted now, it is a new event. If the new lines would take back
   a line accepted before (a new line that sorts before an earlier one in input order), or a
   new up/down line is stamped before the previous as-of, the refresh gives up and the job
   runs in full, saying why: never silently wrong.
3. The fold state (``_state/folds``) of every folder the new as-of can change (new events,
   those left pending after the previous as-of, or an open backfill entry: due times and next
   requests) streams through the fold with the folder's events: each fold goes on from where
   it stopped and is finished at the new as-of. The other folders' states and live rows are
   carried as they are (their replicas' next status message time brought to the as-of).
4. Tables of rows that never change keep the previous run's files (``writing``) and
   add this run's; the others are written whole, from the folds or from the previous run's
   live rows and the new events (messages still unprocessed, folders, stores). Late lines
   (stamped before the previous as-of) refold their folders from the first event: the files
   holding those folders' earlier rows are written again without them, the others kept.

A refresh equals a full run of the same input, every table as a multiset of rows (the run's
own columns aside): ``tests/spark/test_refresh.py`` holds it. (Past 500 lines: the module is the
list of a refresh's steps, each a function of a few lines; its first steps, its writing, the
taking back of rewritten files and the choice of the folders folded again (``refold``) are
modules of their own.)
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pfscope.spark_jobs.compute.checkpoints import Checkpoints
from pfscope.spark_jobs.compute.frames import arrow_frame, local_frame
from pfscope.spark_jobs.compute.job import (
    MIN_LONG_SQL,
    STATE_EVENTS,
    STATE_FOLDS,
    STATE_LINES,
    STATE_PENDING,
    JobResult,
    collected_transits,
    conform,
    fold_groups,
    fold_partitions_for,
    fold_table,
    group_stream,
    summary_frame,
    topology_groups,
)
from pfscope.spark_jobs.compute.org_tables import store_periods_table, stores_table, with_paths, with_risk
from pfscope.spark_jobs.compute.reading import MESSAGE_COLUMNS, SHARD, events_of, source_and_line
from pfscope.spark_jobs.compute.refold import Refold, changed_events, refolded
from pfscope.spark_jobs.compute.refresh_lines import (
    CannotRefresh,
    NewLines,
    Tally,
    Verdicts,
    given_up,
    judge_new,
    read_new,
    rejudged_lines,
)
from pfscope.spark_jobs.compute.refresh_pieces import pieces_of, replaced_rows
from pfscope.spark_jobs.compute.refresh_summary import Refresh
from pfscope.spark_jobs.compute.rejudged import Rejudged
from pfscope.spark_jobs.compute.restarts import refreshed_folders, sql_list, topology_starts
from pfscope.spark_jobs.compute.retaken import Retaken, retaken_files, widened
from pfscope.spark_jobs.compute.stage1 import PARSED_COLUMNS
from pfscope.spark_jobs.compute.state import Manifest, Plan
from pfscope.spark_jobs.compute.state_rows import rows_where
from pfscope.spark_jobs.compute.stream import FOLD_STATE, OUT_TABLES, STREAM_COLUMNS, org_payload
from pfscope.spark_jobs.compute.traffic import all_messages, refreshed_messages
from pfscope.spark_jobs.compute.writing import final_files
from pfscope.spark_jobs.model.tables import TABLES, ddl
from pfscope.spark_jobs.model.timeutil import default_as_of, now_us
from pfscope.spark_jobs.model.topology import Topology


def refresh(
    spark: SparkSession,
    topo: Topology,
    previous: Manifest,
    prev_dir: Path,
    plan: Plan,
    files: list[str],
    *,
    as_of: int | None,
    run_id: str,
    clock: int | None = None,
    partitions: int | None = None,
) -> JobResult:
    """The run, going on from ``previous`` (published at ``prev_dir``); raises
    :class:`CannotRefresh` when a full run is needed."""
    started = time.time()
    files_rewritten = len(plan.retaken)
    plan = widened(plan, prev_dir, files)
    new = read_new(spark, topo, plan)
    # (a job: only when a file is read again whole)
    shards = new.ok.selectExpr("seq", f"{SHARD} AS shard", "fid").collect() if plan.retaken else []
    retaken = retaken_files(previous, prev_dir, plan.retaken, files, shards)
    ctx = _Context(spark, topo, previous, prev_dir, files, retaken)
    verdicts = judge_new(spark, previous, prev_dir, new, ctx.kept)
    again = rejudged_lines(topo, prev_dir, files, verdicts)
    tally = (
        Tally.of(new, verdicts, again, previous, retaken.taken_back, retaken.last_ts)
        if retaken
        else Tally.of(new, verdicts, again, previous)
    )
    if as_of is None:
        as_of = default_as_of(tally.last_ts, now_us() if clock is None else clock)
    if as_of < previous.as_of:
        raise given_up("the as-of would be before the earlier run's", new.parsed, verdicts.judged)
    events = _new_events(ctx, new, verdicts, again, as_of)
    entries = open_entries(prev_dir)
    # a file read again whole starts its folders' rows of the folders and replica-list tables
    # again, as the topology's changed folders do
    restart = tuple(sorted({*plan.refold, *(retaken.fids if retaken else ())}))
    # every folder's state, read once: the folded ones' go through the fold, the others are kept
    folds = _state_rows(prev_dir, STATE_FOLDS, "fid", [], ["fid", "blob"], but=True)
    kept_states = Checkpoints.of(prev_dir, previous.as_of, folds)
    changed = changed_events(spark, events.new, retaken, prev_dir)
    refold = refolded(previous.as_of, retaken, entries, changed, kept_states, plan.refold)
    traffic = _traffic(ctx, events)
    fold = _fold(ctx, events, refold, entries, tally, as_of, partitions, traffic.medians, kept_states)
    carried = max(int(previous.folders or 0) - fold.refolded, 0)
    refresh_ = Refresh(
        "incremental",
        "",
        tally.lines,
        fold.refolded,
        carried,
        tally.rejudged,
        files_retaken=files_rewritten,
        files_shared=len(plan.retaken) - files_rewritten,
        folders_from_start=len(refold.first),
    )
    t = _tables(
        ctx,
        _rejects(ctx, new, verdicts, again, tally),
        events,
        fold,
        tally.status,
        as_of,
        traffic,
        restart,
    )
    counts = tally.counts(previous)
    t["summary"] = summary_frame(
        spark,
        run_id,
        as_of,
        counts["lines_read"],
        counts["accepted"],
        counts["duplicates"],
        started,
        refresh_,
    )
    t = {name: conform(df, name) for name, df in t.items()}
    again_seqs = local_frame(spark, [(q,) for q in again.seqs] if again else [], {"seq": "long"})
    state = _state(ctx, new, verdicts, again_seqs, events, fold, as_of)
    replaced = replaced_rows(spark, (refold.fids, refold.made_again), again, again_seqs, restart, retaken)
    pieces, carry, rewritten = pieces_of(spark, prev_dir, {**t, **state}, tally.empty(), replaced)
    index = kept_states.next_index(changed, first=plan.refold)
    return JobResult(
        {},
        as_of,
        None,
        pieces,
        refresh_,
        tuple(carry),
        frozenset(rewritten),
        str(prev_dir),
        counts,
        [new.parsed, verdicts.judged, events.new, fold.folded],
        reads=new.reads,
        after_write=lambda run_dir: kept_states.keep(run_dir, index, STATE_FOLDS),
    )


@dataclass(frozen=True)
class _Context:
    """What every step of a refresh reads: the session, the organisation, the previous run (its
    manifest, and where it is published) and the input files."""

    spark: SparkSession
    topo: Topology
    previous: Manifest
    prev_dir: Path
    files: list[str]
    retaken: Retaken | None = None  # files read again whole: their earlier lines taken back

    @property
    def kept(self) -> str:
        """SQL: a row of the earlier state that stays (all, unless a file is read again whole)."""
        return self.retaken.kept if self.retaken else "true"

    def step(self, description: str | None) -> None:
        """Names the jobs that follow in the Spark UI and event log (None: no name)."""
        self.spark.sparkContext.setJobDescription(description)  # type: ignore[arg-type]  # None: as pyspark does


@dataclass(frozen=True)
class _Events:
    """This run's new events (checkpointed), those waiting (the previous run's pending ones with
    them) and the fresh ones: waiting and stamped by the as-of."""

    new: DataFrame
    waiting: DataFrame
    fresh: DataFrame


def _new_events(ctx: _Context, new: NewLines, v: Verdicts, again: Rejudged | None, as_of: int) -> _Events:
    """The accepted lines' events: a receive of a message sent before takes its columns from the
    earlier send."""
    revived = local_frame(ctx.spark, again.revived if again else [], PARSED_COLUMNS)
    accepted = new.ok.unionByName(revived).join(
        v.judged.filter("why IS NULL AND seq = first_seq").select("seq"), "seq", "left_semi"
    )
    received = [r.msg for r in accepted.filter("kind = 'receive'").select("msg").distinct().collect()]
    old_sends = (
        arrow_frame(ctx.spark, _state_rows(ctx.prev_dir, STATE_EVENTS, "msg", received, SEND_COLUMNS))
        .filter("kind = 'send'")
        .filter(ctx.kept)
    )
    ctx.step("refresh: the new events")
    events = events_of(accepted, old_sends).localCheckpoint()
    waiting = events.unionByName(ctx.spark.read.parquet(str(ctx.prev_dir / STATE_PENDING)).filter(ctx.kept))
    return _Events(events, waiting, waiting.filter(f"ts <= {int(as_of)}"))


@dataclass(frozen=True)
class _Traffic:
    """The run's messages, and each pair's transits (the table, and the medians the forecast reads
    in the fold)."""

    messages: DataFrame
    transits: DataFrame
    medians: list[tuple[str, str, int, int]]


def _traffic(ctx: _Context, events: _Events) -> _Traffic:
    """Messages: the earlier run's unprocessed rows with their fresh receives, and the fresh
    sends; transits: over every message, the earlier runs' processed ones (their files) included."""

    # a file read again whole: its messages come anew from the fresh events (they are all in it)
    def kept(df: DataFrame) -> DataFrame:
        return ctx.retaken.without_messages(ctx.spark, df) if ctx.retaken else df

    messages = refreshed_messages(kept(_live(ctx.spark, ctx.prev_dir, "messages")), events.fresh)
    every = all_messages(ctx.spark, final_files(ctx.prev_dir, "messages"), messages, kept)
    ctx.step("refresh: the pairs' transits")
    transits, medians = collected_transits(ctx.spark, every)
    return _Traffic(messages, transits, medians)


@dataclass(frozen=True)
class _Fold:
    """The fold's output (checkpointed), and the folders it went through: every fold state, as
    the previous run left it, and which of them were folded (the others are carried)."""

    folded: DataFrame
    with_events: dict[str, bool]  # the folders with fresh events: whether one is a replica-list change
    folders: list[str]  # the folders folded
    folds: Any  # a pyarrow Table: fid, blob
    is_folded: Any  # a pyarrow mask of ``folds``
    refolded: int  # the folders with fresh or late events


def _fold(
    ctx: _Context,
    events: _Events,
    refold: Refold,
    entries: list[tuple[str, int | None]],
    tally: Tally,
    as_of: int,
    partitions: int | None,
    medians: list[tuple[str, str, int, int]],
    kept_states: Checkpoints,
) -> _Fold:
    """The folders the new as-of can change, each from its state with its fresh events. A folder
    with no fresh event and no open entry has nothing that depends on the as-of but its replicas'
    next status message time: its live rows and state are carried as they are (a 10M log's
    refresh finished all 43,479 folders' states again: 21 s)."""
    with_events = {
        r.fid: r.listed
        for r in events.fresh.filter(f"kind IN {FOLDED_KINDS}")
        .groupBy("fid")
        .agg(F.expr("bool_or(kind = 'replicas') AS listed"))
        .collect()
    }
    # and those whose forecast the new as-of moves: every folder a replica of which lacked CNs
    active = (
        set(with_events) | set(refold.fids) | {fid for fid, _ in entries} | forecast_folders(ctx.prev_dir)
    )
    folders = sorted(active)
    payload = org_payload(
        ctx.topo.to_json(),
        [(store, ts, seq, down) for ts, seq, store, down in tally.status if ts <= as_of],
        medians,
    )
    folds = kept_states.folds
    is_folded = pc.is_in(folds.column("fid"), value_set=pa.array(folders, pa.string()))
    resumed = kept_states.states(refold.resumed)
    stream = _fold_stream(ctx, events, refold, folds.filter(is_folded), resumed, as_of)
    # partitions by this fold's work, not the log's: each task costs a worker its start (a 10M
    # log's refresh had 42 for 5,399 folders); a state to finish weighs about as much as
    # ``STATE_EVENTS_WEIGHT`` events to fold
    n = partitions or fold_partitions_for(
        ctx.spark.sparkContext.defaultParallelism, tally.accepted + STATE_EVENTS_WEIGHT * len(active)
    )
    ctx.step(f"refresh: the fold of {len(active):,} folders")
    folded = fold_groups(stream, payload, as_of, n, keep_state=True).localCheckpoint()
    ctx.step(None)
    return _Fold(folded, with_events, folders, folds, is_folded, len(set(with_events) | set(refold.fids)))


def _fold_stream(
    ctx: _Context, events: _Events, refold: Refold, states: Any, resumed: Any, as_of: int
) -> DataFrame:
    """The fold's rows: each folder's state, then its fresh events, so that its fold goes on
    from where it stopped; a folder folded again, from the kept state it goes on from
    (``resumed``) with every event stamped after it, or from its first event, as a full run
    folds them."""

    def as_rows(blobs: Any) -> DataFrame:
        return arrow_frame(ctx.spark, blobs).selectExpr(*[_state_column(col) for col in STREAM_COLUMNS])

    kept = as_rows(states).filter(f"NOT {refold.where}")
    fresh = events.fresh.filter(f"NOT coalesce({refold.where}, false)")
    stream = group_stream(fresh, None, as_of).unionByName(kept)
    if refold.fids:
        everything = (
            ctx.spark.read.parquet(str(ctx.prev_dir / STATE_EVENTS))
            .filter(refold.where)
            .filter(ctx.kept)
            .unionByName(events.new.filter(refold.where))
            .filter(f"ts <= {int(as_of)}")
        )
        if refold.first:
            first = refold.first_events()
            starts = topology_groups(ctx.spark, ctx.topo).filter(first)
            stream = stream.unionByName(group_stream(everything.filter(first), starts, as_of))
        if refold.resumed.by_as_of:
            stream = stream.unionByName(
                group_stream(everything.filter(refold.resumed.events()), None, as_of)
            ).unionByName(as_rows(resumed))
    return stream


def _rejects(ctx: _Context, new: NewLines, v: Verdicts, again: Rejudged | None, tally: Tally) -> DataFrame:
    """This run's rejects: the new lines stage 1 rejects, those the rules between lines reject
    (naming the line they conflict with), and the earlier lines rejected now for another reason."""
    seq = F.col("seq")
    sources = dict(enumerate(ctx.files))
    rejects = (
        new.parsed.filter("reason IS NOT NULL")
        .selectExpr(
            "*",
            "CAST(NULL AS STRING) AS conflict_source",
            "CAST(NULL AS BIGINT) AS conflict_line",
        )
        .select(*source_and_line(seq, sources), "reason", "text", "conflict_source", "conflict_line")
    )
    if tally.stage2:
        why = (
            v.judged.join(new.frame.select("seq"), "seq", "left_semi")
            .filter("why IS NOT NULL")
            .selectExpr("seq", "why", "conflict")
        )
        rejects = rejects.unionByName(
            new.frame.join(why, "seq").select(
                *source_and_line(seq, sources),
                F.col("why").alias("reason"),
                "text",
                *source_and_line(F.col("conflict"), sources, "conflict_"),
            )
        )
    if again and again.rejects:
        rejects = rejects.unionByName(local_frame(ctx.spark, again.rejects, dict(TABLES["rejects"])))
    return rejects


def _tables(
    ctx: _Context,
    rejects: DataFrame,
    events: _Events,
    fold: _Fold,
    status: list[tuple[int, int, str, bool]],
    as_of: int,
    traffic: _Traffic,
    in_topology: tuple[str, ...] = (),
) -> dict[str, DataFrame]:
    """The published tables but the summary: the fold's, with the carried folders' live rows,
    and the organisation's, from the previous run's live rows and the fresh events (and the
    topology's start of the folders it added or changed, ``in_topology``)."""
    spark, prev_dir = ctx.spark, ctx.prev_dir
    t: dict[str, DataFrame] = {"rejects": rejects}
    for name in OUT_TABLES:
        t[name] = fold_table(fold.folded, name)
    # sorted by folder as the fold writes them (the dashboard reads one folder at a time)
    t["state_table"] = t["state_table"].unionByName(
        _carried(ctx, "state_table", fold).sortWithinPartitions("fid")
    )
    t["responders"] = t["responders"].unionByName(_carried(ctx, "responders", fold))
    starts = topology_starts(spark, ctx.topo, in_topology)
    t["replica_lists"] = (
        events.fresh.filter("kind = 'replicas'")
        .selectExpr("fid", "ts", "seq", "replicas", "path")
        .unionByName(starts.lists)
        .selectExpr("fid", "timestamp_micros(ts) AS at", "seq", "replicas", "path")
    )
    old_folders = spark.read.parquet(str(prev_dir / "folders"))
    if in_topology:  # their start is the new topology's (replica-list changes are applied below)
        old_folders = old_folders.filter(f"NOT fid IN ({sql_list(in_topology)})").unionByName(starts.folders)
    # the earlier replica-list changes of the folders with a fresh one, or a new start (the
    # others keep theirs)
    listed = sorted({fid for fid, fresh_list in fold.with_events.items() if fresh_list} | set(in_topology))
    lists = rows_where(prev_dir / "replica_lists", "fid", listed, files="final-*")
    old_lists = (
        spark.createDataFrame([], ddl("replica_lists"))
        if lists is None
        else arrow_frame(spark, lists).filter(ctx.kept)
    )
    # computed once (it is written, and names the folded replicas' paths)
    t["folders"] = conform(
        refreshed_folders(
            old_folders,
            events.fresh,
            old_lists.unionByName(t["replica_lists"]),
            in_topology,
            _seen_elsewhere(ctx, as_of),
        ),
        "folders",
    ).localCheckpoint()
    # a carried folder had no replica-list change, so its replicas' paths are as they were
    t["replicas"] = with_paths(t["replicas"], t["folders"]).unionByName(
        _carried(ctx, "replicas", fold).withColumn(
            "next_status_at",
            F.expr(f"CASE WHEN next_status_at > timestamp_micros({int(as_of)}) THEN next_status_at END"),
        )
    )
    t["stores"] = stores_table(spark, ctx.topo, _status_frame(spark, status, as_of))
    t["replicas"] = with_risk(t["replicas"], t["stores"])
    t["store_periods"] = store_periods_table(
        spark, ctx.topo, [(s, ts, seq, d) for ts, seq, s, d in status if ts <= as_of]
    )
    t["messages"] = traffic.messages
    t["transits"] = traffic.transits
    return t


def _seen_elsewhere(ctx: _Context, as_of: int) -> tuple[str, ...]:
    """The folders of files read again whole that the topology does not name and whose events
    in other files show them (their row of the folders table starts again, as the topology's)."""
    if not ctx.retaken:
        return ()
    unnamed = [fid for fid in ctx.retaken.fids if fid not in ctx.topo.folders]
    if not unnamed:
        return ()
    rows = _state_rows(ctx.prev_dir, STATE_EVENTS, "fid", unnamed, ["fid", "kind", "ts", "seq"])
    theirs = ctx.retaken.theirs(rows)
    shown = pc.is_in(rows.column("kind"), value_set=pa.array(["replicas", "change", "send"]))
    seen = rows.filter(pc.and_(pc.and_(pc.invert(theirs), shown), pc.less_equal(rows.column("ts"), as_of)))
    return tuple(sorted(set(seen.column("fid").to_pylist())))


def forecast_folders(run_dir: Path) -> set[str]:
    """The folders with a forecast in an earlier run (a replica lacked CNs): the new as-of and
    transits move it. Every other folder without fresh events still lacks nothing."""
    import pyarrow.parquet as pq

    files = sorted((run_dir / "forecast").glob("live-*"))
    if not files:
        return set()
    return set(pq.read_table([str(f) for f in files], columns=["fid"]).column("fid").to_pylist())


def _carried(ctx: _Context, table: str, fold: _Fold) -> DataFrame:
    """The earlier run's live rows of the folders not folded again."""
    rows = rows_where(ctx.prev_dir / table, "fid", fold.folders, files="live-*", but=True)
    return _live(ctx.spark, ctx.prev_dir, table) if rows is None else arrow_frame(ctx.spark, rows)


def _state(
    ctx: _Context, new: NewLines, v: Verdicts, again_seqs: DataFrame, events: _Events, fold: _Fold, as_of: int
) -> dict[str, DataFrame]:
    """What the next run goes on from: the verdicts of the lines read or judged again, the new
    events, those still pending, and every folder's fold state (the folded ones' anew)."""
    lines = v.judged.join(new.frame.select("seq").unionByName(again_seqs), "seq", "left_semi")
    folds = fold_table(fold.folded, FOLD_STATE).unionByName(
        arrow_frame(ctx.spark, fold.folds.filter(pc.invert(fold.is_folded)))
    )
    return {
        STATE_LINES: lines,
        STATE_EVENTS: events.new,
        STATE_PENDING: events.waiting.filter(f"ts > {int(as_of)}"),
        STATE_FOLDS: folds,
    }


#: what a receive takes from its send (``reading.events_of``)
SEND_COLUMNS = ["msg", "kind", "store", "ts", "seq", *MESSAGE_COLUMNS.values()]
#: a fold state finished (unpickled, brought to the as-of, pickled) costs about as much as
#: folding this many events (10M log: 0.65 ms a state, about 10 us an event)
STATE_EVENTS_WEIGHT = 64
#: the events a folder's fold reads (a status line changes the organisation's timeline only)
FOLDED_KINDS = "('change', 'send', 'receive', 'replicas')"


def open_entries(run_dir: Path) -> list[tuple[str, int | None]]:
    """Each open backfill entry of an earlier run (its live entries) as (folder, its last
    request's time in microseconds): their timers and next requests depend on the as-of."""
    import pyarrow.parquet as pq

    files = sorted((run_dir / "backfill_entries").glob("live-*"))
    if not files:
        return []
    t = pq.read_table([str(f) for f in files], columns=["fid", "state", "last_request_at"])
    at = t.column("last_request_at").cast(pa.timestamp("us")).cast(pa.int64()).to_pylist()
    return [
        (fid, a)
        for fid, state, a in zip(t.column("fid").to_pylist(), t.column("state").to_pylist(), at, strict=True)
        if state == "open"
    ]


def _state_rows(
    run_dir: Path, table: str, column: str, values: list[str], columns: list[str], *, but: bool = False
) -> Any:
    """``state_rows.rows_where`` of one of the earlier run's state tables; a state without that
    table's files cannot be gone on from."""
    rows = rows_where(run_dir / table, column, values, columns, but=but)
    if rows is None:
        raise CannotRefresh(f"the earlier run's state has no {table.removeprefix('_state/')}")
    return rows


def _state_column(column: str) -> str:
    """A fold state as a row of the fold's stream: before the folder's others (observer null,
    the least time), its state in ``blob``."""
    if column == "fid":
        return "fid"
    if column == "blob":
        return "blob"
    if column == "kind":
        return f"'{FOLD_STATE}' AS kind"
    if column in ("ts", "seq"):
        return f"{MIN_LONG_SQL} AS {column}"
    kinds = {
        "to": "array<string>",
        "responders": "array<string>",
        "replicas": "array<string>",
        "derived": "array<string>",
        "ts": "bigint",
        "seq": "bigint",
        "cn": "bigint",
        "sent_at": "bigint",
        "msg_seq": "bigint",
    }
    return f"CAST(NULL AS {kinds.get(column, 'string')}) AS `{column}`"


def _status_frame(spark: SparkSession, status: list[tuple[int, int, str, bool]], as_of: int) -> DataFrame:
    """The up/down lines by the as-of, as the events ``stores_table`` reads."""
    rows = [
        ("store_status", store, ts, seq, "down" if down else "up")
        for ts, seq, store, down in status
        if ts <= as_of
    ]
    return local_frame(
        spark, rows, {"kind": "string", "store": "string", "ts": "long", "seq": "long", "status": "string"}
    )


def _live(spark: SparkSession, run_dir: Path, table: str) -> DataFrame:
    """A table's live rows in an earlier run (none: an empty frame of its schema)."""
    files = sorted((run_dir / table).glob("live-*"))
    if not files:
        return spark.createDataFrame([], ddl(table))
    return spark.read.parquet(*map(str, files))
