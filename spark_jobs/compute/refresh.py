"""A refresh: a run that goes on from the previous run's state instead of reading the whole log.

Exchange itself never re-reads history: each store keeps its replication state table and applies
new messages to it. A refresh does the same, on Spark:

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
own columns aside): ``tests/spark/test_refresh.py`` holds it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pfscope.spark_jobs.compute.job import (
    FINAL_STATE,
    FINAL_TABLES,
    MIN_LONG_SQL,
    SPLIT_TABLES,
    STATE_EVENTS,
    STATE_FOLDS,
    STATE_LINES,
    STATE_PENDING,
    JobResult,
    Piece,
    Refresh,
    arrow_frame,
    conform,
    fold_groups,
    fold_partitions_for,
    fold_table,
    folders_from,
    group_stream,
    local_frame,
    messages_table,
    store_periods_table,
    stores_table,
    summary_frame,
    topology_groups,
    with_paths,
    with_risk,
)
from pfscope.spark_jobs.compute.reading import (
    MESSAGE_COLUMNS,
    NARROW,
    PARSED_COLUMNS,
    SHARD,
    events_of,
    judge,
    parsed_row,
    source_and_line,
    sql_text,
)
from pfscope.spark_jobs.compute.rejudged import Rejudged
from pfscope.spark_jobs.compute.state import Manifest, Plan, earlier_lines, read_new_lines, rows_where
from pfscope.spark_jobs.compute.stream import FOLD_STATE, OUT_TABLES, STREAM_COLUMNS, org_payload
from pfscope.spark_jobs.compute.writing import files_holding, final_files, to_compact
from pfscope.spark_jobs.model.events import make_seq
from pfscope.spark_jobs.model.tables import TABLES, ddl
from pfscope.spark_jobs.model.timeutil import default_as_of, now_us
from pfscope.spark_jobs.model.topology import Topology

#: the fold's tables of final rows: a refolded folder's rows in them are written anew
REFOLDED_TABLES = (
    "state_history",
    "backfill_requests",
    "backfill_candidates",
    "replica_history",
    "backfill_entries",
)


class CannotRefresh(Exception):
    """The new lines cannot be folded on from the state: the job runs in full, for this reason."""


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
    rows: list[tuple[int, str | None]] = []
    reads = {}
    for nb in plan.new:
        lines, read = read_new_lines(nb)
        rows += [(make_seq(nb.index, n), text) for n, text in lines]
        reads[nb.index] = read
    new_lines = local_frame(spark, rows, {"seq": "long", "text": "string"})
    # stage 1 in the driver: a refresh's new lines are few, and a Python worker would cost more
    # to start than they cost to parse (the same ``parsed_row``, the one set of rules)
    parsed_rows = [parsed_row(topo, seq, text) for seq, text in rows]
    parsed = local_frame(spark, parsed_rows, PARSED_COLUMNS)  # a local relation: nothing to cache
    ok_new = parsed.filter("reason IS NULL")

    # the rules between lines: the new lines with the earlier lines of their shards (no new line
    # to judge: nothing read)
    first_new = (
        {
            r.shard: r.first
            for r in ok_new.selectExpr(f"{SHARD} AS shard", "ts")
            .groupBy("shard")
            .agg(F.expr("min(ts) AS first"))
            .collect()
        }
        if any(r[1] is None for r in parsed_rows)
        else {}
    )
    lines = earlier_lines(
        prev_dir / STATE_LINES, first_new, [*NARROW, "fid", "shard", "first_seq", "why", "conflict"]
    )
    if lines is None:
        raise CannotRefresh("the earlier run's state has no lines")
    old_touched = arrow_frame(spark, lines)
    # the verdicts, the new events and the folds are checkpointed, not cached: every frame made
    # from a cached one is analysed down its whole plan and matched against every cached plan,
    # and the refresh makes about a hundred (a small log's refresh: its 15 joins took 6.6 s to
    # plan, 0.14 s on checkpoints); a checkpoint is a leaf. Each is computed once either way. (A
    # checkpoint has no lineage: on a cluster, an executor lost after one fails the run, which
    # leaves the previous run published, as any failed run does.)
    # (in one task per core: the session is sized by the new bytes and states, and the earlier
    # lines read here are more: on the 1M log, in one task the judging took 3.6 s)
    cores = spark.sparkContext.defaultParallelism
    step = spark.sparkContext.setJobDescription  # each step's jobs named in the Spark UI and event log
    step("refresh: the new lines judged with the earlier lines of their shards")
    judged = judge(
        old_touched.select(*NARROW, "fid").unionByName(ok_new.select(*NARROW, "fid")), cores
    ).localCheckpoint()
    verdicts = judged.join(
        old_touched.selectExpr("seq", "first_seq AS f0", "why AS w0", "conflict AS c0", "true AS old"),
        "seq",
        "left",
    )
    accepted = "old IS NULL AND why IS NULL AND seq = first_seq"
    changed = "old AND NOT (first_seq <=> f0 AND why <=> w0 AND conflict <=> c0)"
    c = verdicts.selectExpr(
        "count_if(old IS NULL) AS ok",
        "count_if(old IS NULL AND why IS NULL AND seq != first_seq) AS duplicates",
        "count_if(old IS NULL AND why IS NOT NULL) AS rejected",
        # a line accepted before (or a repeat of one) that the new lines would take back
        f"count_if({changed} AND w0 IS NULL) AS retracted",
        # a line rejected before that the new lines judge otherwise (its message's send came late)
        f"count_if({changed} AND w0 IS NOT NULL) AS rejudged",
        f"count_if({accepted} AND ts <= {previous.as_of}) AS late",
        f"max(CASE WHEN {accepted} THEN ts END) AS last_ts",
        f"collect_list(CASE WHEN {accepted} AND kind = 'store_status' THEN struct(ts, seq, store, status) END) AS status",
    ).first()
    assert c is not None
    if c["retracted"]:
        _release(parsed, judged)
        raise CannotRefresh(
            f"new lines change the verdict on lines accepted before ({c['retracted']:,}: the new "
            "lines come before them in input order, or are changes numbered past them)"
        )
    if any(st.ts <= previous.as_of for st in c["status"]):
        _release(parsed, judged)
        raise CannotRefresh(
            "a new up/down line is stamped before the earlier run's as-of (the organisation's "
            "timeline changed)"
        )
    # lines rejected before and judged otherwise now: accepted (as events, like new lines: from
    # their text, which their reject row holds), repeats, or rejects for another reason
    again = (
        Rejudged.of(
            verdicts.filter(f"{changed} AND w0 IS NOT NULL")
            .select("seq", "first_seq", "why", "conflict", "ts")
            .collect(),
            prev_dir,
            files,
            lambda seq, text: parsed_row(topo, seq, text),
        )
        if c["rejudged"]
        else None
    )
    revived = local_frame(spark, again.revived if again else [], PARSED_COLUMNS)
    last_ts = max(
        (t for t in (previous.last_ts, c["last_ts"], again.last_ts if again else None) if t is not None),
        default=None,
    )
    if as_of is None:
        as_of = default_as_of(last_ts, now_us() if clock is None else clock)
    if as_of < previous.as_of:
        _release(parsed, judged)
        raise CannotRefresh("the as-of would be before the earlier run's")
    n_lines = len(rows)
    duplicates, stage2 = int(c["duplicates"]), int(c["rejected"])
    n_accepted = int(c["ok"]) - duplicates - stage2
    if again:
        n_accepted, duplicates = n_accepted + len(again.revived), duplicates + again.duplicates
    status = sorted([*previous.status, *((s.ts, s.seq, s.store, s.status == "down") for s in c["status"])])

    # the new events: a receive of a message sent before takes its columns from the earlier send
    new_accepted = ok_new.unionByName(revived).join(
        judged.filter("why IS NULL AND seq = first_seq").select("seq"), "seq", "left_semi"
    )
    received = [r.msg for r in new_accepted.filter("kind = 'receive'").select("msg").distinct().collect()]
    old_sends = arrow_frame(spark, _state_rows(prev_dir, STATE_EVENTS, "msg", received, SEND_COLUMNS)).filter(
        "kind = 'send'"
    )
    step("refresh: the new events")
    events_new = events_of(new_accepted, old_sends).localCheckpoint()
    waiting = events_new.unionByName(spark.read.parquet(str(prev_dir / STATE_PENDING)))
    fresh = waiting.filter(f"ts <= {int(as_of)}")
    # late data: the folders it reaches are folded again from their first event. An event stamped
    # at the previous as-of itself comes after every event read before at that time (its line
    # does), so it folds on from the state as it would in a full run, unless a request fell due
    # at that very time: the previous run made it before the event, a full run makes it after.
    # (The as-of is the last event's time, so the next export's lines of that second are the
    # usual case; refolding them rewrote a 10M log's whole history: 11 s.)
    entries = open_entries(prev_dir)
    asked_then = sorted({fid for fid, at in entries if at == previous.as_of})
    late = (
        f"ts < {previous.as_of} OR (ts = {previous.as_of} AND fid IN "
        f"({', '.join(sql_text(f) for f in asked_then) or 'NULL'}))"
    )
    refold = (
        sorted(r.fid for r in events_new.filter(late).select("fid").distinct().collect())
        if c["late"] or (again and again.late(previous.as_of))
        else []
    )
    in_refold = f"fid IN ({', '.join(sql_text(f) for f in refold)})" if refold else "false"

    # the fold: the folders the new as-of can change, each from its state with its fresh events.
    # A folder with no fresh event and no open entry has nothing that depends on the as-of but
    # its replicas' next status message time: its live rows and state are carried as they are
    # (a 10M log's refresh finished all 43,479 folders' states again: 21 s)
    with_events = {
        r.fid: r.listed
        for r in fresh.filter(f"kind IN {FOLDED_KINDS}")
        .groupBy("fid")
        .agg(F.expr("bool_or(kind = 'replicas') AS listed"))
        .collect()
    }
    active = set(with_events) | set(refold) | {fid for fid, _ in entries}
    folders = sorted(active)
    payload = org_payload(
        topo.to_json(), [(store, ts, seq, down) for ts, seq, store, down in status if ts <= as_of]
    )
    # every folder's state, read once: the folded ones' go through the fold, the others are kept
    folds = _state_rows(prev_dir, STATE_FOLDS, "fid", [], ["fid", "blob"], but=True)
    is_folded = pc.is_in(folds.column("fid"), value_set=pa.array(folders, pa.string()))
    states = (
        arrow_frame(spark, folds.filter(is_folded))
        .filter(f"NOT {in_refold}")
        .selectExpr(*[_state_column(col) for col in STREAM_COLUMNS])
    )
    stream = group_stream(fresh.filter(f"NOT coalesce({in_refold}, false)"), None).unionByName(states)
    if refold:  # every event of those folders, from the first, as a full run folds them
        everything = (
            spark.read.parquet(str(prev_dir / STATE_EVENTS))
            .filter(in_refold)
            .unionByName(events_new.filter(in_refold))
            .filter(f"ts <= {int(as_of)}")
        )
        stream = stream.unionByName(group_stream(everything, topology_groups(spark, topo).filter(in_refold)))
    # partitions by this fold's work, not the log's: each task costs a worker its start (a 10M
    # log's refresh had 42 for 5,399 folders); a state to finish weighs about as much as
    # ``STATE_EVENTS_WEIGHT`` events to fold
    n = partitions or fold_partitions_for(cores, n_accepted + STATE_EVENTS_WEIGHT * len(active))
    step(f"refresh: the fold of {len(active):,} folders")
    folded = fold_groups(stream, payload, as_of, n, keep_state=True).localCheckpoint()
    step(None)  # type: ignore[arg-type]  # pyspark says str; None clears the description
    folders_refolded = len(set(with_events) | set(refold))

    def carried(table: str) -> DataFrame:
        """The earlier run's live rows of the folders not folded again."""
        rows = rows_where(prev_dir / table, "fid", folders, files="live-*", but=True)
        return _live(spark, prev_dir, table) if rows is None else arrow_frame(spark, rows)

    # the tables: final rows of this run, and the live ones
    seq = F.col("seq")
    sources = dict(enumerate(files))
    rejects = (
        parsed.filter("reason IS NOT NULL")
        .selectExpr(
            "*",
            "CAST(NULL AS STRING) AS conflict_source",
            "CAST(NULL AS BIGINT) AS conflict_line",
        )
        .select(*source_and_line(seq, sources), "reason", "text", "conflict_source", "conflict_line")
    )
    if stage2:
        why = (
            judged.join(new_lines.select("seq"), "seq", "left_semi")
            .filter("why IS NOT NULL")
            .selectExpr("seq", "why", "conflict")
        )
        rejects = rejects.unionByName(
            new_lines.join(why, "seq").select(
                *source_and_line(seq, sources),
                F.col("why").alias("reason"),
                "text",
                *source_and_line(F.col("conflict"), sources, "conflict_"),
            )
        )
    if again and again.rejects:
        rejects = rejects.unionByName(local_frame(spark, again.rejects, dict(TABLES["rejects"])))
    t: dict[str, DataFrame] = {"rejects": rejects}
    for name in OUT_TABLES:
        t[name] = fold_table(folded, name)
    # sorted by folder as the fold writes them (the dashboard reads one folder at a time)
    t["state_table"] = t["state_table"].unionByName(carried("state_table").sortWithinPartitions("fid"))
    t["responders"] = t["responders"].unionByName(carried("responders"))
    t["replica_lists"] = fresh.filter("kind = 'replicas'").selectExpr(
        "fid", "timestamp_micros(ts) AS at", "seq", "replicas", "path"
    )
    old_folders = spark.read.parquet(str(prev_dir / "folders"))
    # the earlier replica-list changes of the folders with a fresh one (the others keep theirs)
    listed = sorted(fid for fid, fresh_list in with_events.items() if fresh_list)
    lists = rows_where(prev_dir / "replica_lists", "fid", listed, files="final-*")
    old_lists = (
        spark.createDataFrame([], ddl("replica_lists")) if lists is None else arrow_frame(spark, lists)
    )
    # computed once (it is written, and names the folded replicas' paths)
    t["folders"] = conform(
        refreshed_folders(old_folders, fresh, old_lists.unionByName(t["replica_lists"])), "folders"
    ).localCheckpoint()
    # a carried folder had no replica-list change, so its replicas' paths are as they were
    t["replicas"] = with_paths(t["replicas"], t["folders"]).unionByName(
        carried("replicas").withColumn(
            "next_status_at",
            F.expr(f"CASE WHEN next_status_at > timestamp_micros({int(as_of)}) THEN next_status_at END"),
        )
    )
    t["stores"] = stores_table(spark, topo, _status_frame(spark, status, as_of))
    t["replicas"] = with_risk(t["replicas"], t["stores"])
    t["store_periods"] = store_periods_table(
        spark, topo, [(s, ts, seq, d) for ts, seq, s, d in status if ts <= as_of]
    )
    t["messages"] = refreshed_messages(_live(spark, prev_dir, "messages"), fresh)
    folders_before = int(previous.folders or 0)
    refresh_ = Refresh(
        "incremental",
        "",
        n_lines,
        folders_refolded,
        max(folders_before - folders_refolded, 0),
        len(again.seqs) if again else 0,
    )
    t["summary"] = summary_frame(
        spark,
        run_id,
        as_of,
        previous.lines_read + n_lines,
        previous.accepted + n_accepted,
        previous.duplicates + duplicates,
        started,
        refresh_,
    )
    t = {name: conform(df, name) for name, df in t.items()}
    again_seqs = local_frame(spark, [(q,) for q in again.seqs] if again else [], {"seq": "long"})
    new_state = judged.join(new_lines.select("seq").unionByName(again_seqs), "seq", "left_semi")
    state = {
        STATE_LINES: new_state,
        STATE_EVENTS: events_new,
        STATE_PENDING: waiting.filter(f"ts > {int(as_of)}"),
        STATE_FOLDS: fold_table(folded, FOLD_STATE).unionByName(
            arrow_frame(spark, folds.filter(pc.invert(is_folded)))
        ),
    }

    # final pieces the counts say are empty are not written (each write is a Spark job)
    n_again = len(again.seqs) if again else 0
    empty = {
        name
        for name, n in (
            ("rejects", n_lines - int(c["ok"]) + stage2 + len(again.rejects if again else [])),
            (STATE_LINES, int(c["ok"]) + n_again),
            (STATE_EVENTS, n_accepted),
        )
        if n == 0
    }
    # earlier final rows this run replaces, by table: a refolded folder's rows, and a line judged
    # again (its reject row, its verdict)
    replaced: dict[str, tuple[str, set[str] | set[int], Callable[[DataFrame], DataFrame]]] = {
        name: ("fid", set(refold), lambda df: df.filter(f"NOT {in_refold}"))
        for name in REFOLDED_TABLES
        if refold
    }
    if again:
        again_lines = F.broadcast(local_frame(spark, again.lines, {"source": "string", "line": "long"}))
        replaced["rejects"] = (
            "line",
            {line for _, line in again.lines},
            lambda df: df.join(again_lines, ["source", "line"], "left_anti"),
        )
        replaced[STATE_LINES] = (
            "seq",
            set(again.seqs),
            lambda df: df.join(F.broadcast(again_seqs), "seq", "left_anti"),
        )
    pieces, carry, rewritten = [], [], set()
    for name, df in {**t, **state}.items():
        if name in SPLIT_TABLES:
            cond = SPLIT_TABLES[name]
            final, live = df.filter(cond), df.filter(f"NOT ({cond})")
        elif name in FINAL_TABLES or name in FINAL_STATE:
            final, live = df, None
        else:
            final, live = None, df
        if final is not None:
            kept = final_files(prev_dir, name)
            carry.append(name)
            # earlier final files written again with this run's rows, the others kept: the small
            # ones once there are many, and those holding a refolded folder (its rows come anew;
            # one late folder costs its files, not the table)
            column, values, without = replaced.get(name, ("fid", set(), lambda df: df))
            compact = to_compact(kept)
            redo = sorted({*compact, *files_holding(kept, values, column)})
            if redo:
                # as many files as large ones are written again, and one: the small ones and
                # this run's rows in a file of their own
                final = (
                    without(spark.read.parquet(*map(str, redo)))
                    .unionByName(final)
                    .coalesce(len(set(redo) - set(compact)) + 1)
                )
                rewritten |= {f"{name}/{f.name}" for f in redo}
            if name not in empty or redo:
                pieces.append(Piece(name, True, final))
        if live is not None:
            pieces.append(Piece(name, False, live))

    counts = {
        "lines_read": previous.lines_read + n_lines,
        "accepted": previous.accepted + n_accepted,
        "duplicates": previous.duplicates + duplicates,
        "last_ts": last_ts,
        "status": status,
    }
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
        [parsed, judged, events_new, folded],
        reads=reads,
    )


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
    """``state.rows_where`` of one of the earlier run's state tables; a state without that
    table's files cannot be gone on from."""
    rows = rows_where(run_dir / table, column, values, columns, but=but)
    if rows is None:
        raise CannotRefresh(f"the earlier run's state has no {table.removeprefix('_state/')}")
    return rows


