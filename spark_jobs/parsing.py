"""Stage 1 of reading in the JVM: every line on its own, exactly as ``parse_line`` judges it.

Each line is parsed by Spark's ``try_parse_json`` into a VARIANT, whose value types are exact
(``BIGINT`` is a JSON integer; ``1.0`` is a ``DECIMAL``, ``true`` a ``BOOLEAN``), and the rules of
``spark_jobs.model.events.parse_line`` are Spark SQL expressions, checked in the same order (the
first failing rule gives the reason). The output is ``PARSED_DDL``: the verdict, every field,
and ``key`` (the ``repr`` of the line's meaning, as the replay builds it).

Where Spark's JSON reading could differ from Python's ``json`` module, or a rule's exact edge
is Python's own (``datetime.fromisoformat``, ``int()`` on CN text), the line goes to
``parse_line`` itself, one narrow Python UDF that sees only those lines:

- any character outside printable ASCII, or a backslash (escapes, BOM, Unicode whitespace, lone
  surrogates, control characters), or a run of 19 digits (beyond a long);
- anything but a flat object (braces only its own, arrays one deep, brackets inside strings
  counted too): ``try_parse_json`` reads ``{} x`` and ``{}{}``, so this is what proves there is
  no text after the value; JSON that is not an object, nested values, object-form CN sets;
- text Spark cannot read as JSON (duplicate keys, NaN, ``not JSON`` itself);
- a timestamp not of the form ``YYYY-MM-DDTHH:MM:SS[.ffffff](Z|+HH:MM)`` or out of range;
- a CN set in object form, or text beyond ``ORIGIN:N[-N],...;...`` without spaces.

The common line (what the simulator and the ingester write) never leaves the JVM.

Not yet the job's stage 1 (``spark_jobs.reading`` still runs ``parse_line`` in Python workers):
on the demo log it costs several times the CPU of the Python path on this stack (Spark 4.3;
``tests/benchmarks/bench_parsing.py``). Measured warm, per 40k lines, on a loaded 2-core
machine: ``try_parse_json`` alone 0.2-0.3 CPU s; the twenty ``schema_of_variant``/
``try_variant_get`` reads 0.6-0.9; the verdict (``judged``) about 3; the whole (keys, CN text,
lists) 5-7, against 0.7-1.5 for ``parse_line`` in Python workers. The Python UDF for the
rare lines costs nothing measurable (the same run with it replaced by a null: no change), nor do
the codegen settings: ``methodSplitThreshold=256``, ``wholeStage=false`` and
``-XX:-DontCompileHugeMethods`` (the generated methods above the JIT's 8 KB limit compiled)
all measured the same or worse. ``from_json``/``json_tuple`` with string fields are cheaper
than the VARIANT reads but cannot replace them: they re-print the value (``"5"`` and ``5``
both give ``5``; ``1e2`` gives ``100.0``; ``1.50`` in an object gives ``1.5``), so the JSON
type is lost. The differential test holds this module equal to ``parse_line`` so that it can
be swapped in once it is faster.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from .model.events import (
    KINDS,
    MESSAGE_TYPES,
    OPS,
    R_BAD_TS,
    R_EMPTY,
    R_HIERARCHY_REPLICAS,
    R_NOT_UTF8,
    R_SOURCE_NOT_IN_TO,
    R_TO_SENDER,
    R_TYPE_FID,
    R_UNKNOWN_KIND,
    R_UNKNOWN_TYPE,
    TYPES_WITH_CHANGES,
    Reject,
    parse_line,
    r_cn_below_1,
    r_ill_typed,
    r_lo_above_hi,
    r_missing,
    r_unknown_store,
)
from .model.topology import HIERARCHY_FID, Topology
from .reading import PARSED_DDL

PARSED_COLUMNS = {c.split(" ")[0].strip("`"): c.split(" ", 1)[1] for c in PARSED_DDL.split(", ")}
#: the columns a line's parse gives (all but where the line came from)
VERDICT_COLUMNS = tuple(PARSED_COLUMNS)[4:]
VERDICT_DDL = ", ".join(f"`{c}` {PARSED_COLUMNS[c]}" for c in VERDICT_COLUMNS)

#: the reason of a line the SQL leaves to ``parse_line`` (never a real reason: starts with NUL)
TO_PYTHON = "\x00python"
#: fields read from a line's JSON object
FIELDS = ("kind", "ts", "store", "derived", "fid", "cn", "op", "item", "bytes", "msg", "type", "to", "cnset",
          "changes", "requested", "source", "responders", "replicas", "path", "status")
TS_RE = r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.(\d{1,6}))?([Zz]|([+-])(\d{2}):(\d{2}))$"
LIST_FIELDS = ("derived", "to", "responders", "replicas")
#: an object with no braces inside and arrays of depth 1 (brackets inside strings count too: rare)
_FLAT_OBJECT = r"^ *\{[^{}\[\]]*(\[[^{}\[\]]*\][^{}\[\]]*)*\} *$"
US_PER_DAY = 86_400_000_000


# --------------------------------------------------------------------------------------------
# the rare lines: parse_line itself
# --------------------------------------------------------------------------------------------
def verdict_row(text: str, topo: Topology) -> tuple[Any, ...]:
    """One line's ``VERDICT_COLUMNS`` by ``parse_line`` (the reference; used for rare lines)."""
    try:
        ev = parse_line(text, topo, 0)
    except Reject as e:
        return (e.reason, *(None,) * (len(VERDICT_COLUMNS) - 1))
    m = ev.message
    if m is None:
        return (None, repr(ev.key), ev.ts, ev.store, ev.kind, ev.fid, ev.cn, ev.op, ev.item, ev.bytes, ev.msg_id,
                None, None, None, None, None, None, None,
                list(ev.replicas) if ev.replicas is not None else None, ev.path, ev.status, list(ev.derived))
    return (None, repr(ev.key), ev.ts, ev.store, ev.kind, ev.fid, ev.cn, ev.op, ev.item, ev.bytes, m.msg, m.type,
            list(m.to), m.cnset.text(), m.changes.text() if m.changes is not None else None,
            m.requested.text() if m.requested is not None else None, m.source,
            list(m.responders) if m.responders is not None else None, None, None, None, list(m.derived))


