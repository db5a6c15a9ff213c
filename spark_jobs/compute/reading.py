"""Reading the event log in Spark, with exactly the reference validation.

- Files are read by Spark's text source; each line's number is exact per file, from the
  hidden ``_metadata`` columns (splits are packed into partitions by size, not by offset, so
  lines are numbered per file block, blocks ordered by their start).
- Stage 1 (one line on its own, ``stage1``) runs ``spark_jobs.model.events.parse_line`` in
  Python workers. Its output is cached (without the lines' text or sources: a line's file
  and number are in its ``seq``): the log is parsed once.
- The plans are built from SQL expression text (``selectExpr``, filter strings): each Column
  object built in Python is a dozen round trips to the JVM, the job's fixed cost on a small log.
- Stage 2 (rules between lines: duplicates by meaning, message ids, receives against their
  sends, change numbers increasing) is Spark SQL: windows over a few narrow columns of the
  whole log (never the line text or message bodies), after one shuffle by shard (each rule
  looks within a message, a store's changes to a folder or a meaning), cached, with one job
  for the counts (and the last accepted time and the up/down timeline the fold needs). The
  verdicts are joined back to the lines by ``seq`` only when some line was dropped: broadcast,
  since the counts say how many (usually few). A stage-2 reject takes its text from the lines, read again, and only
  when there is one.
- The accepted events are cached, not materialised here: the first query over them (the fold)
  fills the cache, so they cost no job of their own.

The result equals ``read_event_log`` line for line; the Spark tests check it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from pfscope.spark_jobs.compute.stage1 import parse_stage1
from pfscope.spark_jobs.model.events import (
    R_BEFORE_SEND,
    R_CN_NOT_INCREASING,
    R_MSG_REUSED,
    R_NEVER_SENT,
    R_NOT_ADDRESSEE,
    R_RECEIVED_TWICE,
    expand_paths,
)
from pfscope.spark_jobs.model.topology import Topology

EVENT_COLUMNS = (
    "seq",
    "ts",
    "store",
    "kind",
    "fid",
    "cn",
    "op",
    "item",
    "bytes",
    "msg",
    "type",
    "to",
    "cnset",
    "changes",
    "requested",
    "source",
    "responders",
    "replicas",
    "path",
    "status",
    "sender",
    "sent_at",
    "msg_seq",
    "derived",
)


@dataclass
class ReadResult:
    events: DataFrame  # accepted lines; a receive carries its message's columns
    rejects: DataFrame  # source, line, reason, text, conflict_source, conflict_line
    lines_read: int
    duplicates: int
    accepted: int
    last_ts: int | None  # the last accepted event's time
    status: list[tuple[int, int, str, bool]]  # accepted store_status lines: (ts, seq, store, down)
    cached: list[DataFrame]
    judged: DataFrame  # every line past stage 1 with its verdict (``judge``)
    files: list[str] = field(default_factory=list)  # the files read, in input order
    file_lines: dict[int, int] = field(default_factory=dict)  # lines read per file index

    def release_lines(self) -> None:
        """Drop the parsed lines and the verdicts (once the events are cached)."""
        for df in self.cached[:2]:
            df.unpersist()

    def release(self) -> None:
        """Drop everything cached (once every table is written)."""
        for df in self.cached:
            df.unpersist()


def list_files(paths: Sequence[str]) -> list[str]:
    """Local files, folders and globs as the replay lists them; URIs are passed on as given."""
    local = [p for p in paths if "://" not in p]
    remote = sorted(p for p in paths if "://" in p)
    return sorted(expand_paths(local)) + remote if local else remote


# --------------------------------------------------------------------------------------------
# lines with their numbers
# --------------------------------------------------------------------------------------------
def counted_lines(spark: SparkSession, files: list[str]) -> tuple[DataFrame, dict[int, int], dict[int, str]]:
    """seq (input order: the file's index, then the line number), text (null when not UTF-8);
    how many lines each file index has (known from the file blocks' counts); each file index's source as
    the reference reader names it (a URI that matches no listed file: as Spark gives it)."""
    raw = (
        spark.read.option("lineSep", "\n")
        .text(files)
        .select(
            "value",
            F.col("_metadata.file_path").alias("file_path"),
            F.col("_metadata.file_block_start").alias("block"),
            F.monotonically_increasing_id().alias("mid"),
        )
    )
    blocks = raw.groupBy("file_path", "block").agg(F.count("*").alias("n"), F.min("mid").alias("first_mid"))
    by_file: dict[str, list[tuple[int, int, int]]] = {}
    for r in blocks.collect():  # one row per file block: small
        by_file.setdefault(r.file_path, []).append((r.block, r.n, r.first_mid))
    names = _match_names(files, list(by_file))
    shift: dict[str, int] = {}  # line number - mid, per (file, block)
    for path, blist in by_file.items():
        before = 0
        for block, n, first_mid in sorted(blist):
            shift[f"{block}:{path}"] = before - first_mid + 1
            before += n
    # literal maps, not a join: a broadcast join would cost a job of its own
    by_block = F.create_map(*[c for k, v in shift.items() for c in (F.lit(k), F.lit(v).cast("long"))])
    by_name = F.create_map(*[c for k, v in names.items() for c in (F.lit(k), F.lit(v).cast("long"))])
    line_no = F.col("mid") + by_block[F.concat_ws(":", F.col("block").cast("string"), "file_path")]
    # ``\z``, not ``$``: Java's ``$`` also matches before a final line terminator (U+2028, ...)
    value = F.col("value")
    text = F.when(value.endswith("\r"), F.regexp_replace(value, "\r+\\z", "")).otherwise(value)
    lines = raw.select(
        (by_name[F.col("file_path")] * F.lit(1 << 32) + line_no).alias("seq"),
        F.when(F.expr("is_valid_utf8(value)"), text).alias("text"),
    )
    sources = {i: files[i] if i < len(files) else uri for uri, i in names.items()}
    per_file = {names[path]: sum(n for _, n, _ in blist) for path, blist in by_file.items()}
    return lines, per_file, sources


def source_and_line(seq: Column, sources: dict[int, str], prefix: str = "") -> list[Column]:
    """A line's ``source`` and ``line`` from its ``seq`` (``make_seq``: file index, line), named
    with ``prefix`` (null when ``seq`` is)."""
    by_index = F.create_map(*[c for i, name in sources.items() for c in (F.lit(i).cast("long"), F.lit(name))])
    return [
        by_index[F.shiftright(seq, 32)].alias(f"{prefix}source"),
        seq.bitwiseAND(F.lit(0xFFFFFFFF)).alias(f"{prefix}line"),
    ]


def _match_names(files: list[str], uris: list[str]) -> dict[str, int]:
    """Spark reports file URIs (file:/...); map each to its index in the sorted file list."""
    listed = list(enumerate(files))[::-1]  # a file listed twice: its first place
    given = {f: i for i, f in listed}
    resolved = {str(Path(f).resolve()): i for i, f in listed}  # each resolved once, not per URI
    every = sorted(uris)  # a URI no listed file names: after them, by its place among all
    index: dict[str, int] = {}
    for uri in uris:
        plain = unquote(uri)
        if plain.startswith("file:"):
            plain = "/" + plain[5:].lstrip("/")
        found = min((i for i in (given.get(uri), resolved.get(plain)) if i is not None), default=None)
        index[uri] = found if found is not None else len(files) + every.index(uri)
    return index


# --------------------------------------------------------------------------------------------
# stage 2: rules between lines
# --------------------------------------------------------------------------------------------
#: what the rules between lines look at: the verdicts are computed on these alone, so the
#: windows shuffle a few short columns, never the line text or the message bodies
NARROW = ("seq", "key", "kind", "store", "ts", "msg", "cn", "to", "status")
#: a side of a join below this many rows is broadcast (its size is known from the counts)
BROADCAST_ROWS = 2_000_000
#: every rule between lines looks within one shard: a message's sends and receives (by id), one
#: store's changes to one folder, or one meaning (every other line). A line's meaning (``key``)
#: names its shard, so its repeats are in it too. The length prefix keeps (store, fid) apart.
SHARD = (
    "CASE WHEN kind IN ('send', 'receive') THEN concat('m', msg)"
    " WHEN kind = 'change' THEN concat('c', length(store), ':', store, fid)"
    " ELSE concat('k', key) END"
)


def sql_text(value: str) -> str:
    """A SQL string literal (a reject reason: fixed phrases, one with an apostrophe)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _small(df: DataFrame, rows: int) -> DataFrame:
    """Broadcast a join side when the counts say it is small (usually: no rejects, no repeats)."""
    return F.broadcast(df) if rows <= BROADCAST_ROWS else df


def judge(ok: DataFrame, partitions: int | None = None) -> DataFrame:
    """seq, first_seq (the first line of its meaning), ts, kind, store, status, ``why``: the
    rules between lines' verdict on the line's meaning (null: accepted, or a duplicate when
    ``seq != first_seq``), and ``conflict``: the seq of the accepted line a reject conflicts with,
    as ``EventLog.build`` decides and names them.

    One shuffle, by the shard's hash, and two sorts within the partitions: every window
    partitions by (hash, shard) first, and all but one are ordered alike (a window over a whole
    partition that is ordered anyway costs no sort of its own). ``partitions``: of that shuffle
    (default: the session's shuffle partitions)."""
    whole = "ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING"
    first = "seq = first_seq"
    # a store's change numbers to a folder only increase, in event order (the other rules never
    # reject a change). Repeats may count in the running maximum: a repeat comes after its first
    # occurrence (same time, later line), which already counted the same number. Of the lines
    # holding the maximum, the first in event order is the accepted change a reject names (the
    # others come after it: its repeats, or changes not above it).
    cn_top = (
        "max(CASE WHEN kind = 'change' THEN named_struct('cn', cn, 'ts', -ts, 'seq', -seq) END)"
        " OVER (PARTITION BY h, shard ORDER BY ts, seq ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)"
    )
    cn_down = "kind = 'change' AND cn <= cn_top.cn"
    # a first occurrence against its message: the first send of its id, in input order
    why = (
        f"CASE WHEN NOT {first} THEN NULL"
        f" WHEN cn_down THEN {sql_text(R_CN_NOT_INCREASING)}"
        f" WHEN kind = 'send' AND key != m.key THEN {sql_text(R_MSG_REUSED)}"
        f" WHEN kind = 'receive' AND m IS NULL THEN {sql_text(R_NEVER_SENT)}"
        f" WHEN kind = 'receive' AND NOT array_contains(m.rcpt, store) THEN {sql_text(R_NOT_ADDRESSEE)}"
        f" WHEN kind = 'receive' AND ts < m.ts THEN {sql_text(R_BEFORE_SEND)} END"
    )
    # the line a reject names: the change it is not above, else its message's first send
    conflict = (
        f"CASE WHEN why IS NULL OR why = {sql_text(R_NEVER_SENT)} THEN NULL"
        " WHEN kind = 'change' THEN -cn_top.seq ELSE m.seq END"
    )
    # a store receives a message once: its first receive (in input order) of those that pass
    counted = f"kind = 'receive' AND {first} AND why IS NULL"
    # (named: that first receive)
    twice = f"why IS NULL AND {counted} AND seq != first_receive"
    hashed = ok.selectExpr(*NARROW, "fid", f"{SHARD} AS shard").selectExpr("*", "xxhash64(shard) AS h")
    return (
        (hashed.repartition(partitions, "h") if partitions else hashed.repartition("h"))
        .selectExpr("*", f"{cn_top} AS cn_top")
        .selectExpr("*", f"coalesce({cn_down}, false) AS cn_down")
        .selectExpr(
            "*",
            "min(seq) OVER (PARTITION BY h, shard, store, key) AS first_seq",
            "min(CASE WHEN kind = 'send' THEN named_struct('seq', seq, 'key', key, 'ts', ts, 'rcpt', `to`) END)"
            f" OVER (PARTITION BY h, shard ORDER BY store, key {whole}) AS m",
        )
        .selectExpr("*", f"{why} AS why")
        .selectExpr(
            "*",
            f"{conflict} AS conflict",
            f"min(CASE WHEN {counted} THEN seq END)"
            f" OVER (PARTITION BY h, shard, store ORDER BY key {whole}) AS first_receive",
        )
        .selectExpr(
            "*",
            f"CASE WHEN {twice} THEN {sql_text(R_RECEIVED_TWICE)} ELSE why END AS why2",
            f"CASE WHEN {twice} THEN first_receive ELSE conflict END AS conflict2",
        )
        # the repeats of a meaning share its first occurrence's verdict (only it has one)
        .selectExpr(
            *NARROW,
            "fid",
            "shard",
            "first_seq",
            "max(why2) OVER (PARTITION BY h, shard, store, key) AS why",
            "max(conflict2) OVER (PARTITION BY h, shard, store, key) AS conflict",
        )
    )


def read_events(spark: SparkSession, paths: Sequence[str], topo: Topology) -> ReadResult:
    """Parse every line once (cached), judge the rules between lines on narrow columns, and
    count lines read, duplicates and rejects, the last accepted time and the up/down timeline
    in one job; the accepted events and the rejects are then plans over the cached lines."""
    files = list_files(paths)
    if not files:
        raise FileNotFoundError(f"{', '.join(paths)}: no event log files")
    lines, per_file, sources = counted_lines(spark, files)
    lines_read = sum(per_file.values())
    parsed = parse_stage1(lines, topo).cache()
    ok = parsed.filter("reason IS NULL")

    judged = judge(ok).cache()
    counts = tally(judged)
    duplicates, stage2 = counts["duplicates"], counts["rejected"]
    n_rejects = lines_read - counts["ok"] + stage2

    # rejects: stage 1's as parsed (with their text); stage 2's take their text from the lines
    # (read again), by seq (no join when there are none)
    seq = F.col("seq")
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
        rejected = judged.filter("why IS NOT NULL").selectExpr("seq", "why", "conflict")
        rejects = rejects.unionByName(
            lines.join(_small(rejected, stage2), "seq").select(
                *source_and_line(seq, sources),
                F.col("why").alias("reason"),
                "text",
                *source_and_line(F.col("conflict"), sources, "conflict_"),
            )
        )

    # accepted: first occurrences not rejected; a receive takes its message's columns
    accepted = ok
    if duplicates + stage2:
        dropped = judged.filter("why IS NOT NULL OR seq != first_seq").selectExpr("seq")
        accepted = ok.join(_small(dropped, duplicates + stage2), "seq", "left_anti")
    # cached, not materialised here: the first query over them (the fold) fills the cache, so
    # no job of its own; ``release`` drops the parsed lines once the tables are written
    events = events_of(accepted).cache()
    accepted_n = lines_read - duplicates - n_rejects
    return ReadResult(
        events,
        rejects,
        lines_read,
        duplicates,
        accepted_n,
        counts["last_ts"],
        counts["status"],
        [parsed, judged, events],
        judged,
        files,
        per_file,
    )


MESSAGE_COLUMNS = {
    "fid": "fid",
    "type": "type",
    "to": "to",
    "cnset": "cnset",
    "changes": "changes",
    "requested": "requested",
    "src": "source",
    "responders": "responders",
    "derived": "derived",
}
_OWN_COLUMNS = (
    "seq",
    "ts",
    "store",
    "kind",
    "cn",
    "op",
    "item",
    "bytes",
    "msg",
    "replicas",
    "path",
    "status",
)


def events_of(accepted: DataFrame, sends: DataFrame | None = None) -> DataFrame:
    """Accepted parsed lines as events (``EVENT_COLUMNS``): a receive takes its message's
    columns from its send, among ``accepted`` or, for a refresh, ``sends`` (events of sends read
    before)."""
    messages = accepted.filter("kind = 'send'").selectExpr(
        "msg",
        "store AS sender",
        "ts AS sent_at",
        "seq AS msg_seq",
        *[f"`{c}` AS `m_{c}`" for c in MESSAGE_COLUMNS],
    )
    if sends is not None:
        messages = messages.unionByName(
            sends.selectExpr(
                "msg",
                "store AS sender",
                "ts AS sent_at",
                "seq AS msg_seq",
                *[f"`{out}` AS `m_{c}`" for c, out in MESSAGE_COLUMNS.items()],
            )
        )
    receives = (
        accepted.filter("kind = 'receive'")
        .join(messages, "msg")
        .selectExpr(
            *_OWN_COLUMNS,
            "sender",
            "sent_at",
            "msg_seq",
            *[f"`m_{c}` AS `{out}`" for c, out in MESSAGE_COLUMNS.items()],
        )
    )
    others = accepted.filter("kind != 'receive'").selectExpr(
        *_OWN_COLUMNS,
        "CAST(NULL AS STRING) AS sender",
        "CAST(NULL AS BIGINT) AS sent_at",
        "CAST(NULL AS BIGINT) AS msg_seq",
        *[f"`{c}` AS `{out}`" for c, out in MESSAGE_COLUMNS.items()],
    )
    return others.unionByName(receives).selectExpr(*[f"`{c}`" for c in EVENT_COLUMNS])


def tally(judged: DataFrame) -> dict[str, Any]:
    """Everything the driver needs from the verdicts, in one job (and no broadcast): lines past
    stage 1, duplicates, stage-2 rejects, the last accepted event's time and the accepted
    up/down lines (few: one per outage edge). The lines read are known from the file blocks:
    a second branch over the parsed lines would parse them twice (both branches' tasks run at
    once and each fills the cache)."""
    accepted = "why IS NULL AND seq = first_seq"
    row = judged.selectExpr(
        "count(1) AS ok",
        "count_if(why IS NULL AND seq != first_seq) AS duplicates",
        "count_if(why IS NOT NULL) AS rejected",
        f"max(CASE WHEN {accepted} THEN ts END) AS last_ts",
        f"collect_list(CASE WHEN {accepted} AND kind = 'store_status' THEN struct(ts, seq, store, status) END)"
        " AS status",
    ).first()
    assert row is not None
    status = sorted((s.ts, s.seq, s.store, s.status == "down") for s in row["status"])
    return {
        "ok": int(row["ok"]),
        "duplicates": int(row["duplicates"]),
        "rejected": int(row["rejected"]),
        "last_ts": row["last_ts"],
        "status": status,
    }
