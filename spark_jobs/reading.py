"""Reading the event log in Spark, with exactly the reference validation.

- Files are read by Spark's text source; each line's number is exact per file, from the
  hidden ``_metadata`` columns (splits are packed into partitions by size, not by offset, so
  lines are numbered per file block, blocks ordered by their start).
- Stage 1 (one line on its own) runs ``spark_jobs.model.events.parse_line`` in Python workers,
  which get (seq, text) and send back the text of rejects only: the reject rules exist once.
  With ``PFSCOPE_FAST_PARSE=1``, in the same pass, the lines ``spark_jobs.fastparse`` proves
  certain (the writers' canonical receive and change lines: most of a log) are parsed in the
  JVM and the Python UDF is handed only the others' text (off by default: measured slower in a
  fresh job here). Its output is cached (without the lines' text or sources: a line's file and
  number are in its ``seq``): the log is parsed once.
- Stage 2 (rules between lines: duplicates by meaning, message ids, receives against their
  sends, change numbers increasing) is Spark SQL: windows and joins over a few narrow columns
  of the whole log (never the line text or message bodies), cached, with one job for the counts
  (and the last accepted time and the up/down timeline the fold needs). The verdicts are joined
  back to the lines by ``seq`` only when some line was dropped: broadcast, since the counts say
  how many (usually few). A stage-2 reject takes its text from the lines, read again, and only
  when there is one.
- The accepted events are cached, not materialised here: the first query over them (the fold)
  fills the cache, so they cost no job of their own.

The result equals ``read_event_log`` line for line; the Spark tests check it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from . import fastparse
from .model.events import (
    R_BEFORE_SEND,
    R_CN_NOT_INCREASING,
    R_MSG_REUSED,
    R_NEVER_SENT,
    R_NOT_ADDRESSEE,
    R_NOT_UTF8,
    R_RECEIVED_TWICE,
    Reject,
    expand_paths,
    parse_line,
)
from .model.topology import Topology, topology_from_json
from .stream import arrow_schema

#: stage 1's output: a line's verdict and fields by ``seq`` (its file and line number are in
#: ``seq``); ``text`` only on a rejected line (the rejects table needs it, nothing else does)
PARSED_DDL = (
    "seq long, reason string, text string, key string, "
    "ts long, store string, kind string, fid string, cn long, op string, item string, bytes long, "
    "msg string, type string, `to` array<string>, cnset string, changes string, requested string, "
    "src string, responders array<string>, replicas array<string>, path string, status string, "
    "derived array<string>"
)
EVENT_COLUMNS = (
    "seq", "ts", "store", "kind", "fid", "cn", "op", "item", "bytes", "msg", "type", "to", "cnset",
    "changes", "requested", "source", "responders", "replicas", "path", "status", "sender", "sent_at", "msg_seq",
    "derived",
)


@dataclass
class ReadResult:
    events: DataFrame  # accepted lines; a receive carries its message's columns
    rejects: DataFrame  # source, line, reason, text
    lines_read: int
    duplicates: int
    accepted: int
    last_ts: int | None  # the last accepted event's time
    status: list[tuple[int, int, str, bool]]  # accepted store_status lines: (ts, seq, store, down)
    cached: list[DataFrame]

    def release_lines(self) -> None:
        """Drop the parsed lines and the verdicts (once the events are cached)."""
        for df in self.cached[:3]:
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
def counted_lines(spark: SparkSession, files: list[str]) -> tuple[DataFrame, int, dict[int, str]]:
    """seq (input order: the file's index, then the line number), text (null when not UTF-8);
    how many lines there are (known from the file blocks' counts); each file index's source as
    the reference reader names it (a URI that matches no listed file: as Spark gives it)."""
    raw = (
        spark.read.option("lineSep", "\n").text(files)
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
    return lines, sum(n for blist in by_file.values() for _, n, _ in blist), sources


def source_and_line(seq: Column, sources: dict[int, str]) -> list[Column]:
    """A line's ``source`` and ``line`` from its ``seq`` (``make_seq``: file index, line)."""
    by_index = F.create_map(*[c for i, name in sources.items() for c in (F.lit(i).cast("long"), F.lit(name))])
    return [by_index[F.shiftright(seq, 32)].alias("source"), seq.bitwiseAND(F.lit(0xFFFFFFFF)).alias("line")]


def _match_names(files: list[str], uris: list[str]) -> dict[str, int]:
    """Spark reports file URIs (file:/...); map each to its index in the sorted file list."""
    index: dict[str, int] = {}
    for uri in uris:
        plain = unquote(uri)
        if plain.startswith("file:"):
            plain = "/" + plain[5:].lstrip("/")
        for i, f in enumerate(files):
            if f == uri or str(Path(f).resolve()) == plain:
                index[uri] = i
                break
        else:
            index[uri] = len(files) + sorted(uris).index(uri)
    return index


# --------------------------------------------------------------------------------------------
# stage 1: every line alone, on the executors
# --------------------------------------------------------------------------------------------
PARSED_COLUMNS = {c.split(" ")[0].strip("`"): c.split(" ", 1)[1] for c in PARSED_DDL.split(", ")}
_NO_EVENT = (None,) * (len(PARSED_COLUMNS) - 3)  # key ... derived: a rejected line has none
PYTHON_COLUMNS = tuple(PARSED_COLUMNS)[1:]
PYTHON_DDL = ", ".join(f"`{c}` {PARSED_COLUMNS[c]}" for c in PYTHON_COLUMNS)


def _parse_partitions(topology_json: str):  # type: ignore[no-untyped-def]
    """The ``mapInArrow`` function: (seq, text) in, one parsed row per line out (an event's
    columns, or a reject reason and the text). Plain lists in and out: no pandas frame per batch."""
    schema = arrow_schema(PARSED_COLUMNS)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        topo = topology_from_json(json.loads(topology_json))
        for batch in batches:
            seqs, texts = batch.column(0).to_pylist(), batch.column(1).to_pylist()
            rows = [parsed_row(topo, seq, text) for seq, text in zip(seqs, texts, strict=True)]
            if rows:
                cols = list(zip(*rows, strict=True))
                yield pa.RecordBatch.from_arrays([pa.array(c, type=f.type) for c, f in zip(cols, schema, strict=True)],
                                                 schema=schema)

    return run


def parsed_row(topo: Topology, seq: int, text: str | None) -> tuple[Any, ...]:
    """One line as a row of ``PARSED_DDL``: ``parse_line`` decides (the rules exist once)."""
    if text is None:
        return (seq, R_NOT_UTF8, "", *_NO_EVENT)
    try:
        ev = parse_line(text, topo, seq)
    except Reject as e:
        return (seq, e.reason, text, *_NO_EVENT)
    m = ev.message
    if m is None:
        return (seq, None, None, repr(ev.key), ev.ts, ev.store, ev.kind, ev.fid, ev.cn, ev.op, ev.item,
                ev.bytes, ev.msg_id, None, None, None, None, None, None, None,
                list(ev.replicas) if ev.replicas is not None else None, ev.path, ev.status, list(ev.derived))
    return (seq, None, None, repr(ev.key), ev.ts, ev.store, ev.kind, ev.fid, ev.cn, ev.op, ev.item,
            ev.bytes, m.msg, m.type, list(m.to), m.cnset.text(),
            m.changes.text() if m.changes is not None else None,
            m.requested.text() if m.requested is not None else None, m.source,
            list(m.responders) if m.responders is not None else None, None, None, None, list(m.derived))


def _parse_arrow(topology_json: str) -> Callable[[pa.Array, pa.Array], pa.Array]:
    """The Arrow UDF: ``parsed_row`` (less ``seq``) for the lines given a seq, all-null fields
    for the others (the lines the fast path took: nulls cross to Python and back at no cost)."""
    struct = pa.struct(list(arrow_schema({c: PARSED_COLUMNS[c] for c in PYTHON_COLUMNS})))
    skipped = (None,) * len(PYTHON_COLUMNS)
    cache: list[Topology] = []

    def run(seqs: pa.Array, texts: pa.Array) -> pa.Array:
        if not cache:
            cache.append(topology_from_json(json.loads(topology_json)))
        topo = cache[0]
        # Python work only for the lines given a seq: their rows, one all-null row after them,
        # and a ``take`` that puts each line's row in its place
        at = pc.indices_nonzero(seqs.is_valid())
        rows = [parsed_row(topo, seq, text)[1:]
                for seq, text in zip(seqs.take(at).to_pylist(), texts.take(at).to_pylist(), strict=True)]
        rows.append(skipped)
        cols = list(zip(*rows, strict=True))
        which = pa.array(np.full(len(seqs), len(rows) - 1, dtype=np.int64))
        which = pc.replace_with_mask(which, seqs.is_valid(), pa.array(np.arange(len(rows) - 1, dtype=np.int64)))
        packed = pa.StructArray.from_arrays([pa.array(c, type=f.type) for c, f in zip(cols, struct, strict=True)],
                                            fields=list(struct))
        return packed.take(which)

    return run


def parse_stage1(lines: DataFrame, topo: Topology, *, fast: bool = True) -> DataFrame:
    """``lines`` (seq, text) as ``PARSED_DDL`` rows: the lines ``fastparse`` proves certain in
    the JVM, every other one by ``parse_line`` in Python workers (with ``fast=False``: all).
    One pass over the lines: the pattern is matched once, and the Python UDF is handed only the
    other lines' text (nulls for the rest)."""
    topology_json = json.dumps(topo.to_json())
    if not fast:
        return lines.select("seq", "text").mapInArrow(_parse_partitions(topology_json), schema=PARSED_DDL)
    ok = F.col("ok")
    marked = lines.select("seq", "text", fastparse.fast_condition(F.col("text"), topo).alias("ok"))
    python = F.arrow_udf(_parse_arrow(topology_json), PYTHON_DDL)
    both = marked.select("seq", "ok", F.when(ok, fastparse.read_json(F.col("text"))).alias("j"),
                         python(F.when(~ok, F.col("seq")), F.when(~ok, F.col("text"))).alias("py"))
    both = fastparse.fast_rows(both)
    return both.select("seq", *[
        (F.when(ok, F.col(f"f_{c}")).otherwise(F.col("py")[c]) if c in fastparse.FILLED else F.col("py")[c])
        .cast(PARSED_COLUMNS[c]).alias(c) for c in PYTHON_COLUMNS
    ])


# --------------------------------------------------------------------------------------------
# stage 2: rules between lines
# --------------------------------------------------------------------------------------------
#: what the rules between lines look at: the verdicts are computed on these alone, so the
#: windows and joins shuffle a few short columns, never the line text or the message bodies
NARROW = ("seq", "key", "kind", "store", "ts", "msg", "fid", "cn", "to", "status")
#: a side of a join below this many rows is broadcast (its size is known from the counts)
BROADCAST_ROWS = 2_000_000


def _first(df: DataFrame, by: Sequence[str], order: Sequence[str] = ("seq",)) -> DataFrame:
    w = Window.partitionBy(*by).orderBy(*order)
    return df.withColumn("_n", F.row_number().over(w))


def _small(df: DataFrame, rows: int) -> DataFrame:
    """Broadcast a join side when the counts say it is small (usually: no rejects, no repeats)."""
    return F.broadcast(df) if rows <= BROADCAST_ROWS else df


def occurrences(ok: DataFrame) -> DataFrame:
    """Each line that passed stage 1 (its narrow columns) with ``first_seq``: the first line of
    its meaning, which decides for all its repeats."""
    return ok.select(*NARROW).withColumn("first_seq", F.min("seq").over(Window.partitionBy("key")))


def verdicts(seen: DataFrame) -> DataFrame:
    """seq, why: the first occurrences (of ``occurrences``) that the rules between lines reject."""
    firsts = seen.filter(F.col("seq") == F.col("first_seq")).drop("first_seq")

    # messages: the first send of each id
    messages = _first(firsts.filter(F.col("kind") == "send"), ["msg"]).filter("_n = 1").select(
        "msg", F.col("key").alias("m_key"), F.col("ts").alias("sent_at"), F.col("to").alias("m_to"),
    )
    mail = firsts.filter(F.col("kind").isin("send", "receive")).join(messages, "msg", "left")
    receive = F.col("kind") == "receive"
    why = (
        F.when(~receive & (F.col("key") != F.col("m_key")), F.lit(R_MSG_REUSED))
        .when(receive & F.col("m_key").isNull(), F.lit(R_NEVER_SENT))
        .when(receive & ~F.array_contains("m_to", F.col("store")), F.lit(R_NOT_ADDRESSEE))
        .when(receive & (F.col("ts") < F.col("sent_at")), F.lit(R_BEFORE_SEND))
    )
    mail = mail.select("seq", "kind", "store", "msg", why.alias("why"))
    twice = _first(mail.filter(receive & F.col("why").isNull()), ["store", "msg"]).filter("_n > 1").select(
        "seq", F.lit(R_RECEIVED_TWICE).alias("why")
    )
    # change numbers only increase, in event order (the rules above never reject a change)
    w = Window.partitionBy("store", "fid").orderBy("ts", "seq").rowsBetween(Window.unboundedPreceding, -1)
    not_increasing = (
        firsts.filter(F.col("kind") == "change")
        .withColumn("prev_max", F.max("cn").over(w))
        .filter(F.col("prev_max").isNotNull() & (F.col("cn") <= F.col("prev_max")))
        .select("seq", F.lit(R_CN_NOT_INCREASING).alias("why"))
    )
    return mail.filter(F.col("why").isNotNull()).select("seq", "why").unionByName(twice).unionByName(not_increasing)


def read_events(spark: SparkSession, paths: Sequence[str], topo: Topology) -> ReadResult:
    """Parse every line once (cached), judge the rules between lines on narrow columns, and
    count lines read, duplicates and rejects, the last accepted time and the up/down timeline
    in one job; the accepted events and the rejects are then plans over the cached lines."""
    files = list_files(paths)
    if not files:
        raise FileNotFoundError(f"{', '.join(paths)}: no event log files")
    lines, lines_read, sources = counted_lines(spark, files)
    # the fast path only with PFSCOPE_FAST_PARSE=1: in a fresh job on 2 cores it measured slower
    # than parse_line for every line (the JIT's first pass over the pattern and the JSON read)
    parsed = parse_stage1(lines, topo, fast=os.environ.get("PFSCOPE_FAST_PARSE", "0") == "1").cache()
    ok = parsed.filter(F.col("reason").isNull())

    seen = occurrences(ok).cache()
    bad = verdicts(seen).cache()
    # every line that passed stage 1 takes the verdict of its meaning's first occurrence
    judged = seen.select("seq", "first_seq", "ts", "kind", "store", "status").join(
        bad.withColumnRenamed("seq", "first_seq"), "first_seq", "left")
    counts = tally(judged)
    duplicates, stage2 = counts["duplicates"], counts["rejected"]
    n_rejects = lines_read - counts["ok"] + stage2

    # rejects: stage 1's as parsed (with their text); stage 2's take their text from the lines
    # (read again), by seq (no join when there are none)
    seq = F.col("seq")
    rejects = parsed.filter(F.col("reason").isNotNull()).select(*source_and_line(seq, sources), "reason", "text")
    if stage2:
        rejected = judged.filter(F.col("why").isNotNull()).select("seq", "why")
        rejects = rejects.unionByName(lines.join(_small(rejected, stage2), "seq").select(
            *source_and_line(seq, sources), F.col("why").alias("reason"), "text"))

    # accepted: first occurrences not rejected; a receive takes its message's columns
    accepted = ok
    if duplicates + stage2:
        dropped = judged.filter(F.col("why").isNotNull() | (F.col("seq") != F.col("first_seq"))).select("seq")
        accepted = ok.join(_small(dropped, duplicates + stage2), "seq", "left_anti")
    message_cols = {"fid": "fid", "type": "type", "to": "to", "cnset": "cnset", "changes": "changes",
                    "requested": "requested", "src": "source", "responders": "responders", "derived": "derived"}
    messages = accepted.filter(F.col("kind") == "send").select(
        "msg", F.col("store").alias("sender"), F.col("ts").alias("sent_at"), F.col("seq").alias("msg_seq"),
        *[F.col(c).alias(f"m_{c}") for c in message_cols],
    )
    own = ("seq", "ts", "store", "kind", "cn", "op", "item", "bytes", "msg", "replicas", "path", "status")
    receives = accepted.filter(F.col("kind") == "receive").join(messages, "msg").select(
        *own, "sender", "sent_at", "msg_seq", *[F.col(f"m_{c}").alias(out) for c, out in message_cols.items()],
    )
    others = accepted.filter(F.col("kind") != "receive").select(
        *own, F.lit(None).cast("string").alias("sender"), F.lit(None).cast("long").alias("sent_at"),
        F.lit(None).cast("long").alias("msg_seq"), *[F.col(c).alias(out) for c, out in message_cols.items()],
    )
    # cached, not materialised here: the first query over them (the fold) fills the cache, so
    # no job of its own; ``release`` drops the parsed lines once the tables are written
    events = others.unionByName(receives).select(*EVENT_COLUMNS).cache()
    accepted_n = lines_read - duplicates - n_rejects
    return ReadResult(events, rejects, lines_read, duplicates, accepted_n, counts["last_ts"], counts["status"],
                      [parsed, seen, bad, events])


def tally(judged: DataFrame) -> dict[str, Any]:
    """Everything the driver needs from the verdicts, in one job (and no broadcast): lines past
    stage 1, duplicates, stage-2 rejects, the last accepted event's time and the accepted
    up/down lines (few: one per outage edge). The lines read are known from the file blocks:
    a second branch over the parsed lines would parse them twice (both branches' tasks run at
    once and each fills the cache)."""
    accepted = F.col("why").isNull() & (F.col("seq") == F.col("first_seq"))
    row = judged.agg(
        F.count(F.lit(1)).alias("ok"),
        F.count_if(F.col("why").isNull() & (F.col("seq") != F.col("first_seq"))).alias("duplicates"),
        F.count_if(F.col("why").isNotNull()).alias("rejected"),
        F.max(F.when(accepted, F.col("ts"))).alias("last_ts"),
        F.collect_list(F.when(accepted & (F.col("kind") == "store_status"),
                              F.struct("ts", "seq", "store", "status"))).alias("status"),
    ).first()
    assert row is not None
    status = sorted((s.ts, s.seq, s.store, s.status == "down") for s in row["status"])
    return {"ok": int(row["ok"]), "duplicates": int(row["duplicates"]), "rejected": int(row["rejected"]),
            "last_ts": row["last_ts"], "status": status}
