"""The Spark job: read -> group -> fold -> join -> publish.

Reading, validation, de-duplication and the send/receive join are Spark SQL
(``reading``). Groups are repartitioned by folder, sorted by (folder, observer, time)
within partitions, and streamed through the plain-Python fold (``stream``). A folder's
observers are folded in one task, so the two figures that compare folds of one folder (knowledge
lag, should-respond) are made there too, by the replay's own functions. Each step is a function
from DataFrames to a DataFrame.

Few Spark jobs: one for the reading's counts (with the as-of time and the up/down timeline), then
one per table written; the parsed lines, the events and the fold's output are cached, never
materialised by an action of their own.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from pfscope.spark_jobs.compute.frames import local_frame
from pfscope.spark_jobs.compute.org_tables import (
    folders_table,
    replica_lists_table,
    store_periods_table,
    stores_table,
    with_paths,
    with_risk,
)
from pfscope.spark_jobs.compute.reading import ReadResult, read_events
from pfscope.spark_jobs.compute.refresh_summary import Refresh
from pfscope.spark_jobs.compute.stream import (
    FOLD_STATE,
    GROUP_START,
    HISTORY,
    OUT_TABLES,
    STREAM_COLUMNS,
    fold_partitions,
    folded_ddl,
    org_payload,
    row_ddl,
)
from pfscope.spark_jobs.compute.traffic import messages_table, transits_table
from pfscope.spark_jobs.model.rules.timeouts import QUEUE_EXPIRY
from pfscope.spark_jobs.model.tables import TABLES
from pfscope.spark_jobs.model.timeutil import US, default_as_of, now_us
from pfscope.spark_jobs.model.topology import HIERARCHY_FID, Topology

MIN_LONG = -(1 << 63)
MIN_LONG_SQL = f"CAST({MIN_LONG} AS BIGINT)"
#: the kinds of event that belong to their own store's group
_GROUP_KINDS = "kind IN ('change', 'send', 'receive')"


#: tables whose rows never change once written: a refresh keeps the earlier runs' files of them
#: and writes only its new rows (``Piece.final``)
FINAL_TABLES = (
    "rejects",
    "state_history",
    "backfill_requests",
    "backfill_candidates",
    "replica_history",
    "replica_lists",
)
#: tables of which some rows are final (the condition) and the rest this run's only
SPLIT_TABLES = {"backfill_entries": "state != 'open'", "messages": "processed_at IS NOT NULL"}
#: what a run keeps for the next (``state``), as Parquet folders under the run's folder
STATE_LINES, STATE_EVENTS, STATE_PENDING, STATE_FOLDS = (
    "_state/lines",
    "_state/events",
    "_state/pending",
    "_state/folds",
)
FINAL_STATE = (STATE_LINES, STATE_EVENTS)
#: a full run writes them as files of consecutive lines (``in_input_order``), about this many rows
#: each: a file read again whole (the last blocks' files of ingest's ``events/``) takes back rows of
#: the last files only, and every other file is kept by a link (``writing.files_holding``)
SEQ_FILE_ROWS = 100_000


def in_input_order(df: DataFrame, rows: int) -> DataFrame:
    """``df`` (rows with a ``seq``) in ranges of input order, one file each when written: without
    it, every file of a fold partition held lines of every input file, and taking back one file's
    lines wrote the whole table again (at 1M events, 39 task CPU seconds an hour)."""
    return df.repartitionByRange(max(1, -(-rows // SEQ_FILE_ROWS)), "seq")


@dataclass
class Piece:
    """Part of a table, written as its own files: ``final`` rows are kept by later runs, the
    others belong to this run only."""

    table: str
    final: bool
    df: DataFrame


@dataclass
class JobResult:
    tables: dict[str, DataFrame]  # a full run: every table whole (the pieces are made of them)
    as_of: int
    read: ReadResult | None
    pieces: list[Piece] = field(default_factory=list)  # in the order to write them
    refresh: Refresh | None = None
    #: tables (and state) whose final files of the previous run are kept (a refresh)
    carry: tuple[str, ...] = ()
    #: final files of the previous run (``table/name``) this run writes anew instead of keeping
    rewritten: frozenset[str] = frozenset()
    previous: str | None = None  # the previous run's folder (a refresh)
    counts: dict[str, Any] = field(default_factory=dict)  # lines_read, accepted, duplicates, last_ts, status
    cached: list[DataFrame] = field(default_factory=list)
    file_lines: dict[int, int] = field(default_factory=dict)  # lines read per file index (a full run)
    reads: dict[int, Any] = field(
        default_factory=dict
    )  # a refresh: each file read, as now read (``FileRead``)
    #: a refresh: what it writes once its tables are written (its kept fold states), given the run's folder
    after_write: Callable[[Path], None] | None = None

    def written(self, first_round: bool) -> None:
        """Drop what the pieces left to write no longer read: after the first round (the fold,
        which fills the caches of the events and its output), the parsed lines; after the
        last, everything."""
        if self.read is not None:
            if first_round:
                self.read.release_lines()
            else:
                self.read.release()
        if not first_round:
            for df in self.cached:
                df.unpersist()


def pieces_of(tables: dict[str, DataFrame], state: dict[str, DataFrame]) -> list[Piece]:
    """A full run's tables as pieces: final tables whole, split tables in two, the rest live."""
    out = []
    for name, df in {**tables, **state}.items():
        if name in SPLIT_TABLES:
            cond = SPLIT_TABLES[name]
            out += [Piece(name, True, df.filter(cond)), Piece(name, False, df.filter(f"NOT ({cond})"))]
        else:
            out.append(Piece(name, name in FINAL_TABLES or name in FINAL_STATE, df))
    return out