def _python_verdicts(topology: dict[str, Any]) -> Callable[[pa.Array], pa.Array]:
    """An Arrow UDF: ``verdict_row`` for the non-null texts, null elsewhere (a batch of common
    lines costs one null array)."""
    from .model.topology import topology_from_json
    from .stream import arrow_schema

    struct = pa.struct(list(arrow_schema({c: PARSED_COLUMNS[c] for c in VERDICT_COLUMNS})))
    cache: list[Topology] = []

    def run(texts: pa.Array) -> pa.Array:
        if texts.null_count == len(texts):
            return pa.nulls(len(texts), type=struct)
        if not cache:
            cache.append(topology_from_json(topology))
        rows = [None if t is None else dict(zip(VERDICT_COLUMNS, verdict_row(t, cache[0]), strict=True))
                for t in texts.to_pylist()]
        return pa.array(rows, type=struct)

    return run


# --------------------------------------------------------------------------------------------
# SQL pieces
# --------------------------------------------------------------------------------------------
def _t(f: str) -> Column:
    """The JSON type of field ``f`` (null when absent, ``VOID`` when JSON null)."""
    return F.col(f"_t_{f}")


def _s(f: str) -> Column:
    return F.col(f"_s_{f}")


def _missing(f: str) -> Column:
    return _t(f).isNull() | (_t(f) == "VOID")


def _is_str(f: str) -> Column:
    return _t(f) == "STRING"


def _nonempty_str(f: str) -> Column:
    return _is_str(f) & (_s(f) != "")


def _string_list_of(f: str) -> Column:
    """Field ``f`` as array<string> when it is a JSON list of non-empty strings, else null."""
    arr = F.col(f"_a_{f}")
    ok = _t(f).isin("ARRAY<STRING>", "ARRAY<VOID>") & F.forall(arr, lambda x: x.isNotNull() & (x != ""))
    return F.when(ok, arr)


def _string_list(f: str) -> Column:
    return F.col(f"_l_{f}")


def _but(df: DataFrame, *prefixes: str) -> list[str]:
    """The columns of ``df`` but those named with these prefixes: each stage carries only what
    later ones read (a row above 100 fields loses whole-stage code generation)."""
    return [c for c in df.columns if not c.startswith(prefixes)]


