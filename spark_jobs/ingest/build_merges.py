"""What the message groups say together, merged in SQL from the rows each group wrote.

Each build step's worker writes rows that are its group's own (``exchange.grouped``): a group's
hints, the servers it names, the folders it speaks of, its records. The reference finds each of
these over the whole share, the first in its order where one is taken; here each is an aggregate
over the groups' rows, the first by the group's place (``g_file``, ``g_rec``, then ``seq``). A
group's rows depend on that group only, so the same aggregate holds over any set of groups.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F

from pfscope.spark_jobs.exchange.messages import Folders
from pfscope.spark_jobs.exchange.translate import FolderKey, Hint, Link

#: a row's place in the reference's order: its group's (the group's first record), then its own
GROUP = ("g_file", "g_rec")
PLACE = (*GROUP, "seq")


def _first(value: Any, has: str, place: tuple[str, ...] = PLACE) -> Any:
    """``value`` of the first row by ``place`` whose column ``has`` is not null (a place holds one
    row per key)."""
    return F.min_by(value, F.when(F.col(has).isNotNull(), F.struct(*place)))


def distinct_links(groups: DataFrame) -> list[Link]:
    """Every link any message shows, once, sorted."""
    got = groups.where(F.col("out") == "link").select("s", "a", "r", "b").distinct().collect()
    return sorted((r["s"], r["a"], r["r"], r["b"]) for r in got)


def first_hints(groups: DataFrame) -> list[Hint]:
    """Each hint once, in the order of its first place (a hint repeated later changes nothing)."""
    got = (
        groups.where(F.col("out") == "hint")
        .groupBy("s", "a", "r")
        .agg(F.min(F.struct(*PLACE)).alias("first"))
        .collect()
    )
    return [(r["s"], r["a"], r["r"]) for r in sorted(got, key=lambda r: tuple(r["first"]))]


def servers_named(groups: DataFrame) -> set[str]:
    """The servers and senders of the messages and the servers their events' Server lines name."""
    got = groups.where(F.col("out") == "servers").select(F.explode("names").alias("s")).distinct()
    return {r["s"] for r in got.collect()}


def folders_said(made: DataFrame) -> tuple[Folders, set[FolderKey]]:
    """The folders the messages speak of (each one's first path and first parent, the stores it
    was seen at) and the folders of the messages."""
    rows = (
        made.where(F.col("out") == "folder")
        .groupBy("fs", "fg")
        .agg(
            _first("text", "text", GROUP).alias("path"),
            _first(F.struct("ps", "pg"), "ps", GROUP).alias("parent"),
            F.array_distinct(F.flatten(F.collect_list("stores"))).alias("stores"),
        )
        .collect()
    )
    folders = Folders()
    for r in rows:
        k = (r["fs"], r["fg"])
        if r["path"] is not None:
            folders.paths[k] = r["path"]
        if r["parent"] is not None:
            folders.parents[k] = (r["parent"]["ps"], r["parent"]["pg"])
        if r["stores"]:
            folders.seen_at[k].update(r["stores"])
    msgs = made.where((F.col("out") == "msg") & F.col("fs").isNotNull()).select("fs", "fg").distinct()
    return folders, {(r["fs"], r["fg"]) for r in msgs.collect()}


def message_counts(made: DataFrame) -> list[int]:
    """The messages; those without an incoming event; those without an outgoing one."""
    r = (
        made.where(F.col("out") == "msg")
        .agg(
            F.count("*").alias("n"),
            F.count_if(~F.col("synthesized") & ~F.col("received")).alias("unreceived"),
            F.count_if("synthesized").alias("unsent"),
        )
        .first()
    )
    assert r is not None  # an aggregate without grouping has one row
    return [r["n"], r["unreceived"], r["unsent"]]


def first_sites(made: DataFrame) -> dict[str, str]:
    """Each server's site, as the first Server line naming both says."""
    got = (
        made.where((F.col("out") == "record") & F.col("s").isNotNull())
        .groupBy("s")
        .agg(_first("site", "site").alias("site"))
        .collect()
    )
    return {r["s"]: r["site"] for r in got}


def version_flags(made: DataFrame) -> dict[str, list[bool]]:
    """Per server: any outgoing event; the version hints of its outgoing events; of all its events
    (``inferred.version_hints``, three each)."""
    out = F.col("direction") == "out"
    flags = [F.bool_or(out)]
    flags += [F.bool_or(out & F.col("flags")[i]) for i in range(3)]
    flags += [F.bool_or(F.col("flags")[i]) for i in range(3)]
    got = made.where(F.col("out") == "record").groupBy("server").agg(F.array(*flags).alias("flags")).collect()
    return {r["server"]: list(r["flags"]) for r in got}


def used_counts(made: DataFrame, late: DataFrame | None) -> list[Any]:
    """The records used (not rejected by any step; ``late``: those the derivation rejected), per
    server, direction and event type, each with its count and first place, in that order."""
    used = made.where((F.col("out") == "record") & F.col("used"))
    if late is not None:
        used = used.join(F.broadcast(late), ["source", "record"], "left_anti")
    got = (
        used.groupBy("server", "direction", "text")
        .agg(F.count("*").alias("n"), F.min(F.struct(*PLACE)).alias("first"))
        .collect()
    )
    return sorted(got, key=lambda g: tuple(g["first"]))


def rejects(groups: DataFrame, made: DataFrame) -> list[Any]:
    """The records the message steps rejected (few), each with its phase and place."""
    cols = ["phase", "sort", "source", "record", "record_id", "server", "event_id", "time_text", "reason"]
    got = groups.where(F.col("out") == "reject").select(*cols)
    return got.unionByName(made.where(F.col("out") == "reject").select(*cols)).collect()


def derived_stats(derived: DataFrame) -> list[Row]:
    """Step 4's statistics over its folders: each one's count (``n``) and where it was first
    counted (``first``), from a row per statistic and folder."""
    rows = derived.where(F.col("out") == "stat").groupBy("text")
    return rows.agg(F.sum("seq").alias("n"), F.min("sort").alias("first")).collect()
