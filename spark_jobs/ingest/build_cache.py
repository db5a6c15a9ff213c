"""The message steps' rows kept from run to run, so that a share grown by new exports builds again
only the message groups the new records reach.

Every row of the two message steps is its group's own (``exchange.grouped``), and a group's rows
depend only on its records, the servers the share knows (step 1), each server's store and the
REPLID table (step 3). A run's work folder of the build steps (``rows/<run>-build``) keeps those
rows (``groups/``, ``messages/``) as a *layer*, with the message keys the run built (``touched/``).
A later run builds the groups the new files' records belong to, and takes every other group's rows
from the layers: from each layer, its rows whose key no later layer (nor this run) built again,
their places (``g_file``: a file's index in that run's share) moved to this run's.

The layers are used only while what the rows depend on holds: the same ``--replids``,
``--topology`` and ``--strict``, no file gone from the share, the files in the same order and
named as they were, the same known servers, then (once
step 1 and 2 are done) the same stores and REPLID table. Otherwise the build runs whole, and its
folder is the one layer the next run starts from. A run that would keep ``MAX_LAYERS`` writes its
rows and those it took from the layers as one layer instead (``compacts``), whole.

Step 4 is kept the same way, by folder: a folder's lines depend only on its messages, its FID and
its replicas (the hierarchy's: every store). A layer keeps its rows of step 4 (``derived/``) and
the folders it derived, each with the FID and replicas it used (``folders/``); a later run derives
again the folders of the messages it builds again (where they were and where they are) and those
whose FID or replicas changed (``folders_again``), and takes the others' rows from the layers,
their places in the log moved to this run's share.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from pfscope.spark_jobs.exchange.identity import ReplidMap

#: layers kept at most: the run that would make this many writes every row as one layer instead
#: (each layer costs a read and a join in every run after)
MAX_LAYERS = 8
KEY = "msg_key"
FOLDER = "fkey"  # a folder's key in step 4's rows (``folder_key``)


@dataclass
class Layer:
    """The rows of one run's build steps (message groups, messages, folders), or those of several
    runs written as one (``compacts``)."""

    dataset: str  # its build folder, under the state's rows/
    #: the share's file keys in that run's order (its ``g_file`` is an index here; "" for a file that
    #: could not be read, which no row names), and each file as that run named it (its rows say so)
    files: list[str]
    sources: list[str]
    whole: bool = False  # every group and folder there (no ``touched/``)


@dataclass
class BuildCache:
    """What the layers' rows were built with, and the layers, oldest first."""

    given: str  # ``--replids``, ``--topology`` and ``--strict`` (``incremental.built_from``)
    known: list[str]  # the servers the share knew (step 1)
    own: dict[str, str]  # each server's store (step 3)
    stores: list[list[Any]]  # the REPLID table: server, REPLID, store (step 3)
    layers: list[Layer] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "given": self.given,
            "known": self.known,
            "own": self.own,
            "stores": self.stores,
            "layers": [
                {"dataset": x.dataset, "files": x.files, "sources": x.sources, "whole": x.whole}
                for x in self.layers
            ],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BuildCache:
        layers = [
            Layer(x["dataset"], list(x["files"]), list(x["sources"]), bool(x["whole"]))
            for x in data["layers"]
        ]
        return cls(data["given"], list(data["known"]), dict(data["own"]), list(data["stores"]), layers)


def compacts(cache: BuildCache | None) -> bool:
    """Whether an incremental run on ``cache`` writes its rows and the layers' as one layer."""
    return cache is not None and len(cache.layers) + 1 >= MAX_LAYERS


def stores_of(rmap: ReplidMap) -> list[list[Any]]:
    """The REPLID table as the messages use it: each (server, REPLID)'s store."""
    keys = sorted(rmap.given.keys() | rmap.inferred.keys())
    return [[s, r, rmap.store(s, r)] for s, r in keys]