def _pyrepr(s: Column) -> Column:
    """Python's ``repr`` of a printable-ASCII string without backslashes (None for null)."""
    return (
        F.when(s.isNull(), F.lit("None"))
        .when(s.contains("'") & ~s.contains('"'), F.concat(F.lit('"'), s, F.lit('"')))
        .otherwise(F.concat(F.lit("'"), F.replace(s, F.lit("'"), F.lit("\\'")), F.lit("'")))
    )


def _pyint(n: Column) -> Column:
    return F.coalesce(n.cast("string"), F.lit("None"))


def _pytuple(arr: Column) -> Column:
    """``repr`` of a tuple of strings: ``()``, ``('a',)``, ``('a', 'b')``; None for null."""
    return (
        F.when(arr.isNull(), F.lit("None"))
        .when(F.size(arr) == 0, F.lit("()"))
        .when(F.size(arr) == 1, F.concat(F.lit("("), _pyrepr(arr[0]), F.lit(",)")))
        .otherwise(F.concat(F.lit("("), F.array_join(F.transform(arr, _pyrepr), ", "), F.lit(")")))
    )


def _key(*parts: Column) -> Column:
    return F.concat(F.lit("("), F.concat_ws(", ", *parts), F.lit(")"))


def _cn_items(s: Column) -> Column:
    """CN text as array<struct<o, lo, hi, ok>> in text order; ``ok``: the range and its section
    are of the plain grammar (``ORIGIN:N[-N],...``; anything else is for ``CNSet.parse``)."""
    def section(p: Column) -> Column:
        origin = F.substring_index(p, ":", 1)
        plain = p.rlike(r"^[^\s:;,]+:[0-9,-]+$")
        return F.transform(
            F.split(F.substring_index(p, ":", -1), ","),
            lambda r: F.struct(
                origin.alias("o"),
                F.substring_index(r, "-", 1).try_cast("long").alias("lo"),
                F.substring_index(r, "-", -1).try_cast("long").alias("hi"),
                (plain & r.rlike(r"^\d{1,18}(-\d{1,18})?$")).alias("ok"),
            ),
        )

    return F.flatten(F.transform(F.split(s, ";"), section))


def _cn_text(items: Column) -> Column:
    """The canonical text of ``CNSet.text()``: origins sorted, ranges sorted and merged."""
    start = F.struct(
        F.lit("").alias("txt"), F.lit(None).cast("string").alias("w"), F.lit(None).cast("string").alias("o"),
        F.lit(None).cast("long").alias("lo"), F.lit(None).cast("long").alias("hi"),
    )

    def flushed(acc: Column) -> Column:
        rng = F.when(acc.lo == acc.hi, acc.lo.cast("string")).otherwise(F.concat(acc.lo, F.lit("-"), acc.hi))
        head = (
            F.when(acc.w.isNull(), F.concat(acc.o, F.lit(":")))
            .when(acc.w == acc.o, F.lit(","))
            .otherwise(F.concat(F.lit(";"), acc.o, F.lit(":")))
        )
        return F.when(acc.o.isNull(), acc.txt).otherwise(F.concat(acc.txt, head, rng))

    def step(acc: Column, x: Column) -> Column:
        join = (acc.o == x.o) & (x.lo <= acc.hi + 1)
        return F.when(
            join, F.struct(acc.txt.alias("txt"), acc.w.alias("w"), acc.o.alias("o"), acc.lo.alias("lo"),
                           F.greatest(acc.hi, x.hi).alias("hi"))
        ).otherwise(
            F.struct(flushed(acc).alias("txt"), F.coalesce(acc.o, acc.w).alias("w"), x.o.alias("o"),
                     x.lo.alias("lo"), x.hi.alias("hi"))
        )

    return F.aggregate(F.array_sort(items), start, step, flushed)


Check = tuple[Column, Column]  # (the rule fails, the reason)


def _chain(checks: Sequence[Check]) -> Column:
    """The first failing check's reason, else null (the line passes)."""
    out: Any = F
    for cond, reason in checks:
        out = out.when(cond, reason)
    return out.otherwise(F.lit(None).cast("string"))


def _r(text: str) -> Column:
    return F.lit(text)


def _required(f: str) -> list[Check]:
    return [(_missing(f), _r(r_missing(f)))]