# --------------------------------------------------------------------------------------------
# groups
# --------------------------------------------------------------------------------------------
def topology_groups(spark: SparkSession, topo: Topology) -> DataFrame:
    """A start row for each group the topology names: every store on the hierarchy, each
    folder's initial replicas. (A store with events for a folder starts its group by them; one
    named only by a replica-list change gets its group from the fold, ``stream._Partition``.)"""
    initial = [(s, HIERARCHY_FID) for s in topo.stores]
    initial += [(s, f.fid) for f in topo.folders.values() for s in f.replicas]
    return local_frame(spark, initial, {"observer": "string", "fid": "string"}).selectExpr(
        "observer", "fid", f"'{GROUP_START}' AS kind", f"{MIN_LONG_SQL} AS ts", f"{MIN_LONG_SQL} AS seq"
    )


def group_stream(events: DataFrame, starts: DataFrame | None, as_of: int) -> DataFrame:
    """The fold's rows: the topology's start rows (a refresh has none: its folds are read back),
    each store's own events, and each replica-list change once per folder (observer null: the
    fold hands it to every observer of the folder). A send within the queue expiry before the
    as-of keeps what it carries: the forecast plays it as mail on its way."""
    recent = f"(kind = 'send' AND ts > {int(as_of) - QUEUE_EXPIRY})"
    own = events.filter(_GROUP_KINDS).selectExpr("*", "store AS observer")
    lists = events.filter("kind = 'replicas'").selectExpr(
        "*", "store AS event_store", "CAST(NULL AS STRING) AS observer"
    )
    rows = own.unionByName(lists, allowMissingColumns=True)
    if starts is not None:
        rows = rows.unionByName(starts, allowMissingColumns=True)
    return rows.selectExpr(*[_only_where_read(c, recent) for c in STREAM_COLUMNS])


#: the kinds of rows whose column the fold reads (``None``: every kind); the rest go as nulls,
#: so the shuffle into the fold and the Arrow batches carry no column the fold ignores
_READ_BY = {
    "cn": ("change",),
    "msg": ("send", "receive"),
    "type": ("send", "receive"),
    "sender": ("receive",),
    "sent_at": ("receive",),
    "msg_seq": ("receive",),
    "to": ("send",),
    "changes": ("receive", "send"),  # a send's: the fold keeps the own CNs its sends carried
    "requested": ("send",),
    "source": ("send",),
    "responders": ("send",),
    "replicas": ("replicas",),
    "event_store": ("replicas",),
    "derived": ("change", "receive"),
}


#: the columns of a send the forecast reads when the send is recent (``group_stream``)
_CARRIED = ("cnset", "derived")


def _only_where_read(column: str, recent: str = "false") -> str:
    """The column as a SQL expression: null in the rows of kinds the fold does not read it in
    (and an empty ``derived`` list null too: the fold reads null as empty), but what a recent
    send carries (``recent``: SQL)."""
    if column == "blob":  # only a fold state's row has one
        return "CAST(NULL AS STRING) AS blob"
    kinds = _READ_BY.get(column)
    name = f"`{column}`"
    if column == "cnset":  # a receive's set; a send's only in a status request (the requester's)
        read = "kind = 'receive' OR (kind = 'send' AND type = 'status_request')"
    elif kinds is None:
        return name
    else:
        read = f"kind IN ({', '.join(repr(k) for k in kinds)})"
    if column in _CARRIED:
        read = f"({read}) OR {recent}"
    if column == "derived":
        read = f"({read}) AND size(derived) > 0"
    return f"CASE WHEN {read} THEN {name} END AS {name}"


