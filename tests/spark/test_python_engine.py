"""``compute --engine python`` against the Spark job: the same log published by each holds the
same tables in the same types, fold states the planner plays to the same plan, and the same
forecast record; and runs of either engine follow runs of the other."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest

from pfscope.app.cli import main
from pfscope.spark_jobs.compute.entry import publish_and_report
from pfscope.spark_jobs.compute.flags import JobSettings
from pfscope.spark_jobs.compute.writing import FOLDER_TABLES
from pfscope.spark_jobs.model.tables import PUBLISHED
from pfscope.spark_jobs.model.timeutil import format_ts, parse_ts
from pfscope.spark_jobs.published.runs import read_latest
from tests.spark.table_compare import assert_published_equals_replay, ordered
from tests.spark.test_compute import SMALL_SCALE, write_case

CASES = {"worked-example": ("worked-example", 1, {}), "scale-seed-22": ("scale", 22, SMALL_SCALE)}


def compute(out: Path, log: Path, engine: str, as_of: str | None = None) -> str:
    """``pfscope compute`` of ``log`` (a folder of files, topology.json beside) into ``out``; what
    it printed."""
    said = io.StringIO()
    settings = JobSettings(
        topology=str(log / "topology.json"), events=(str(log),), out=str(out), as_of=as_of, engine=engine
    )
    with contextlib.redirect_stdout(said):
        assert publish_and_report(settings) == 0
    return said.getvalue()


def tables(out: Path) -> dict[str, Any]:
    """Every published table of ``out``'s run, as pyarrow reads it."""
    pointer = read_latest(out)
    assert pointer is not None
    return {t: ds.dataset(out / pointer["path"] / t).to_table() for t in PUBLISHED}


def plan(out: Path, *actions: str) -> dict[str, Any]:
    said = io.StringIO()
    args = ["plan", "--data", str(out), "--engine", "python", "--json"]
    with contextlib.redirect_stdout(said):
        main(args + [x for a in actions for x in ("--action", a)])
    result = json.loads(said.getvalue())
    result.pop("run_id")
    return dict(result)


@pytest.mark.parametrize("case", list(CASES))
def test_python_run_equals_spark_run(spark, tmp_path: Path, case: str) -> None:  # type: ignore[no-untyped-def]
    name, seed, options = CASES[case]
    (tmp_path / "log").mkdir()
    topo, _ = write_case(tmp_path / "log", name, seed, options)
    times = [
        parse_ts(json.loads(t)["ts"])
        for f in (tmp_path / "log").rglob("*.jsonl")
        for t in f.read_text().splitlines()
        if t.startswith('{"ts"')
    ]
    middle = format_ts((min(times) + max(times)) // 2)
    runs, said = {}, {}
    for engine in ("spark", "python"):
        out = tmp_path / engine
        # two runs: the second judges the first's forecasts (the forecast record)
        compute(out, tmp_path / "log", engine, as_of=middle)
        said[engine] = compute(out, tmp_path / "log", engine)
        runs[engine] = tables(out)
    # both second runs go on from the first: Spark's refresh, the replay from the kept fold states
    for engine in ("spark", "python"):
        assert said[engine].startswith("incremental: ") and "folders refolded" in said[engine], said
    spark_run, python_run = runs["spark"], runs["python"]
    for t in PUBLISHED:
        got, want = python_run[t], spark_run[t]
        assert [(f.name, f.type) for f in got.schema] == [(f.name, f.type) for f in want.schema], t
        assert ordered(t, got.to_pylist()) == ordered(t, want.to_pylist()), t
    # the scale log's earlier run forecast replicas that lacked CNs: the record judged them
    assert name != "scale" or python_run["forecast_record"].num_rows > 0
    assert python_run["rejects"].num_rows > 0 and python_run["backfill_entries"].num_rows > 0
    for t in FOLDER_TABLES:  # read a folder at a time: sorted by folder
        fids = python_run[t].column("fid").to_pylist()
        assert fids == sorted(fids) and (name != "scale" or len(set(fids)) > 1), t
    # the fold states: the planner plays both runs to the same plan
    store = sorted(topo.stores)[0]
    other = sorted(topo.stores)[1]
    actions = (f"down {store} at +1h until +2d", f"decommission {other} at +3h")
    played = plan(tmp_path / "python", *actions)
    assert played == plan(tmp_path / "spark", *actions)
    assert played["changed"], "the plan must move some replica"


def test_engines_take_turns(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Spark after the replay reads the whole log (the replay keeps no state to go on from), a
    Spark refresh then goes on from Spark's run, the replay after it reads everything again, and
    a run with nothing new publishes nothing, whichever engine made the last run."""
    log = tmp_path / "log"
    log.mkdir()
    write_case(log, "scale", 21, SMALL_SCALE)
    grown = log / "c.jsonl"
    lines = (log / "b.jsonl").read_text().splitlines()
    (log / "b.jsonl").write_text("\n".join(lines[: len(lines) // 2]) + "\n")
    rest = lines[len(lines) // 2 :]
    out = tmp_path / "runs"

    def check(said: str, first: str) -> None:
        assert said.splitlines()[0].startswith(first), said
        assert_published_equals_replay(out, log, events=log)

    check(compute(out, log, "python"), "full: the python engine replays the whole log")
    assert compute(out, log, "spark").startswith("incremental: nothing new")
    third = len(rest) // 3
    grown.write_text("\n".join(rest[:third]) + "\n")
    check(compute(out, log, "spark"), "full: the earlier run was computed by the python engine")
    grown.write_text("\n".join(rest[: 2 * third]) + "\n")
    check(compute(out, log, "spark"), "incremental: ")
    grown.write_text("\n".join(rest) + "\n")
    check(compute(out, log, "python"), "full: the python engine replays the whole log")
    assert compute(out, log, "python").startswith("incremental: nothing new")