def _str_checks(f: str) -> list[Check]:
    return [*_required(f), (~_nonempty_str(f), _r(r_ill_typed(f)))]


def _store_checks(f: str, stores: list[str]) -> list[Check]:
    return [*_str_checks(f), (~_s(f).isin(stores), _r(r_unknown_store(f)))]


def _fid_checks() -> list[Check]:
    ok = _is_str("fid") & _s("fid").rlike(r"^[0-9A-Fa-f]{1,16}-[0-9A-Fa-f]{1,16}$")
    return [*_required("fid"), (~ok, _r(r_ill_typed("fid")))]


def _stores_checks(f: str, stores: list[str], *, non_empty: bool) -> list[Check]:
    arr = _string_list(f)
    bad = arr.isNull() | (F.size(F.array_distinct(arr)) != F.size(arr))
    if non_empty:
        bad = bad | (F.size(arr) == 0)
    return [*_required(f), (bad, _r(r_ill_typed(f))),
            (F.exists(arr, lambda x: ~x.isin(stores)), _r(r_unknown_store(f)))]


def _opt_checks(f: str, json_type: str) -> list[Check]:
    return [(~_missing(f) & (_t(f) != json_type), _r(r_ill_typed(f)))]


def _cnset_checks(f: str) -> list[Check]:
    items = F.col(f"_i_{f}")
    first_bad = F.get(F.filter(items, lambda x: (x.lo < 1) | (x.lo > x.hi)), 0)
    return [
        *_required(f),
        (_t(f).startswith("OBJECT"), F.lit(TO_PYTHON)),
        (~_is_str(f), _r(r_ill_typed(f))),
        (items.isNull(), F.lit(TO_PYTHON)),  # text beyond the plain grammar
        (first_bad.isNotNull() & (first_bad.lo < 1), _r(r_cn_below_1(f))),
        (first_bad.isNotNull(), _r(r_lo_above_hi(f))),
        (F.col(f"_u_{f}"), _r(r_unknown_store(f))),
    ]


def _ts_checks() -> list[Check]:
    s = F.trim(_s("ts"))
    return [
        *_required("ts"),
        (~_is_str("ts") | (F.length(s) < 20) | ~F.substring(s, 11, 1).isin("T", "t", " "), _r(R_BAD_TS)),
        (F.col("_ts").isNull(), F.lit(TO_PYTHON)),
    ]


def _ts_micros(text: Column) -> Column:
    """Epoch microseconds of the plain RFC 3339 form, null when outside it or out of range
    (Python's edges there are its own: the line goes to ``parse_ts``)."""
    s = F.trim(text)

    def num(start: int, n: int) -> Column:
        return F.substring(s, start, n).try_cast("int")

    y, mo, d, h, mi, sec = num(1, 4), num(6, 2), num(9, 2), num(12, 2), num(15, 2), num(18, 2)
    zone_len = F.when(F.upper(F.substring(s, -1, 1)) == "Z", F.lit(1)).otherwise(F.lit(6))
    has_frac = F.substring(s, 20, 1) == "."
    frac = F.when(has_frac, F.rpad(F.expr("substring(trim(_s_ts), 21, length(trim(_s_ts)) - 20 - "
                                          "if(upper(substring(trim(_s_ts), -1, 1)) = 'Z', 1, 6))"), 6, "0")
                  .try_cast("long")).otherwise(F.lit(0))
    zone = F.substring(s, -6, 6)
    sign = F.when(F.substring(zone, 1, 1) == "-", F.lit(-1)).otherwise(F.lit(1))
    oh = F.when(zone_len == 1, F.lit(0)).otherwise(F.substring(zone, 2, 2).try_cast("int"))
    om = F.when(zone_len == 1, F.lit(0)).otherwise(F.substring(zone, 5, 2).try_cast("int"))
    month_start = F.make_date(F.greatest(y, F.lit(1)), F.least(F.greatest(mo, F.lit(1)), F.lit(12)), F.lit(1))
    month_days = F.dayofmonth(F.last_day(month_start))
    valid = (
        s.rlike(TS_RE) & (y >= 1) & mo.between(1, 12) & d.between(1, month_days)
        & (h < 24) & (mi < 60) & (sec < 60) & (oh < 24) & (om < 60)
    )
    day = F.make_date(F.greatest(y, F.lit(1)), F.least(F.greatest(mo, F.lit(1)), F.lit(12)),
                      F.least(F.greatest(d, F.lit(1)), month_days))
    days = F.unix_date(day).cast("long")
    secs = (h * 3600 + mi * 60 + sec - sign * (oh * 3600 + om * 60)).cast("long")
    return F.when(valid, days * US_PER_DAY + secs * 1_000_000 + frac)