def why_whole(
    cache: BuildCache | None, given: str, files: list[str], sources: list[str], known: set[str]
) -> str:
    """Why the build must run whole over this share (``files``: its keys in order, ``sources``: its
    files as named), or "" when the layers can be used: a group's rows hold its records' order
    (which copy of a record is kept, which comes first) and their files' names."""
    if cache is None or not cache.layers:
        return "no earlier build"
    if cache.given != given:
        return "--replids, --topology or --strict changed"
    index = {k: i for i, k in enumerate(files)}
    source = dict(zip(files, sources, strict=True))
    for x in cache.layers:
        kept = [(k, s) for k, s in zip(x.files, x.sources, strict=True) if k]
        if any(k not in index for k, _ in kept):
            return "a file left the share"
        at = [index[k] for k, _ in kept]
        if at != sorted(at):
            return "the files are in another order"
        if any(source[k] != s for k, s in kept):
            return "the files are named otherwise (--logs)"
    if sorted(known) != cache.known:
        return "the share names new servers"
    return ""


def kept_rows(
    spark: SparkSession,
    rows_root: str,
    cache: BuildCache,
    kind: str,
    schema: T.StructType,
    files: list[str],
    last: DataFrame,
    *,
    key: str = KEY,
    move: Callable[[DataFrame, list[tuple[int, int]], T.StructType], DataFrame] | None = None,
) -> DataFrame | None:
    """Each layer's rows of ``kind`` (``groups``, ``messages`` or ``derived``) of the groups neither
    a later layer nor this run built (``last``: ``last_built``'s table of ``key``), their places
    in this run's share (``files``: its file keys in order), moved by ``move`` (by default:
    ``g_file``)."""
    if not cache.layers:
        return None
    index = {k: i for i, k in enumerate(files)}
    last = F.broadcast(last)
    got: DataFrame | None = None
    for n, layer in enumerate(cache.layers):
        rows = spark.read.schema(schema).parquet(f"{rows_root}/{layer.dataset}/{kind}")
        rows = rows.where(F.col(key).isNotNull()).join(last, key, "left")
        rows = rows.where(F.col(LAST).isNull() | (F.col(LAST) <= n)).drop(LAST)
        pairs = [(i, index[k]) for i, k in enumerate(layer.files) if k]
        rows = (move or _moved)(rows, pairs, schema)
        got = rows if got is None else rows.unionByName(got)  # the latest layer's first
    return got


#: the column of ``last_built``: the newest layer that built a key
LAST = "_last"


def last_built(
    spark: SparkSession,
    rows_root: str,
    cache: BuildCache,
    touched: DataFrame,
    *,
    key: str = KEY,
    built: str = "touched",
) -> DataFrame:
    """Each key a layer (but a whole one: it built every key; the others' ``built`` hold the keys
    they built) or this run (``touched``: one column, ``key``) built, with the newest to build it
    (``LAST``: its index in ``cache.layers``, this run's after them), held in the driver: every
    layer's join reads this one table, so a query broadcasts it once, without a job to read and
    aggregate the layers' keys (a job each, in each of the build's dozen queries). Made once per
    step's keys, for every query that reads the layers' rows of them (``kept_rows``)."""
    marks = touched.select(key, F.lit(len(cache.layers)).alias(LAST))
    for n, layer in enumerate(cache.layers):
        if not layer.whole:
            keys = spark.read.schema(f"{key} string").parquet(f"{rows_root}/{layer.dataset}/{built}")
            marks = marks.unionByName(keys.select(key, F.lit(n).alias(LAST)))
    last = marks.groupBy(key).agg(F.max(LAST).alias(LAST)).toArrow()
    return spark.createDataFrame(last.combine_chunks())  # a local relation, sent as Arrow


