"""``compute --engine``: which engine runs, and the replay's run made in this process without a
JVM (its tables against Spark's: tests/spark/test_python_engine.py)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from pfscope.spark_jobs.compute.entry import JobError, choose_engine
from pfscope.spark_jobs.compute.flags import AUTO_SPARK_BYTES, JobSettings, add_arguments, settings_from_flags
from pfscope.spark_jobs.model.tables import TABLES
from pfscope.spark_jobs.published.runs import read_latest
from tests.published_runs import ROOT

SMALL, LOCAL = AUTO_SPARK_BYTES - 1, ["/logs/a.jsonl"]


def settings(engine: str, **over: object) -> JobSettings:
    return JobSettings(topology="t.json", events=("/logs",), out="/out", engine=engine, **over)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("engine", "over", "files", "size", "chosen"),
    [
        ("spark", {}, LOCAL, SMALL, "spark"),
        ("python", {}, LOCAL, AUTO_SPARK_BYTES * 10, "python"),
        ("auto", {}, LOCAL, SMALL, "python"),
        ("auto", {}, LOCAL, AUTO_SPARK_BYTES, "spark"),
        ("auto", {"spark_flags": True}, LOCAL, SMALL, "spark"),
        # the environment's master (``PFSCOPE_SPARK_MASTER``) is where Spark runs, not a choice of it
        ("auto", {"master": "local[2]"}, LOCAL, SMALL, "python"),
        ("auto", {}, [*LOCAL, "hdfs://nn/logs/b.jsonl"], SMALL, "spark"),
    ],
)
def test_the_engine_chosen(
    engine: str, over: dict[str, object], files: list[str], size: int, chosen: str
) -> None:
    got, why = choose_engine(settings(engine, **over), files, size)
    assert got == chosen
    assert bool(why) == (chosen == "python")


def test_the_python_engine_reads_local_files_only_and_takes_no_spark_flag() -> None:
    with pytest.raises(JobError, match="--engine python reads local files only"):
        choose_engine(settings("python"), ["hdfs://nn/logs/a.jsonl"], 1)
    with pytest.raises(JobError, match="--master, --conf and --partitions are Spark's"):
        choose_engine(settings("python", spark_flags=True), LOCAL, 1)


@pytest.mark.parametrize(
    ("flags", "spark_flags"),
    [((), False), (("--master", "local[2]"), True), (("--conf", "a=b"), True), (("--partitions", "3"), True)],
)
def test_spark_flags_are_the_flags_given(flags: tuple[str, ...], spark_flags: bool) -> None:
    p = argparse.ArgumentParser()
    add_arguments(p)
    args = p.parse_args(["--topology", "t", "--events", "e", "--out", "o", "--engine", "auto", *flags])
    got = settings_from_flags(args, master="spark://from-the-environment:7077")
    assert got.spark_flags == spark_flags and got.engine == "auto"


def test_pfscope_compute_defaults_to_auto_and_spark_submit_to_spark() -> None:
    from pfscope.app.cli import _parser
    from pfscope.app.settings import job_settings

    flags = ["--topology", "t", "--events", "e", "--out", "o"]
    assert job_settings(_parser().parse_args(["compute", *flags]), {}).engine == "auto"
    assert job_settings(_parser().parse_args(["compute", *flags, "--engine", "spark"]), {}).engine == "spark"
    p = argparse.ArgumentParser()
    add_arguments(p)
    assert settings_from_flags(p.parse_args(flags)).engine == "spark"


def test_the_python_engine_publishes_a_run_without_spark(tmp_path: Path) -> None:
    """``pfscope compute --engine auto`` of a small log: every table and the fold states, in a
    process that never imports PySpark (no JVM starts)."""
    log = tmp_path / "log"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pfscope.app.cli",
            "simulate",
            "--scenario",
            "worked-example",
            "--out",
            str(log),
        ],
        check=True,
        capture_output=True,
        cwd=ROOT,
    )
    out = tmp_path / "runs"
    code = (
        "import sys; from pfscope.app.cli import main; "
        f"status = main(['compute', '--engine', 'auto', '--topology', {str(log / 'topology.json')!r}, "
        f"'--events', {str(log / 'events.jsonl')!r}, '--out', {str(out)!r}]); "
        "print('pyspark' in sys.modules or 'py4j' in sys.modules); sys.exit(status)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    said = done.stdout.splitlines()
    assert said[0] == "full: the python engine replays the whole log (the log is under 160 MB)"
    assert said[1].startswith("published run ") and said[-1] == "False"
    pointer = read_latest(out)
    assert pointer is not None and pointer["refresh"] == said[0]
    run = out / pointer["path"]
    assert set(pointer["tables"]) == {*TABLES, "forecast_record"}
    for table in TABLES:
        assert ds.dataset(run / table).schema.names == [n for n, _ in TABLES[table]], table
    manifest = json.loads((run / "_state" / "manifest.json").read_text())
    assert manifest["engine"] == "python" and manifest["lines_read"] == 128
    assert manifest["folders"] == ds.dataset(run / "_state" / "folds").count_rows() > 0
    assert [f["lines"] for f in manifest["files"]] == [128]