def fold_groups(
    stream: DataFrame, payload: str, as_of: int, partitions: int, keep_state: bool = True
) -> DataFrame:
    """Stream sorted partitions through the fold; one frame of every fold table (``stream.FOLDED_COLUMNS``).

    Partitioned by folder and sorted by folder first: every observer of a folder is folded in
    the same task (the comparisons between its folds need them all), the published files come
    out sorted by ``fid``, and the dashboard, which reads one folder at a time, skips all row
    groups but the folder's own."""
    ordered = stream.repartition(partitions, "fid").sortWithinPartitions("fid", "observer", "ts", "seq")
    return ordered.mapInArrow(fold_partitions(payload, as_of, keep_state=keep_state), schema=folded_ddl())


def collected_transits(
    spark: SparkSession, messages: DataFrame
) -> tuple[DataFrame, list[tuple[str, str, int, int]]]:
    """Each pair's transits (``traffic.transits_table``), computed before the fold: the table to
    write, held by the driver (a pair per sender and recipient), and the median and longest in
    microseconds the fold's forecast reads (as ``forecast.Transits.from_rows`` reads the replay's)."""
    rows = [tuple(r) for r in transits_table(messages).collect()]
    frame = local_frame(spark, rows, dict(TABLES["transits"]))
    return frame, [(str(r[0]), str(r[1]), round(float(r[3]) * US), round(float(r[4]) * US)) for r in rows]


def fold_table(folded: DataFrame, table: str) -> DataFrame:
    """One table out of the folded frame, with the published types (times as timestamps): the
    history from its columns, any other table from its JSON rows (read strictly: a row that
    does not fit the schema fails the job rather than becoming nulls)."""
    rows = folded.filter(f"`table` = '{table}'")
    if table == FOLD_STATE:
        return rows.selectExpr("fid", "`row` AS blob")
    if table != HISTORY:
        rows = rows.selectExpr(
            f"from_json(`row`, '{row_ddl(table)}', map('mode', 'FAILFAST')) AS r"
        ).selectExpr("r.*")
    return rows.selectExpr(
        *[
            f"timestamp_micros(`{n}`) AS `{n}`" if kind == "timestamp" else f"`{n}`"
            for n, kind in TABLES[table]
        ]
    )


# --------------------------------------------------------------------------------------------
# org-wide tables
# --------------------------------------------------------------------------------------------
# --------------------------------------------------------------------------------------------
# the whole job
# --------------------------------------------------------------------------------------------
FIRST_FOLD_TABLE = "state_history"
ROWS_PER_FOLD_PARTITION = 250_000  # bounds each task's sort buffer and Python memory
#: a fold task with fewer events than this costs more than its share of the work (the worked
#: example's 128 events: 9.5 s in one partition, 10.3-10.4 s in four)
MIN_ROWS_PER_FOLD_PARTITION = 20_000


