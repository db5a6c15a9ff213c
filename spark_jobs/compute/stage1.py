"""Stage 1 of reading the event log: every line on its own, by ``model.events.parse_line`` in the
Python workers, which get (seq, text) and send back the text of rejects only: the reject rules
exist once. A refresh parses its few new lines on the driver by the same ``parsed_row``.
(Two exact JVM versions were measured, Spark SQL over VARIANT and a whole-line pattern with
``from_json`` for the writers' canonical lines: both cost more CPU than ``parse_line`` in a
one-shot job here.)"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame

from pfscope.spark_jobs.compute.stream import arrow_schema, tuples_batch
from pfscope.spark_jobs.model.events import R_NOT_UTF8, Reject, parse_line
from pfscope.spark_jobs.model.topology import Topology, topology_from_text
from pfscope.spark_jobs.runtime.collector import cyclic_gc_paused

#: stage 1's output: a line's verdict and fields by ``seq`` (its file and line number are in
#: ``seq``); ``text`` only on a rejected line (the rejects table needs it, nothing else does)
PARSED_DDL = (
    "seq long, reason string, text string, key string, "
    "ts long, store string, kind string, fid string, cn long, op string, item string, bytes long, "
    "msg string, type string, `to` array<string>, cnset string, changes string, requested string, "
    "src string, responders array<string>, replicas array<string>, path string, status string, "
    "derived array<string>"
)
PARSED_COLUMNS = {c.split(" ")[0].strip("`"): c.split(" ", 1)[1] for c in PARSED_DDL.split(", ")}
_NO_EVENT = (None,) * (len(PARSED_COLUMNS) - 3)  # key ... derived: a rejected line has none


def _parse_partitions(topology_json: str) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function: (seq, text) in, one parsed row per line out (an event's
    columns, or a reject reason and the text). Plain lists in and out: no pandas frame per batch."""
    schema = arrow_schema(PARSED_COLUMNS)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        topo = topology_from_text(topology_json)
        with cyclic_gc_paused():
            for batch in batches:
                seqs, texts = batch.column(0).to_pylist(), batch.column(1).to_pylist()
                rows = [parsed_row(topo, seq, text) for seq, text in zip(seqs, texts, strict=True)]
                if rows:
                    yield tuples_batch(rows, schema)

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
        return (
            seq,
            None,
            None,
            repr(ev.key),
            ev.ts,
            ev.store,
            ev.kind,
            ev.fid,
            ev.cn,
            ev.op,
            ev.item,
            ev.bytes,
            ev.msg_id,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            list(ev.replicas) if ev.replicas is not None else None,
            ev.path,
            ev.status,
            list(ev.derived),
        )
    return (
        seq,
        None,
        None,
        repr(ev.key),
        ev.ts,
        ev.store,
        ev.kind,
        ev.fid,
        ev.cn,
        ev.op,
        ev.item,
        ev.bytes,
        m.msg,
        m.type,
        list(m.to),
        m.cnset.text(),
        m.changes.text() if m.changes is not None else None,
        m.requested.text() if m.requested is not None else None,
        m.source,
        list(m.responders) if m.responders is not None else None,
        None,
        None,
        None,
        list(m.derived),
    )


def parse_stage1(lines: DataFrame, topo: Topology) -> DataFrame:
    """``lines`` (seq, text) as ``PARSED_DDL`` rows, by ``parse_line`` in Python workers."""
    return lines.select("seq", "text").mapInArrow(
        _parse_partitions(json.dumps(topo.to_json())), schema=PARSED_DDL
    )
