"""The jobs as they run on a cluster: a real Spark standalone master and worker started from the
installed pyspark on 127.0.0.1, and ``spark-submit --master spark://... spark_jobs/compute/entry.py`` (the
installed pyspark's, as on an edge node) publishing tables equal to the replay's, its tasks run in
an executor the worker launched; then ``spark_jobs/ingest/entry.py`` the same way, its outputs equal
to the reference's (its workers write their rows themselves, from the executor). One run each
covers both the spark-submit entry and a cluster master (each start of a JVM costs the suite
tens of seconds)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyspark
import pytest

from pfscope.spark_jobs.exchange import run_ingest
from pfscope.spark_jobs.runtime.session import LOG4J
from pfscope.spark_jobs.simulator import simulate_to_folder
from tests.spark.table_compare import assert_published_equals_replay
from tests.spark.test_ingest_spark import SAMPLES, _same_outputs, _worked_example_records
from tests.unit.exchange.exports import write_wevtutil_xml

SPARK_HOME = str(Path(pyspark.__file__).parent)
ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(log: Path, text: str, proc: subprocess.Popen, seconds: float = 90) -> None:  # type: ignore[type-arg]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args} exited: {log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.5)
    raise TimeoutError(f"no {text!r} in {log} after {seconds} s")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[tuple[str, Path]]:  # type: ignore[no-untyped-def]
    logs = tmp_path_factory.mktemp("cluster")
    env = {
        **os.environ,
        "SPARK_HOME": SPARK_HOME,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_LOG_DIR": str(logs),
        "SPARK_WORKER_DIR": str(logs / "work"),
    }
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    spark_class = os.path.join(SPARK_HOME, "bin", "spark-class")
    procs = []
    master_log, worker_log = logs / "master.log", logs / "worker.log"
    try:
        with open(master_log, "w") as out:
            procs.append(
                subprocess.Popen(
                    [
                        spark_class,
                        "org.apache.spark.deploy.master.Master",
                        "--host",
                        "127.0.0.1",
                        "--port",
                        str(port),
                        "--webui-port",
                        str(free_port()),
                    ],
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            )
        wait_for(master_log, "I have been elected leader", procs[0])
        with open(worker_log, "w") as out:
            procs.append(
                subprocess.Popen(
                    [
                        spark_class,
                        "org.apache.spark.deploy.worker.Worker",
                        url,
                        "--host",
                        "127.0.0.1",
                        "--cores",
                        "2",
                        "--memory",
                        "2g",
                        "--webui-port",
                        str(free_port()),
                    ],
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            )
        wait_for(worker_log, "Successfully registered with master", procs[1])
        yield url, logs / "work"
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


#: what the suite's local session sets too (``session_settings(for_tests=True)``): JVMs that only
#: compile with C1 (the driver alone: the ingest 34 s against 43). The executors' options join the
#: job's own (``session.submitted_first``). The shuffle partitions are the job's own, sized by the
#: log on a cluster too (Spark's 200 took the compute of 128 lines from 23 to 35 s).
C1_ONLY = "-XX:TieredStopAtLevel=1"
TEST_SPEED = [
    "--driver-java-options",
    C1_ONLY,
    "--conf",
    f"spark.executor.extraJavaOptions={C1_ONLY}",
]


def executor_options(app: Path) -> str:
    """The Java command line the worker launched an application's executor with."""
    [stderr] = app.glob("*/stderr")
    return stderr.read_text(errors="replace").splitlines()[0]


def spark_submit(url: str, job: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "SPARK_HOME": SPARK_HOME,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PYTHONPATH": str(ROOT),
    }
    env.pop("PFSCOPE_SPARK_MASTER", None)  # spark-submit's --master is the one that counts
    return subprocess.run(
        [
            os.path.join(SPARK_HOME, "bin", "spark-submit"),
            "--master",
            url,
            "--conf",
            "spark.executor.memory=1g",
            "--conf",
            "spark.ui.enabled=false",
            *TEST_SPEED,
            str(ROOT / "spark_jobs" / job),
            *args,
        ],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.mark.slow
def test_spark_submit_on_a_standalone_cluster_publishes_tables_equal_to_replay(
    cluster: tuple[str, Path], tmp_path: Path
) -> None:
    url, work = cluster
    data = tmp_path / "data"
    simulate_to_folder("worked-example", data, seed=1)
    out = tmp_path / "runs"
    apps = set(work.glob("app-*"))
    done = spark_submit(
        url,
        "compute/entry.py",
        [
            "--topology",
            str(data / "topology.json"),
            "--events",
            str(data / "events.jsonl"),
            "--out",
            str(out),
        ],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "published run" in done.stdout
    expected = assert_published_equals_replay(out, data)
    assert expected["backfill_entries"]  # the worked example's one entry, satisfied
    # the tasks ran in an executor the worker launched for this application, with the Java
    # options spark-submit was given after the job's own
    [app] = set(work.glob("app-*")) - apps
    launched = executor_options(app)
    assert f"-Dlog4j2.configurationFile=file:{LOG4J.resolve()}" in launched and C1_ONLY in launched


@pytest.mark.slow
def test_spark_submit_ingest_on_a_standalone_cluster_equals_the_reference(
    cluster: tuple[str, Path], tmp_path: Path
) -> None:
    url, work = cluster
    logs = tmp_path / "logs"
    logs.mkdir()
    for server, recs in sorted(_worked_example_records().items()):  # each server's wevtutil export
        write_wevtutil_xml(recs, logs / f"{server}.xml")
    topology = str(SAMPLES / "worked-example" / "topology.json")
    apps = set(work.glob("app-*"))
    done = spark_submit(
        url, "ingest/entry.py", ["--logs", str(logs), "--out", "out", "--topology", topology], tmp_path
    )  # --out relative to the driver's folder, which is not the executor's
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("full ingest: no state of an earlier ingest")
    run_ingest([str(logs)], tmp_path / "ref", topology=topology)
    _same_outputs(tmp_path / "ref", tmp_path / "out")
    assert len(set(work.glob("app-*")) - apps) == 1  # its tasks ran in an executor of its own