# --------------------------------------------------------------------------------------------
# the transform
# --------------------------------------------------------------------------------------------
def judged(lines: DataFrame, topo: Topology, files: Sequence[str] = ()) -> DataFrame:
    """The lines with the fields of their JSON and ``_reason``: the first rule they fail (null
    if none, ``TO_PYTHON`` where ``parse_line`` must judge)."""
    stores = sorted(topo.stores)
    text = F.col("text")
    # one pass each: outside printable ASCII, a backslash or a run of 19 digits is for Python;
    # an object whose only braces are its own and whose arrays are flat has no text after its
    # value (``try_parse_json`` would read ``{} x``) and nests no deeper than either parser goes
    plain = ~text.rlike(r"[^\x20-\x7e]|\\|\d{19}")
    flat_object = text.rlike(_FLAT_OBJECT)

    source = F.col("source_uri")
    if files:
        named = F.element_at(F.array(*[F.lit(f) for f in files]), F.col("file_index") + 1)
        source = F.when(F.col("file_index") < len(files), named).otherwise(source)
    df = lines.select(
        "seq", source.alias("source"), "line", "text", plain.alias("_plain"),
        F.when(plain & flat_object, F.expr("try_parse_json(text)")).alias("_v"),
    ).select(
        "seq", "source", "line", "text", "_v",
        # JSON that is not an object (``[]``, ``5``) goes to Python too: rare
        F.when(F.col("_plain"), F.when(F.trim(text) == "", F.lit("empty")).when(F.col("_v").isNotNull(), F.lit("json")))
        .alias("_shape"),
    )
    df = df.select(
        "*",
        *[F.expr(f"schema_of_variant(variant_get(_v, '$.{f}'))").alias(f"_t_{f}") for f in FIELDS],
        *[F.expr(f"try_variant_get(_v, '$.{f}', 'string')").alias(f"_s_{f}") for f in FIELDS
          if f not in LIST_FIELDS],
        *[F.expr(f"try_variant_get(_v, '$.{f}', 'array<string>')").alias(f"_a_{f}")
          for f in LIST_FIELDS],
    )
    cn_fields = ("cnset", "changes", "requested")
    df = df.select(
        *_but(df, "_v"),
        _ts_micros(_s("ts")).alias("_ts"),
        *[F.when(_is_str(f), _cn_items(_s(f))).alias(f"_j_{f}") for f in cn_fields],
    )
    empty = F.array().cast("array<struct<o:string,lo:long,hi:long,ok:boolean>>")
    df = df.select(
        "*",
        *[F.when(_is_str(f) & (F.trim(_s(f)) == ""), empty)
          .when(F.forall(F.col(f"_j_{f}"), lambda x: x.ok), F.col(f"_j_{f}")).alias(f"_i_{f}")
          for f in cn_fields],
    )
    df = df.select(
        *_but(df, "_j_"),
        *[F.exists(F.col(f"_i_{f}"), lambda x: ~x.o.isin(stores)).alias(f"_u_{f}") for f in cn_fields],
        *[_string_list_of(f).alias(f"_l_{f}") for f in LIST_FIELDS],
        F.upper(_s("fid")).alias("_fid"),
    )

    kind, store, mtype = _s("kind"), _s("store"), _s("type")
    derived = _string_list("derived")
    common = [
        (F.col("_shape").isNull(), F.lit(TO_PYTHON)),
        (F.col("_shape") == "empty", _r(R_EMPTY)),
        *_required("kind"),
        (~_is_str("kind") | ~kind.isin(list(KINDS)), _r(R_UNKNOWN_KIND)),
        *_ts_checks(),
        *_store_checks("store", stores),
        (~_missing("derived") & derived.isNull(), _r(r_ill_typed("derived"))),
    ]
    change = [
        *_fid_checks(),
        *_required("cn"),
        ((_t("cn") != "BIGINT") | (_s("cn").try_cast("long") < 1), _r(r_ill_typed("cn"))),
        *_opt_checks("op", "STRING"),
        (~_missing("op") & ~_s("op").isin(list(OPS)), _r(r_ill_typed("op"))),
        *_opt_checks("item", "STRING"),
        *_opt_checks("bytes", "BIGINT"),
        (~_missing("bytes") & (_s("bytes").try_cast("long") < 0), _r(r_ill_typed("bytes"))),
    ]
    fid = F.col("_fid")
    backfill_request = mtype == "backfill_request"
    has_source = backfill_request & ~_missing("source")
    status_request = mtype == "status_request"
    send = [
        *_str_checks("msg"),
        *_required("type"),
        (~_is_str("type") | ~mtype.isin(list(MESSAGE_TYPES)), _r(R_UNKNOWN_TYPE)),
        *_fid_checks(),
        (mtype.isin("hierarchy", "content") & ((mtype == "hierarchy") != (fid == HIERARCHY_FID)), _r(R_TYPE_FID)),
        *_stores_checks("to", stores, non_empty=True),
        (F.array_contains(F.col("_a_to"), store), _r(R_TO_SENDER)),
        *_cnset_checks("cnset"),
        *[(mtype.isin(list(TYPES_WITH_CHANGES)) & c, r) for c, r in _cnset_checks("changes")],
        *[(backfill_request & c, r) for c, r in _cnset_checks("requested")],
        *[(has_source & c, r) for c, r in _store_checks("source", stores)],
        (has_source & ~F.array_contains(F.col("_a_to"), _s("source")), _r(R_SOURCE_NOT_IN_TO)),
        *[(status_request & c, r) for c, r in _stores_checks("responders", stores, non_empty=False)],
    ]
    receive = _str_checks("msg")
    replicas = [
        *_fid_checks(),
        (fid == HIERARCHY_FID, _r(R_HIERARCHY_REPLICAS)),
        *_stores_checks("replicas", stores, non_empty=False),
        *_opt_checks("path", "STRING"),
    ]
    status = [*_required("status"), (~_is_str("status") | ~_s("status").isin("up", "down"),
                                     _r(r_ill_typed("status")))]
    by_kind = {"change": change, "send": send, "receive": receive, "replicas": replicas, "store_status": status}
    reason: Any = _chain(common)
    kind_reason: Any = F
    for k, checks in by_kind.items():
        kind_reason = kind_reason.when(kind == k, _chain(checks))
    reason = F.coalesce(reason, kind_reason)
    return df.select("*", F.when(text.isNull(), F.lit(R_NOT_UTF8)).otherwise(reason).alias("_reason"))