def _release(*dfs: DataFrame) -> None:
    for df in dfs:
        df.unpersist()


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


def refreshed_folders(old: DataFrame, fresh: DataFrame, replica_lists: DataFrame) -> DataFrame:
    """The folders table of the earlier run brought up to date with the fresh events: folders
    first seen, and the latest replica list and path of those with a fresh list change, among
    all their changes (a late one is not the latest) (``compute.folders_table``'s rules)."""
    changed = fresh.filter("kind = 'replicas'").selectExpr("fid").distinct()
    lists = (
        replica_lists.filter("at IS NOT NULL")
        .join(changed, "fid", "left_semi")
        .selectExpr("fid", "unix_micros(at) AS ts", "seq", "replicas", "path")
    )
    return folders_from(old, fresh, lists)


def refreshed_messages(old_live: DataFrame, fresh: DataFrame) -> DataFrame:
    """Messages: the earlier run's rows not yet processed, now with their fresh receives, and
    the rows of the fresh sends (``compute.messages_table``)."""
    got = fresh.filter("kind = 'receive'").selectExpr("msg", "store AS recipient", "ts AS got")
    cols = [n for n, _ in TABLES["messages"]]
    older = old_live.join(got, ["msg", "recipient"], "left").selectExpr(
        *[
            (
                "coalesce(processed_at, timestamp_micros(got)) AS processed_at"
                if c == "processed_at"
                else f"`{c}`"
            )
            for c in cols
        ]
    )
    return older.unionByName(messages_table(fresh).selectExpr(*[f"`{c}`" for c in cols]))
