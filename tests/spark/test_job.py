"""``pfscope compute``: publishes a complete run, and a failed run leaves the last good one."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pfscope.app.cli import main
from pfscope.spark_jobs.model.tables import PUBLISHED
from pfscope.spark_jobs.published.runs import read_latest
from pfscope.spark_jobs.runtime import class_archive


@pytest.fixture(scope="module")
def worked(tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    out = tmp_path_factory.mktemp("we")
    assert main(["simulate", "--scenario", "worked-example", "--out", str(out), "--no-progress"]) == 0
    return out


def compute(data: Path, out: Path, *extra: str) -> int:
    return main(
        [
            "compute",
            "--topology",
            str(data / "topology.json"),
            "--events",
            str(data / "events.jsonl"),
            "--out",
            str(out),
            "--master",
            "local[2]",
            "--partitions",
            "2",
            *extra,
        ]
    )


def test_publishes_every_table_then_keeps_it_when_a_run_fails(
    spark, worked: Path, tmp_path: Path, capsys
) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "runs"
    assert compute(worked, out) == 0
    latest = read_latest(out)
    assert latest is not None and set(latest["tables"]) == set(PUBLISHED)
    for table in PUBLISHED:
        frame = pq.read_table(out / latest["path"] / table)
        assert frame.column_names == [n for n, _ in PUBLISHED[table]], table
    entries = pq.read_table(out / latest["path"] / "backfill_entries").to_pylist()
    assert [(e["observer"], e["cnset_opened"], e["state"]) for e in entries] == [
        ("PFS3", "PFS1:12-16;PFS2:21-28", "satisfied")
    ]
    assert "published run" in capsys.readouterr().out
    # the tables the dashboard reads one folder at a time are sorted by folder in every file
    for table in ("state_history", "state_table"):
        files = sorted((out / latest["path"] / table).glob("*.parquet"))
        fids = [pq.read_table(f, columns=["fid"]).column("fid").to_pylist() for f in files]
        assert sum(map(len, fids)) > 0 and all(f == sorted(f) for f in fids), table
    assert len({fid for f in fids for fid in f}) > 1  # state_table: the hierarchy and the folder

    # a run that cannot read its input fails with one line and publishes nothing
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "topology.json").write_text((worked / "topology.json").read_text())
    (bad / "events.jsonl").mkdir()  # a folder holding no log files
    assert compute(bad, out) != 0
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("pfscope compute:")]
    assert len(err) == 1
    assert read_latest(out) == latest
    assert sorted(p.name for p in (out / "runs").iterdir()) == [latest["run_id"]]


def test_bad_topology_and_bad_setting_are_one_line(worked: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "topology.json").write_text(json.dumps({"sites": []}))
    (broken / "events.jsonl").write_text("")
    assert compute(broken, tmp_path / "out") == 2
    assert compute(worked, tmp_path / "out", "--conf", "no-equals-sign") == 2
    assert compute(worked, tmp_path / "out", "--as-of", "someday") == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 3 and all(x.startswith("pfscope compute: ") for x in lines)
    assert "'stores' is missing" in lines[0] and "KEY=VALUE" in lines[1] and "RFC 3339" in lines[2]
    assert read_latest(tmp_path / "out") is None


def test_the_sessions_jvm_maps_the_class_archive(spark) -> None:  # type: ignore[no-untyped-def]
    """The suite's JVM was started with the class archive ``scripts/setup`` made (when this
    machine has one: made by ``python -m pfscope.spark_jobs.compute.make_archive``)."""
    options = spark.sparkContext.getConf().get("spark.driver.extraJavaOptions")
    wanted = class_archive.java_options()
    if not wanted:
        pytest.skip("no class archive in this environment (scripts/setup makes it)")
    assert options.endswith(wanted)


def test_the_workers_import_pyspark_where_it_is_installed(spark) -> None:  # type: ignore[no-untyped-def]
    """The local workers' daemon (``runtime/worker_daemon.py``) drops Spark's pyspark.zip from
    their path (and the spark-core jar): PySpark comes from the installed package, whose bytecode
    is cached."""

    def where(_: object) -> list[tuple[str, bool]]:
        import sys

        import pyspark

        return [(pyspark.__file__ or "", any(p.endswith(("pyspark.zip", ".jar")) for p in sys.path))]

    got = spark.sparkContext.parallelize(range(4), 2).mapPartitions(where).collect()
    import pyspark

    assert got and {path for path, _ in got} == {pyspark.__file__}
    assert not any(zipped for _, zipped in got)
