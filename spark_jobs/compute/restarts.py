"""A refresh's part of a topology that grew (``state.topology_change``): the new start of the
folders it added or changed, and the folders table brought up to date with them and the fresh
events. The fold itself goes through the refresh's refolding of late lines' folders."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession

from pfscope.spark_jobs.compute.org_tables import folders_from, topology_folders, topology_lists
from pfscope.spark_jobs.compute.reading import sql_text
from pfscope.spark_jobs.model.topology import Topology


@dataclass(frozen=True)
class Starts:
    """The topology's start of some folders: their rows of the folders table (the hierarchy's:
    every store) and of ``replica_lists`` (``at`` null; ``ts`` here)."""

    folders: DataFrame
    lists: DataFrame


def topology_starts(spark: SparkSession, topo: Topology, fids: tuple[str, ...]) -> Starts:
    """As ``org_tables.folders_table`` and ``org_tables.replica_lists_table`` start them."""
    wanted = set(fids)
    return Starts(topology_folders(spark, topo, wanted), topology_lists(spark, topo, wanted))


def sql_list(values: tuple[str, ...] | list[str]) -> str:
    return ", ".join(sql_text(v) for v in values)


def refreshed_folders(
    old: DataFrame,
    fresh: DataFrame,
    replica_lists: DataFrame,
    restarted: tuple[str, ...] = (),
    seen: tuple[str, ...] = (),
) -> DataFrame:
    """The folders table of the earlier run brought up to date with the fresh events: folders
    first seen (and ``seen``: shown by earlier events), and the latest replica list and path of
    those with a fresh list change or a new start in the topology (``restarted``), among all
    their changes (a late one is not the latest) (``compute.folders_table``'s rules)."""
    changed = fresh.filter("kind = 'replicas'").selectExpr("fid")
    if restarted:
        changed = changed.unionByName(
            fresh.sparkSession.createDataFrame([(f,) for f in restarted], "fid string")
        )
    changed = changed.distinct()
    lists = (
        replica_lists.filter("at IS NOT NULL")
        .join(changed, "fid", "left_semi")
        .selectExpr("fid", "unix_micros(at) AS ts", "seq", "replicas", "path")
    )
    shown = fresh.select("kind", "fid")
    if seen:
        shown = shown.unionByName(
            fresh.sparkSession.createDataFrame([("change", f) for f in seen], "kind string, fid string")
        )
    return folders_from(old, shown, lists)