def fold_partitions_for(cores: int, accepted: int) -> int:
    """Partitions for the fold: two per core, more when the log is large, fewer when it is
    small; beyond one wave, a whole number of them (5 tasks on 2 cores leave one core idle for
    the last one's whole length)."""
    cores = max(1, cores)
    wanted = max(
        1,
        min(cores * 2, -(-accepted // MIN_ROWS_PER_FOLD_PARTITION)),
        -(-accepted // ROWS_PER_FOLD_PARTITION),
    )
    return wanted if wanted <= cores else -(-wanted // cores) * cores


def compute(
    spark: SparkSession,
    topo: Topology,
    paths: Sequence[str],
    *,
    as_of: int | None = None,
    run_id: str = "run",
    partitions: int | None = None,
    on_rejects: Callable[[DataFrame], None] | None = None,
    clock: int | None = None,
    full_reason: str = "asked for a full run",
) -> JobResult:
    """``on_rejects``: handed the rejects table as soon as the reading is done (it reads only
    the cached lines), so its write can start while the fold's plans are built."""
    started = time.time()
    read = read_events(spark, paths, topo)
    rejects = conform(read.rejects.select(*[n for n, _ in TABLES["rejects"]]), "rejects")
    if on_rejects is not None:
        on_rejects(rejects)
    if as_of is None:
        as_of = default_as_of(read.last_ts, now_us() if clock is None else clock)
    status = [(store, ts, seq, down) for ts, seq, store, down in read.status if ts <= as_of]
    applied = read.events.filter(f"ts <= {int(as_of)}")
    # cached: the transits, then the table's two pieces (final, live), each read the one join
    messages = messages_table(applied).cache()
    read.cached.append(messages)
    transits, medians = collected_transits(spark, messages)
    payload = org_payload(topo.to_json(), status, medians)
    n = partitions or fold_partitions_for(spark.sparkContext.defaultParallelism, read.accepted)
    # cached, not checkpointed: the first table written runs the fold and fills the cache
    folded = fold_groups(
        group_stream(applied, topology_groups(spark, topo), as_of), payload, as_of, n
    ).cache()
    read.cached.append(folded)

    # the rejects first (from the cached lines), then a fold table that is not coalesced into
    # one task, so that the fold runs in parallel and fills the cache the other tables read
    t: dict[str, DataFrame] = {"rejects": rejects}
    t[FIRST_FOLD_TABLE] = fold_table(folded, FIRST_FOLD_TABLE)
    t |= {name: fold_table(folded, name) for name in OUT_TABLES if name != FIRST_FOLD_TABLE}
    t["stores"] = stores_table(spark, topo, applied)
    t["store_periods"] = store_periods_table(spark, topo, status)
    t["replica_lists"] = replica_lists_table(spark, topo, applied)
    t["folders"] = folders_table(spark, topo, applied)
    t["replicas"] = with_risk(with_paths(t["replicas"], t["folders"]), t["stores"])
    t["messages"] = messages
    t["transits"] = transits
    refresh = Refresh("full", full_reason, read.lines_read)
    t["summary"] = summary_frame(
        spark, run_id, as_of, read.lines_read, read.accepted, read.duplicates, started, refresh
    )
    tables = {name: conform(df, name) for name, df in t.items()}
    state = {
        STATE_LINES: in_input_order(read.judged, read.lines_read),
        STATE_EVENTS: in_input_order(read.events, read.accepted),
        STATE_PENDING: read.events.filter(f"ts > {int(as_of)}"),
        STATE_FOLDS: fold_table(folded, FOLD_STATE),
    }
    counts = {
        "lines_read": read.lines_read,
        "accepted": read.accepted,
        "duplicates": read.duplicates,
        "last_ts": read.last_ts,
        "status": read.status,
    }
    return JobResult(
        tables, as_of, read, pieces_of(tables, state), refresh, counts=counts, file_lines=read.file_lines
    )


def summary_frame(
    spark: SparkSession,
    run_id: str,
    as_of: int,
    lines_read: int,
    accepted: int,
    duplicates: int,
    started: float,
    refresh: Refresh,
) -> DataFrame:
    """The run's one summary row."""
    return local_frame(
        spark,
        [
            (
                run_id,
                as_of,
                lines_read,
                accepted,
                duplicates,
                lines_read - accepted - duplicates,
                int(started * US),
                int(time.time() * US),
                refresh.mode,
                refresh.reason,
                refresh.lines_new,
                refresh.folders_refolded,
                refresh.folders_carried,
                refresh.lines_rejudged if refresh.mode == "incremental" else None,
                refresh.folders_from_start if refresh.mode == "incremental" else None,
            )
        ],
        {"run_id": "string"}
        | dict.fromkeys(
            ("as_of", "lines_read", "accepted", "duplicates", "rejected", "started_at", "finished_at"), "long"
        )
        | {
            "refresh": "string",
            "refresh_reason": "string",
            "lines_new": "long",
            "folders_refolded": "long",
            "folders_carried": "long",
            "lines_rejudged": "long",
            "folders_from_start": "long",
        },
    ).selectExpr(
        "run_id",
        "timestamp_micros(as_of) AS as_of",
        "lines_read",
        "accepted",
        "duplicates",
        "rejected",
        "timestamp_micros(started_at) AS started_at",
        "timestamp_micros(finished_at) AS finished_at",
        "refresh",
        "refresh_reason",
        "lines_new",
        "folders_refolded",
        "folders_carried",
        "lines_rejudged",
        "folders_from_start",
    )


#: the declared column kinds as Spark types (what ``Column.cast(kind)`` gives)
_SPARK_TYPES = {
    "string": T.StringType(),
    "long": T.LongType(),
    "boolean": T.BooleanType(),
    "double": T.DoubleType(),
    "timestamp": T.TimestampType(),
    "array<string>": T.ArrayType(T.StringType(), containsNull=True),
}


def conform(df: DataFrame, table: str) -> DataFrame:
    """The table in its declared column order and types (a cast where Spark inferred another).
    A frame already in that shape is returned as it is: one schema lookup instead of a
    projection of casts built column by column over Py4J (the planning is the fixed cost)."""
    declared = TABLES[table]
    have = [(f.name, f.dataType) for f in df.schema.fields]
    if have == [(n, _SPARK_TYPES[k]) for n, k in declared]:
        return df
    return df.selectExpr(*[f"CAST(`{n}` AS {k}) AS `{n}`" for n, k in declared])