def parse_lines(lines: DataFrame, topo: Topology, files: Sequence[str] = ()) -> DataFrame:
    """Numbered lines (``source_uri, file_index, line, seq, text``; text null when not UTF-8) to
    ``PARSED_DDL`` rows: each line's verdict and fields, equal to ``parse_line``'s. ``source`` is
    the file as listed (``files[file_index]``), else Spark's URI."""
    df = judged(lines, topo, files)
    text = F.col("text")
    kind, store, mtype = _s("kind"), _s("store"), _s("type")
    derived = _string_list("derived")
    fid = F.col("_fid")
    backfill_request = mtype == "backfill_request"
    has_source = backfill_request & ~_missing("source")
    status_request = mtype == "status_request"
    by_kind = ("change", "send", "receive", "replicas", "store_status")

    # an accepted line's columns, as parse_line fills them
    def opt_str(f: str) -> Column:
        return F.when(~_missing(f), _s(f))

    def opt_long(f: str) -> Column:
        return F.when(~_missing(f), _s(f).try_cast("long"))

    def sorted_tuple(f: str) -> Column:
        return _pytuple(F.col(f"_sorted_{f}"))

    is_kind = {k: kind == k for k in by_kind}
    ts, cn = F.col("_ts"), _s("cn").try_cast("long")
    op, item, nbytes, path = opt_str("op"), opt_str("item"), opt_long("bytes"), opt_str("path")
    accepted_send = F.col("_reason").isNull() & (kind == "send")
    derived_set = F.col("_derived_set")
    df = df.select(
        *_but(df, "_t_kind", "_t_ts", "_t_store", "_t_derived", "_t_fid", "_t_cn", "_t_msg", "_t_type", "_t_to",
              "_t_cnset", "_t_changes", "_t_requested", "_t_responders", "_t_replicas", "_t_status", "_u_",
              "_shape", "_s_ts", "_l_to", "_l_responders", "_l_replicas"),
        *[F.when(accepted_send, _cn_text(F.col(f"_i_{f}"))).alias(f"_c_{f}") for f in ("cnset", "changes", "requested")],
        F.array_sort(F.array_distinct(F.coalesce(derived, F.array().cast("array<string>")))).alias("_derived_set"),
        *[F.array_sort(F.col(f"_a_{f}")).alias(f"_sorted_{f}") for f in ("to", "replicas", "responders")],
    )
    df = df.select(*_but(df, "_i_"))
    cn_text = {f: F.col(f"_c_{f}") for f in ("cnset", "changes", "requested")}
    changes = F.when(mtype.isin(list(TYPES_WITH_CHANGES)), cn_text["changes"])
    requested = F.when(backfill_request, cn_text["requested"])
    source_store = F.when(has_source, _s("source"))
    responders = F.when(status_request, F.col("_a_responders"))
    head = [_pyrepr(kind), _pyint(ts), _pyrepr(store)]
    key = (
        F.when(is_kind["change"], _key(*head, _pyrepr(fid), _pyint(cn), _pyrepr(op), _pyrepr(item), _pyint(nbytes),
                                       _pytuple(derived_set)))
        .when(is_kind["send"], _key(*head, _pyrepr(_s("msg")), _pyrepr(mtype), _pyrepr(fid), sorted_tuple("to"),
                                    _pyrepr(cn_text["cnset"]), _pyrepr(changes), _pyrepr(requested),
                                    _pyrepr(source_store), _pytuple(F.when(status_request, F.col("_sorted_responders"))), _pytuple(derived_set)))
        .when(is_kind["receive"], _key(*head, _pyrepr(_s("msg"))))
        .when(is_kind["replicas"], _key(*head, _pyrepr(fid), sorted_tuple("replicas"), _pyrepr(path)))
        .otherwise(_key(*head, _pyrepr(_s("status"))))
    )
    send_only, change_only = is_kind["send"], is_kind["change"]
    sql_verdict = F.when(F.col("_reason").isNotNull(), F.struct(
        F.col("_reason").alias("reason"), *[F.lit(None).cast(PARSED_COLUMNS[c]).alias(c) for c in VERDICT_COLUMNS[1:]]
    )).otherwise(F.struct(
        F.lit(None).cast("string").alias("reason"),
        key.alias("key"),
        ts.alias("ts"),
        store.alias("store"),
        kind.alias("kind"),
        F.when(is_kind["change"] | send_only | is_kind["replicas"], fid).alias("fid"),
        F.when(change_only, cn).alias("cn"),
        F.when(change_only, op).alias("op"),
        F.when(change_only, item).alias("item"),
        F.when(change_only, nbytes).alias("bytes"),
        F.when(send_only | is_kind["receive"], _s("msg")).alias("msg"),
        F.when(send_only, mtype).alias("type"),
        F.when(send_only, F.col("_a_to")).alias("to"),
        F.when(send_only, cn_text["cnset"]).alias("cnset"),
        F.when(send_only, changes).alias("changes"),
        F.when(send_only, requested).alias("requested"),
        F.when(send_only, source_store).alias("source_store"),
        F.when(send_only, responders).alias("responders"),
        F.when(is_kind["replicas"], F.col("_a_replicas")).alias("replicas"),
        F.when(is_kind["replicas"], path).alias("path"),
        F.when(is_kind["store_status"], _s("status")).alias("status"),
        derived_set.alias("derived"),
    ))
    rare = F.col("_reason") == TO_PYTHON
    python_verdict = F.arrow_udf(_python_verdicts(topo.to_json()), VERDICT_DDL)(F.when(rare, text))
    verdict = F.when(rare, python_verdict).otherwise(sql_verdict)
    return df.select(
        "seq", "source", "line", F.coalesce(text, F.lit("")).alias("text"), verdict.alias("_p")
    ).select("seq", "source", "line", "text", *[F.col("_p")[c].alias(c) for c in VERDICT_COLUMNS])
