"""Stage 1 in the JVM for the lines whose parse is certain: exact by construction.

A line takes this path only when one strict whole-line pattern proves what ``parse_line``
would make of it: the compact shape pfscope's writers print (``json.dumps(record,
separators=(",", ":"))``, keys in the writer's order, no ``derived``) of a ``receive`` or a
``change`` line, where

- every string is printable ASCII without ``"``, ``'`` or ``\\`` (its JSON text is the string
  itself, and Python's ``repr`` is the string in single quotes);
- every integer is 1-18 digits without a leading zero (so within a 64-bit long), ``cn`` >= 1;
- the timestamp is ``YYYY-MM-DDTHH:MM:SSZ`` with a month, day, hour, minute and second in
  range, a year >= 1 and a day that exists in its month (leap years as the proleptic Gregorian
  calendar of ``datetime``), converted to epoch microseconds by integer arithmetic;
- the store is one of the topology's (a literal set), the FID already upper case (normalised);
- ``op`` one of the three operations; ``op``, ``item`` and ``bytes`` optional, in that order.

Such a line is valid and its fields are fixed by the pattern, so one ``from_json`` with an
explicit schema reads them (types cannot differ from the text), and ``key`` is built as the
``repr`` of the replay's key tuple. Every other line (every reject, every unusual spelling,
``send`` lines, whose CN sets would need canonical text proved) goes to ``parse_line``
unchanged. ``tests/spark/test_fastparse.py`` holds the two paths equal line by line.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from .model.events import OPS
from .model.topology import Topology

#: printable ASCII without ``"``, ``'`` and ``\``: JSON and ``repr`` both leave it as it is
SAFE = r"[ !#-&(-\[\]-~]"
_TS = r"[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]Z"
_CN = r"[1-9][0-9]{0,17}"
_N0 = r"(?:0|[1-9][0-9]{0,17})"
_FID = r"[0-9A-F]{1,16}-[0-9A-F]{1,16}"
_OP = "|".join(OPS)
#: the whole line (``\A`` and ``\z``: Java's ``$`` would also match before a final line terminator)
LINE_RE = (
    rf'\A\{{"ts":"{_TS}","store":"{SAFE}+","kind":"(?:'
    rf'receive","msg":"{SAFE}+"'
    rf'|change","fid":"{_FID}","cn":{_CN}(?:,"op":"(?:{_OP})")?(?:,"item":"{SAFE}*")?(?:,"bytes":{_N0})?'
    r")\}\z"
)
#: the fields the pattern admits; their types are certain once it matched
SCHEMA = "ts string, store string, kind string, fid string, cn long, op string, item string, bytes long, msg string"
#: where the fixed prefix ``{"ts":"...","store":"`` puts the timestamp and the store (1-based)
_TS_AT, _STORE_AT = 8, 39
_DAYS_BEFORE_MONTH = (0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334)
_DAYS_0001_TO_1970 = 719_162


def _ts_parts(ts: Column) -> tuple[Column, ...]:
    def part(start: int, n: int) -> Column:
        # try_cast: the condition is not short-circuited (common parts are computed first)
        return F.substring(ts, start, n).try_cast("int")

    return part(1, 4), part(6, 2), part(9, 2), part(12, 2), part(15, 2), part(18, 2)


def _leap(y: Column) -> Column:
    return ((y % 4 == 0) & (y % 100 != 0)) | (y % 400 == 0)


def ts_valid(ts: Column) -> Column:
    """A timestamp the pattern admitted names a real instant: year >= 1, the day in its month."""
    y, mo, d, *_ = _ts_parts(ts)
    days_in_month = (
        F.when(mo == 2, F.when(_leap(y), 29).otherwise(28))
        .when(mo.isin(4, 6, 9, 11), 30)
        .otherwise(31)
    )
    return (y >= 1) & (d <= days_in_month)


def ts_micros(ts: Column) -> Column:
    """Epoch microseconds of a valid ``YYYY-MM-DDTHH:MM:SSZ``, as ``parse_ts`` gives them."""
    y, mo, d, h, mi, s = _ts_parts(ts)
    y1 = y.cast("long") - 1
    before = F.element_at(F.array(*[F.lit(n) for n in _DAYS_BEFORE_MONTH]), mo)
    days = (
        y1 * 365 + F.floor(y1 / 4) - F.floor(y1 / 100) + F.floor(y1 / 400)  # exact: y1 < 10,000
        + before + F.when(_leap(y) & (mo > 2), 1).otherwise(0) + d - 1 - _DAYS_0001_TO_1970
    )
    return (days * 86_400 + h * 3_600 + mi * 60 + s) * 1_000_000


def fast_condition(text: Column, topo: Topology) -> Column:
    """True exactly for the lines this path parses (never null: a null text is false)."""
    store = F.substring_index(F.substring(text, _STORE_AT, 1 << 30), '"', 1)
    ts = F.substring(text, _TS_AT, 20)
    return F.coalesce(
        text.rlike(LINE_RE) & store.isin(*sorted(topo.stores)) & ts_valid(ts),
        F.lit(False),
    )


def _q(s: Column) -> Column:
    """``repr`` of a string the pattern admitted (``None`` for null)."""
    return F.coalesce(F.concat(F.lit("'"), s, F.lit("'")), F.lit("None"))


def _n(n: Column) -> Column:
    return F.coalesce(n.cast("string"), F.lit("None"))


def read_json(text: Column) -> Column:
    """One ``from_json`` of an admitted line with the schema the pattern fixed. An option (the
    default mode) keeps Spark from splitting the read into one ``from_json`` per field (its JSON
    optimisation applies to a read without options): each line is parsed once."""
    return F.from_json(text, SCHEMA, {"mode": "PERMISSIVE"})


#: the parsed columns the fast path fills (``reading.PARSED_DDL``'s names; the others are null)
FILLED = ("key", "ts", "store", "kind", "fid", "cn", "op", "item", "bytes", "msg", "derived")


def fast_rows(df: DataFrame) -> DataFrame:
    """``df`` with a struct column ``j`` (``read_json``; null where the line was not admitted)
    gets the columns ``FILLED`` as ``f_<name>`` in place of ``j``. The JSON read and the time
    are columns of their own steps, so each is computed once per line (a nested expression would
    be repeated in every column that reads it)."""
    rest = [c for c in df.columns if c != "j"]
    fields = ("ts", "store", "kind", "fid", "cn", "op", "item", "bytes", "msg")
    timed = df.select(*rest, *[F.col("j")[f].alias(f"f_{f}") for f in fields])
    timed = timed.select(*rest, *[c for c in timed.columns if c.startswith("f_") and c != "f_ts"],
                         ts_micros(F.col("f_ts")).alias("f_ts"))

    def c(f: str) -> Column:
        return F.col(f"f_{f}")

    head = [F.lit("('"), c("kind"), F.lit("', "), c("ts").cast("string"), F.lit(", "), _q(c("store")), F.lit(", ")]
    change_key = F.concat(*head, _q(c("fid")), F.lit(", "), _n(c("cn")), F.lit(", "), _q(c("op")), F.lit(", "),
                          _q(c("item")), F.lit(", "), _n(c("bytes")), F.lit(", ())"))
    receive_key = F.concat(*head, _q(c("msg")), F.lit(")"))
    key = F.when(c("kind") == "change", change_key).when(c("kind") == "receive", receive_key)
    return timed.select("*", key.alias("f_key"), F.when(c("kind").isNotNull(), F.array()).cast("array<string>")
                        .alias("f_derived"))
