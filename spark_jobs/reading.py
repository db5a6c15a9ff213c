"""Reading the event log in Spark, with exactly the reference validation.

- Files are read by Spark's text source; each line's number is exact per file, from the
  hidden ``_metadata`` columns (splits are packed into partitions by size, not by offset, so
  lines are numbered per file block, blocks ordered by their start).
- Stage 1 (one line on its own) runs ``spark_jobs.model.events.parse_line`` on the executors
  through ``mapInArrow``: the reject rules exist once, and this scales out with the cluster.
  Its output is cached: the log is parsed once.
- Stage 2 (rules between lines: duplicates by meaning, message ids, receives against their
  sends, change numbers increasing) is Spark SQL: windows and joins over the whole log, run
  once (the verdicts are cached) with one job for the three counts.

The result equals ``read_event_log`` line for line; the Spark tests check it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

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
    make_seq,
    parse_line,
)
from .model.topology import Topology, topology_from_json
from .stream import arrow_schema

PARSED_DDL = (
    "seq long, source string, line long, text string, reason string, key string, "
    "ts long, store string, kind string, fid string, cn long, op string, item string, bytes long, "
    "msg string, type string, `to` array<string>, cnset string, changes string, requested string, "
    "source_store string, responders array<string>, replicas array<string>, path string, status string, "
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


def list_files(paths: Sequence[str]) -> list[str]:
    """Local files, folders and globs as the replay lists them; URIs are passed on as given."""
    local = [p for p in paths if "://" not in p]
    remote = sorted(p for p in paths if "://" in p)
    return sorted(expand_paths(local)) + remote if local else remote


# --------------------------------------------------------------------------------------------
# lines with their numbers
# --------------------------------------------------------------------------------------------
def numbered_lines(spark: SparkSession, files: list[str]) -> DataFrame:
    """source, line (1-based per file), seq (input order), text (null when not UTF-8)."""
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
    offsets: list[tuple[str, int, int, int, int]] = []
    by_file: dict[str, list[tuple[int, int, int]]] = {}
    for r in blocks.collect():  # one row per file block: small
        by_file.setdefault(r.file_path, []).append((r.block, r.n, r.first_mid))
    names = _match_names(files, list(by_file))
    for path, blist in by_file.items():
        before = 0
        for block, n, first_mid in sorted(blist):
            offsets.append((path, block, before, first_mid, names[path]))
            before += n
    off = spark.createDataFrame(offsets, "file_path string, block long, before long, first_mid long, file_index int")
    lines = raw.join(F.broadcast(off), ["file_path", "block"])
    line_no = F.col("before") + F.col("mid") - F.col("first_mid") + 1
    text = F.regexp_replace("value", "\r+$", "")
    return lines.select(
        F.col("file_path").alias("source_uri"),
        "file_index",
        line_no.alias("line"),
        (F.col("file_index").cast("long") * F.lit(1 << 32) + line_no).alias("seq"),
        F.when(F.expr("is_valid_utf8(value)"), text).alias("text"),
    )


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
_NO_EVENT = (None,) * (len(PARSED_COLUMNS) - 5)  # key ... derived: a rejected line has none


def _parse_partitions(topology_json: str, files: list[str]):  # type: ignore[no-untyped-def]
    """The ``mapInArrow`` function: numbered lines in, one parsed row per line out (an event's
    columns, or a reject reason). Plain lists in and out: no pandas frame per batch."""
    schema = arrow_schema(PARSED_COLUMNS)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        topo = topology_from_json(json.loads(topology_json))
        for batch in batches:
            d = batch.to_pydict()
            rows = [
                parsed_row(topo, files[i] if i < len(files) else uri, line, seq, text, make_seq(i, line))
                for seq, i, uri, line, text in zip(d["seq"], d["file_index"], d["source_uri"], d["line"], d["text"],
                                                   strict=True)
            ]
            if rows:
                cols = list(zip(*rows, strict=True))
                yield pa.RecordBatch.from_arrays([pa.array(c, type=f.type) for c, f in zip(cols, schema, strict=True)],
                                                 schema=schema)

    return run


def parsed_row(topo: Topology, source: str, line: int, seq: int, text: str | None, model_seq: int) -> tuple[Any, ...]:
    """One line as a row of ``PARSED_DDL``: ``parse_line`` decides (the rules exist once)."""
    if text is None:
        return (seq, source, line, "", R_NOT_UTF8, *_NO_EVENT)
    try:
        ev = parse_line(text, topo, model_seq)
    except Reject as e:
        return (seq, source, line, text, e.reason, *_NO_EVENT)
    m = ev.message
    if m is None:
        return (seq, source, line, text, None, repr(ev.key), ev.ts, ev.store, ev.kind, ev.fid, ev.cn, ev.op, ev.item,
                ev.bytes, ev.msg_id, None, None, None, None, None, None, None,
                list(ev.replicas) if ev.replicas is not None else None, ev.path, ev.status, list(ev.derived))
    return (seq, source, line, text, None, repr(ev.key), ev.ts, ev.store, ev.kind, ev.fid, ev.cn, ev.op, ev.item,
            ev.bytes, m.msg, m.type, list(m.to), m.cnset.text(),
            m.changes.text() if m.changes is not None else None,
            m.requested.text() if m.requested is not None else None, m.source,
            list(m.responders) if m.responders is not None else None, None, None, None, list(m.derived))


# --------------------------------------------------------------------------------------------
# stage 2: rules between lines
# --------------------------------------------------------------------------------------------
def _first(df: DataFrame, by: Sequence[str], order: Sequence[str] = ("seq",)) -> DataFrame:
    w = Window.partitionBy(*by).orderBy(*order)
    return df.withColumn("_n", F.row_number().over(w))


def read_events(spark: SparkSession, paths: Sequence[str], topo: Topology) -> ReadResult:
    """Parse every line once (cached), judge the rules between lines once (cached), and count
    lines read, duplicates and rejects in one job."""
    files = list_files(paths)
    if not files:
        raise FileNotFoundError(f"{', '.join(paths)}: no event log files")
    lines = numbered_lines(spark, files)
    parsed = lines.mapInArrow(_parse_partitions(json.dumps(topo.to_json()), files), schema=PARSED_DDL)
    parsed = parsed.withColumnRenamed("source_store", "src").cache()

    ok = parsed.filter(F.col("reason").isNull())
    # the meaning of a line is decided by its first occurrence (by input order)
    firsts = _first(ok, ["key"]).filter("_n = 1").drop("_n")

    # messages: the first send of each id
    sends = firsts.filter(F.col("kind") == "send")
    messages = _first(sends, ["msg"]).filter("_n = 1").select(
        "msg", F.col("key").alias("m_key"), F.col("store").alias("sender"), F.col("ts").alias("sent_at"),
        F.col("seq").alias("msg_seq"), F.col("fid").alias("m_fid"), F.col("type").alias("m_type"),
        F.col("to").alias("m_to"), F.col("cnset").alias("m_cnset"), F.col("changes").alias("m_changes"),
        F.col("requested").alias("m_requested"), F.col("src").alias("m_src"),
        F.col("responders").alias("m_responders"), F.col("derived").alias("m_derived"),
    )
    with_msg = firsts.join(messages, "msg", "left")
    reason = (
        F.when((F.col("kind") == "send") & (F.col("key") != F.col("m_key")), F.lit(R_MSG_REUSED))
        .when((F.col("kind") == "receive") & F.col("m_key").isNull(), F.lit(R_NEVER_SENT))
        .when((F.col("kind") == "receive") & ~F.array_contains("m_to", F.col("store")), F.lit(R_NOT_ADDRESSEE))
        .when((F.col("kind") == "receive") & (F.col("ts") < F.col("sent_at")), F.lit(R_BEFORE_SEND))
    )
    checked = with_msg.withColumn("why", reason)
    twice = _first(checked.filter((F.col("kind") == "receive") & F.col("why").isNull()), ["store", "msg"]).filter(
        "_n > 1"
    ).select("seq", F.lit(R_RECEIVED_TWICE).alias("why2"))
    checked = checked.join(twice, "seq", "left").withColumn("why", F.coalesce("why", "why2")).drop("why2")

    # change numbers only increase, in event order, among accepted changes
    changes = checked.filter((F.col("kind") == "change") & F.col("why").isNull())
    w = Window.partitionBy("store", "fid").orderBy("ts", "seq").rowsBetween(Window.unboundedPreceding, -1)
    not_increasing = changes.withColumn("prev_max", F.max("cn").over(w)).filter(
        F.col("prev_max").isNotNull() & (F.col("cn") <= F.col("prev_max"))
    ).select("seq", F.lit(R_CN_NOT_INCREASING).alias("why3"))
    checked = checked.join(not_increasing, "seq", "left").withColumn("why", F.coalesce("why", "why3")).drop("why3")
    checked = checked.cache()  # one row per meaning: the verdicts, and the accepted events

    # every line that passed stage 1 takes the verdict of its meaning's first occurrence
    verdict = checked.select("key", F.col("seq").alias("first_seq"), "why")
    judged = ok.join(verdict, "key").select(
        "source", "line", F.col("why").alias("reason"),
        (F.col("why").isNull() & (F.col("seq") != F.col("first_seq"))).alias("duplicate"),
        F.when(F.col("why").isNotNull(), F.col("text")).alias("text"),
    )
    outcome = parsed.filter(F.col("reason").isNotNull()).select(
        "source", "line", "reason", F.lit(False).alias("duplicate"), "text"
    ).unionByName(judged).cache()  # every line read, once: its reject reason or whether it repeats
    counts = outcome.agg(
        F.count(F.lit(1)).alias("lines"),
        F.count_if("duplicate").alias("duplicates"),
        F.count_if(F.col("reason").isNotNull()).alias("rejects"),
    ).first()
    assert counts is not None
    parsed.unpersist()  # outcome and checked hold all that is needed now
    lines_read, duplicates, n_rejects = int(counts.lines), int(counts.duplicates), int(counts.rejects)
    rejects = outcome.filter(F.col("reason").isNotNull()).select("source", "line", "reason", "text")

    receive = F.col("kind") == "receive"
    message_cols = {"type": "type", "to": "to", "cnset": "cnset", "changes": "changes",
                    "requested": "requested", "src": "source", "responders": "responders", "derived": "derived"}
    events = checked.filter(F.col("why").isNull()).select(
        "seq", "ts", "store", "kind",
        F.when(receive, F.col("m_fid")).otherwise(F.col("fid")).alias("fid"),
        "cn", "op", "item", "bytes", "msg",
        *[F.when(receive, F.col(f"m_{c}")).otherwise(F.col(c)).alias(out) for c, out in message_cols.items()],
        "replicas", "path", "status",
        F.when(receive, F.col("sender")).alias("sender"),
        F.when(receive, F.col("sent_at")).alias("sent_at"),
        F.when(receive, F.col("msg_seq")).alias("msg_seq"),
    )
    accepted = lines_read - duplicates - n_rejects
    return ReadResult(events.select(*EVENT_COLUMNS), rejects, lines_read, duplicates, accepted)
