"""Where ``pfscope plan`` plays a plan: in this process (``forecast.planner``, a store's folders in a
few seconds) or on Spark like the job (``plan_spark``, a plan over the whole organisation).

The JVM's start costs more than one store's plays; past :data:`AUTO_SPARK_FOLDERS` touched folders
the plays, not the start, are what cost, and they spread over the cluster's cores. Either way the
plan made is the same (``tests/spark/test_plan_spark.py``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pfscope.spark_jobs.compute.planning import Plan, PlanRun, make_plan, play_locally
from pfscope.spark_jobs.compute.state import STATE_DIR
from pfscope.spark_jobs.model.forecast.actions import Action
from pfscope.spark_jobs.model.forecast.planner import PlayedPlan

#: ``--engine auto`` plays on Spark when the plan touches more folders than this (one store's
#: 5,000 folders stay in this process)
AUTO_SPARK_FOLDERS = 20_000
ENGINES = ("auto", "spark", "python")


@dataclass(frozen=True)
class PlanEngine:
    """How ``pfscope plan`` was asked to play (its flags, and the environment's master)."""

    engine: str = "auto"
    master: str | None = None
    conf: tuple[str, ...] = ()
    #: the master when none is given (``PFSCOPE_SPARK_MASTER``): it does not choose Spark
    default_master: str | None = None


def choose_engine(how: PlanEngine, folders: int) -> str:
    """``spark`` or ``python`` (see ``--engine``): a Spark flag or more than
    :data:`AUTO_SPARK_FOLDERS` touched folders choose Spark."""
    if how.engine != "auto":
        return how.engine
    if how.master or how.conf or folders > AUTO_SPARK_FOLDERS:
        return "spark"
    return "python"


def make_plan_with(
    data_dir: str | os.PathLike[str], texts: Sequence[str], how: PlanEngine
) -> tuple[Plan, str]:
    """``planning.make_plan``, played where ``how`` says: the plan and the engine that played it
    (suggestions, for a plan that is not safe, are tried in this process on the folders at issue)."""
    chosen: list[str] = []

    def play(run: PlanRun, actions: list[Action], fids: set[str]) -> PlayedPlan:
        chosen.append(choose_engine(how, len(fids)))
        if chosen[-1] == "python":
            return play_locally(run, actions, fids)
        return _on_spark(run, actions, fids, how)

    return make_plan(data_dir, texts, play=play), chosen[0]


def _on_spark(run: PlanRun, actions: list[Action], fids: set[str], how: PlanEngine) -> PlayedPlan:
    import sys

    from pyspark.sql import SparkSession

    from pfscope.spark_jobs.compute.plan_spark import play_plan_spark
    from pfscope.spark_jobs.runtime.config import parse_conf
    from pfscope.spark_jobs.runtime.session import spark_session

    conf = parse_conf(list(how.conf))  # a bad --conf is one line before the JVM starts
    # a session the caller built (a notebook, the tests) is used as it is
    spark = SparkSession.getActiveSession() or spark_session(
        master=how.master or how.default_master,
        app_name="pfscope-plan",
        conf=conf,
        progress=sys.stderr.isatty(),
        input_bytes=_state_bytes(run.path),
    )
    return play_plan_spark(spark, run, actions, fids)


def _state_bytes(run: Path) -> int:
    """The size of the run's fold states: what the plays read (it sizes the session)."""
    return sum(f.stat().st_size for f in (run / STATE_DIR / "folds").glob("*.parquet"))
