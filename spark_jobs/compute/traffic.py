"""The ``messages`` table (one row per message and recipient) and the ``transits`` it shows (per
sender and recipient, ``rules.transit``): DataFrame -> DataFrame, for the full run and the refresh.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pfscope.spark_jobs.model.tables import TABLES

#: the columns of ``messages`` a pair's transits are read from
TRANSIT_COLUMNS = ("sender", "recipient", "sent_at", "processed_at")


def cnset_count_sql(column: str) -> str:
    """A CN set's count from its canonical text, in SQL: the sum of its ranges' lengths (an
    origin's name has no ``:``; a range is ``lo`` or ``lo-hi``; the empty set is the empty text)."""
    ranges = f"flatten(transform(split({column}, ';'), s -> split(substring_index(s, ':', -1), ',')))"
    length = "CAST(substring_index(r, '-', -1) AS BIGINT) - CAST(substring_index(r, '-', 1) AS BIGINT) + 1"
    return (
        f"CASE WHEN coalesce({column}, '') = '' THEN CAST(0 AS BIGINT)"
        f" ELSE aggregate({ranges}, CAST(0 AS BIGINT), (n, r) -> n + {length}) END"
    )


def messages_table(events: DataFrame) -> DataFrame:
    """One row per message sent by the as-of and recipient, with when (if ever, by the as-of)
    the recipient processed it: the sends, one row per store in ``to``, and their receives."""
    sends = events.filter("kind = 'send'").selectExpr(
        "msg",
        "fid",
        "store AS sender",
        "type",
        "ts AS sent_at",
        "explode(`to`) AS recipient",
        "coalesce(changes, '') AS changes",
        "cnset",
    )
    receives = events.filter("kind = 'receive'").selectExpr("msg", "store AS recipient", "ts AS processed_at")
    return sends.join(receives, ["msg", "recipient"], "left").selectExpr(
        "msg",
        "fid",
        "sender",
        "type",
        "timestamp_micros(sent_at) AS sent_at",
        "recipient",
        "timestamp_micros(processed_at) AS processed_at",
        "changes",
        f"{cnset_count_sql('changes')} AS changes_count",
        "cnset",
        f"{cnset_count_sql('cnset')} AS cnset_count",
    )


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


def transits_table(messages: DataFrame) -> DataFrame:
    """Per sender and recipient, the messages the recipient processed by the as-of: how many, the
    median transit (the lower middle one, as ``rules.transit.median_transit``) and the longest, in
    seconds. A pair's transits are collected and sorted in one task: a pair's messages are those of
    two stores, a few hundred thousand at most."""
    transits = messages.filter("processed_at IS NOT NULL").selectExpr(
        "sender", "recipient", "unix_micros(processed_at) - unix_micros(sent_at) AS transit"
    )
    return (
        transits.groupBy("sender", "recipient")
        .agg(
            F.count("transit").alias("messages"),
            F.sort_array(F.collect_list("transit")).alias("sorted"),
            F.max("transit").alias("longest"),
        )
        .selectExpr(
            "sender",
            "recipient",
            "messages",
            "element_at(sorted, CAST((messages - 1) DIV 2 + 1 AS INT)) / 1000000 AS median_transit_s",
            "longest / 1000000 AS longest_transit_s",
        )
    )


def all_messages(
    spark: SparkSession,
    earlier_final: list[Path],
    this_run: DataFrame,
    kept: Callable[[DataFrame], DataFrame] = lambda df: df,
) -> DataFrame:
    """The whole ``messages`` table of a refresh, for its transits: the earlier runs' final rows
    (processed messages, which never change; their files), those ``kept`` keeps (a file read
    again whole brings its messages anew), and this run's rows."""
    cols = list(TRANSIT_COLUMNS)
    mine = this_run.select(*cols)
    if not earlier_final:
        return mine
    return kept(spark.read.parquet(*map(str, earlier_final))).select(*cols).unionByName(mine)
