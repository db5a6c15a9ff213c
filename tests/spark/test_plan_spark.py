"""A plan played on Spark (``compute.plan_spark``, ``pfscope plan --engine spark``) is the plan
played in plain Python: every folder's baseline and planned forecast rows, requests, risks and
traffic, a decommission's times, and the command's JSON."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from pyspark.sql import SparkSession

from pfscope.app.cli import main
from pfscope.spark_jobs.compute.plan_engine import (
    AUTO_SPARK_FOLDERS,
    PlanEngine,
    choose_engine,
    make_plan_with,
)
from pfscope.spark_jobs.compute.plan_spark import play_plan_spark, safe_to_stop
from pfscope.spark_jobs.compute.planning import (
    PlanRun,
    folder_starts,
    involved_folders,
    make_plan,
    open_run,
    with_backups,
)
from pfscope.spark_jobs.model.forecast.actions import Restore
from pfscope.spark_jobs.model.forecast.plan import parse_plan
from pfscope.spark_jobs.model.forecast.planner import PlayedPlan, play_plan
from pfscope.spark_jobs.model.timeutil import format_ts
from tests.published_runs import published

STORE = "PFDUB01"


@pytest.fixture(scope="module")
def demo() -> Path:
    return published("demo")


def _fids(run: PlanRun) -> tuple[str, str]:
    """A folder the store is on the list of, and one it is not."""
    rows = ds.dataset(str(run.path / "folders"), format="parquet").to_table(columns=["fid", "replicas"])
    lists = sorted((r["fid"], r["replicas"] or []) for r in rows.to_pylist())
    on = next(fid for fid, replicas in lists if STORE in replicas and len(replicas) > 1)
    off = next(fid for fid, replicas in lists if STORE not in replicas and replicas)
    return on, off


def _plans(demo: Path) -> dict[str, list[str]]:
    run = open_run(demo)
    on, off = _fids(run)
    taken = format_ts(run.as_of - 6 * 3600 * 1_000_000)  # inside the log, six hours before the as-of
    return {
        "maintenance": [f"down {STORE} at +2h until +8h"],
        "down for good": [f"down {STORE}"],
        "remove and add": [f"remove {STORE} from {on} at +1h", f"add {STORE} to {off}"],
        # PFDUB02's content is safe a while after it comes off its lists; PFDUB01's never is
        "decommission": ["decommission PFDUB02"],
        "decommissions and down": [
            "decommission PFDUB02 at +1h",
            "decommission PFDUB03",
            f"decommission {STORE} at +2h",
            "down PFRED01 at +3h until +9h",
        ],
        "decommission at once": ["decommission PFDUB02 immediately"],
        "restore": [f"restore {STORE} from {taken} at +1h"],
    }


def _same(spark_played: PlayedPlan, python_played: PlayedPlan) -> None:
    assert list(spark_played.baseline) == list(python_played.baseline)
    for fid, base in python_played.baseline.items():
        for name in ("baseline", "planned"):
            ours, theirs = getattr(spark_played, name)[fid], getattr(python_played, name)[fid]
            assert ours.forecast == theirs.forecast, (name, fid)
            assert ours.requests == theirs.requests, (name, fid)
            assert ours.risks == theirs.risks, (name, fid)
            assert ours.traffic == theirs.traffic, (name, fid)
            assert ours.removed == theirs.removed, (name, fid)
        assert base is not None
    assert spark_played.played == python_played.played
    assert spark_played.decommissioned == python_played.decommissioned
    assert spark_played == python_played


def test_spark_plays_every_plan_as_plain_python(spark: SparkSession, demo: Path) -> None:
    run = open_run(demo)
    for name, texts in _plans(demo).items():
        actions = [
            with_backups(run, a) if isinstance(a, Restore) else a for a in parse_plan(texts, run.known)
        ]
        fids = involved_folders(run, actions)
        python = play_plan(run.org, folder_starts(run, fids), run.as_of, run.transits, actions)
        assert python.baseline, name  # not vacuous: the plan touches folders
        _same(play_plan_spark(spark, run, actions, fids), python)
        times = {d.store: (d.removed_at, d.down_at) for d in python.decommissioned}
        if name == "decommission":  # not vacuous: the first pass found a later time
            removed_at, down_at = times["PFDUB02"]
            assert down_at is not None and down_at > removed_at
        if name == "decommission at once":
            assert times["PFDUB02"][1] == times["PFDUB02"][0]
        if name == "decommissions and down":
            assert len(times) == 3 and times[STORE][1] is None
        if name == "down for good":
            assert any(f.risks for f in python.planned.values())  # risks compared, not empty
        if name == "remove and add":
            assert any(f.traffic for f in python.planned.values())


def test_without_the_shortcut_too(spark: SparkSession, demo: Path) -> None:
    """The baseline played for every folder (``play_plan``'s ``shortcut`` False) is the same on Spark."""
    run = open_run(demo)
    actions = parse_plan([f"down {STORE} at +2h until +8h", "decommission PFDUB02"], run.known)
    fids = involved_folders(run, actions)
    python = play_plan(run.org, folder_starts(run, fids), run.as_of, run.transits, actions, shortcut=False)
    assert python.baseline and python.decommissioned
    _same(play_plan_spark(spark, run, actions, fids, shortcut=False), python)


def test_a_plan_is_made_the_same_either_way(spark: SparkSession, demo: Path) -> None:
    """The plan ``make_plan`` makes, suggestions included (tried on the folders at issue)."""
    texts = ["decommission PFRED03"]
    reference = make_plan(demo, texts)
    python, engine = make_plan_with(demo, texts, PlanEngine("python"))
    assert engine == "python"
    on_spark, engine = make_plan_with(
        demo, texts, PlanEngine("auto", conf=("spark.sql.shuffle.partitions=4",))
    )
    assert engine == "spark"
    assert not reference.result.safe and reference.suggestions  # not vacuous
    for made in (python, on_spark):
        assert made.played == reference.played and made.result == reference.result
        assert made.suggestions == reference.suggestions and made.unsuggested == reference.unsuggested


def _pfscope(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    err = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    assert not err.getvalue(), err.getvalue()
    return code, out.getvalue()


def test_the_command_prints_the_same_json_on_spark(spark: SparkSession, demo: Path) -> None:
    for actions, forms in (
        (["decommission PFDUB02", f"down {STORE} at +2h"], [["--json"]]),
        (["decommission PFRED03"], [["--json"], []]),  # with suggestions; and as text
    ):
        flags = ["plan", "--data", str(demo), *(f for a in actions for f in ("--action", a))]
        for form in forms:
            code_python, said_python = _pfscope(*flags, *form, "--engine", "python")
            code_spark, said_spark = _pfscope(*flags, *form, "--engine", "spark")
            assert said_spark == said_python and code_spark == code_python
            if form:
                said = json.loads(said_python)
                assert said["verdict"] == "not safe" and said["at_risk"]  # not vacuous: risks compared
                assert len(actions) > 1 or said["suggestions"]  # and suggestions


def test_auto_chooses_spark_for_a_spark_flag_or_many_folders() -> None:
    assert choose_engine(PlanEngine(), 5_000) == "python"
    assert choose_engine(PlanEngine(default_master="spark://x:7077"), 5_000) == "python"
    assert choose_engine(PlanEngine(), AUTO_SPARK_FOLDERS + 1) == "spark"
    assert choose_engine(PlanEngine(master="local[2]"), 1) == "spark"
    assert choose_engine(PlanEngine(conf=("a=b",)), 1) == "spark"
    assert choose_engine(PlanEngine("python", master="local[2]"), 50_000) == "python"


def test_the_tasks_answers_give_the_decommission_s_time() -> None:
    assert safe_to_stop(10, []) == 10
    assert safe_to_stop(10, [(None, False), (25, False), (12, False)]) == 25
    assert safe_to_stop(10, [(25, False), (None, True)]) is None