def _moved(rows: DataFrame, pairs: list[tuple[int, int]], schema: T.StructType) -> DataFrame:
    """``rows`` with their file index (``g_file``, and a reject's place, which starts with it) that
    of this run's share (``pairs``: each file's index then and now: every file a row names is in
    this run's share, or ``why_whole`` would have said so), by an expression: a join with the
    pairs would be one more broadcast, so one more Spark job, in each query reading the layer."""
    to = F.create_map(*[F.lit(x) for pair in pairs for x in pair]) if pairs else None
    now = (F.try_element_at(to, F.col("g_file")) if to is not None else F.lit(None)).cast("long")
    sort = F.when(
        F.col("sort").isNotNull(),
        F.concat(F.array(now), F.slice(F.col("sort"), 2, F.size(F.col("sort")))),
    )
    moved = rows.withColumn("sort", sort).withColumn("g_file", now)
    return moved.select(*schema.fieldNames())


def folder_key() -> Column:
    """A folder's key (``fs``, ``fg``) as one string, "" for the hierarchy (no folder)."""
    fg = F.col("fg").cast("string")
    return F.when(F.col("fs").isNull(), F.lit("")).otherwise(F.concat_ws("\x1f", F.col("fs"), fg))


def moved_in_place(rows: DataFrame, pairs: list[tuple[int, int]], schema: T.StructType) -> DataFrame:
    """Step 4's ``rows`` with the file index in their place in the log (``derive.Key``: a line's
    4th value, a reject's 2nd, a statistic's 5th when counted at a line) that of this run's share."""
    if all(was == now for was, now in pairs):
        return rows
    to = F.create_map(*[F.lit(x) for pair in pairs for x in pair])
    out, sort = F.col("out"), F.col("sort")
    at = (  # 1-based, as ``slice`` and ``element_at`` count
        F.when(out == "line", 4)
        .when(out == "reject", 2)
        .when((out == "stat") & (sort[0] == 3), 5)
        .otherwise(0)
    )
    # slices rather than ``transform``: a lambda over each element is not compiled
    pos = F.greatest(at, F.lit(1))  # every branch valid, though only rows with a place use it
    moved = F.concat(
        F.slice(sort, F.lit(1), pos - 1),
        F.array(F.element_at(to, F.element_at(sort, pos))),
        F.slice(sort, pos + 1, F.greatest(F.size(sort) - pos, F.lit(0))),
    )
    return rows.withColumn("sort", F.when(at > 0, moved).otherwise(sort)).select(*schema.fieldNames())


def folders_again(
    spark: SparkSession,
    rows_root: str,
    cache: BuildCache,
    touched: DataFrame,
    built_now: DataFrame,
    inputs: DataFrame,
) -> DataFrame:
    """The folders step 4 derives again, with their inputs now ("" for a folder gone): those of
    the messages built again, where they were (the layers' rows of the ``touched`` keys) and where
    they are (``built_now``: this run's message rows), and those whose inputs (``inputs``:
    ``FOLDER`` and its FID and replicas as text) are not those the latest layer to derive them used."""
    msg = F.col("out") == "msg"
    keys = built_now.where(msg).select(folder_key().alias(FOLDER))
    said: DataFrame | None = None
    for n, layer in enumerate(cache.layers):
        at = f"{rows_root}/{layer.dataset}"
        old = spark.read.schema(f"out string, fs string, fg long, {KEY} string").parquet(f"{at}/messages")
        old = old.where(msg).join(F.broadcast(touched), KEY, "left_semi")
        keys = keys.unionByName(old.select(folder_key().alias(FOLDER)))
        rows = spark.read.schema(f"{FOLDER} string, inputs string").parquet(f"{at}/folders")
        rows = rows.withColumn("layer", F.lit(n))
        said = rows if said is None else said.unionByName(rows)
    assert said is not None  # an incremental build has layers
    was = said.groupBy(FOLDER).agg(F.max_by("inputs", "layer").alias("was"))
    was = was.withColumn("was", F.when(F.col("was") != "", F.col("was")))  # "": a folder gone then
    changed = (
        inputs.join(was, FOLDER, "full_outer").where(~F.col("inputs").eqNullSafe(F.col("was"))).select(FOLDER)
    )
    again = keys.unionByName(changed).distinct()
    return again.join(inputs, FOLDER, "left").select(FOLDER, F.coalesce("inputs", F.lit("")).alias("inputs"))
