"""The job's Spark settings, chosen from the master and the log's size before the JVM starts."""

from __future__ import annotations

import subprocess

import pytest

from pfscope.spark_jobs.runtime.class_archive import java_binary
from pfscope.spark_jobs.runtime.session import (
    C1_CODE_CACHE,
    C1_ONLY_BELOW_BYTES,
    C2_LATER,
    C2_SKIPS,
    INTERPRETED_BELOW_BYTES,
    NO_LOCAL_EVALUATION,
    SPARK_SHUFFLE_PARTITIONS,
    UNCOMPRESSED_CACHE_BELOW_BYTES,
    session_settings,
    submitted_first,
    with_archive,
)

MB = 1 << 20


def test_arrow_batches_have_no_byte_limit_on_any_master() -> None:
    # a byte limit makes Spark measure the batch after every row (quadratic with list columns)
    for master in ("local[2]", "spark://127.0.0.1:7077", None):
        assert session_settings(master)["spark.sql.execution.arrow.maxBytesPerBatch"] == str(2**31 - 1)


def test_no_master_folds_local_rows_in_the_drivers_optimizer() -> None:
    # a refresh's local frames hold its new and earlier lines: their filters run in the tasks
    for master in ("local[2]", "spark://127.0.0.1:7077", None):
        for size in (14 * 1024, C1_ONLY_BELOW_BYTES, None):
            settings = session_settings(master, input_bytes=size)
            assert settings["spark.sql.optimizer.excludedRules"] == NO_LOCAL_EVALUATION


def test_the_cache_is_compressed_only_for_a_large_log() -> None:
    key = "spark.sql.inMemoryColumnarStorage.compressed"
    assert session_settings("local[2]", input_bytes=131 * MB)[key] == "false"
    assert key not in session_settings(
        "local[2]", input_bytes=UNCOMPRESSED_CACHE_BELOW_BYTES
    )  # Spark's default: on
    assert key not in session_settings("local[2]")  # size unknown (a remote log)


def test_jit_and_shuffle_partitions_follow_the_log_size() -> None:
    small = session_settings("local[2]", input_bytes=14 * 1024)
    large = session_settings("local[2]", input_bytes=C1_ONLY_BELOW_BYTES)
    assert "-XX:TieredStopAtLevel=1" in small["spark.driver.extraJavaOptions"]
    assert C1_CODE_CACHE in small["spark.driver.extraJavaOptions"]  # C1's own 48 MB fills
    assert "ReservedCodeCacheSize" not in large["spark.driver.extraJavaOptions"]
    assert "TieredStopAtLevel" not in large["spark.driver.extraJavaOptions"]
    assert C2_LATER in large["spark.driver.extraJavaOptions"]
    assert C2_SKIPS in large["spark.driver.extraJavaOptions"]
    assert "Tier4" not in small["spark.driver.extraJavaOptions"]
    assert "CompilerDirectivesFile" not in small["spark.driver.extraJavaOptions"]  # no C2 there
    assert small["spark.sql.shuffle.partitions"] == "1"
    assert int(large["spark.sql.shuffle.partitions"]) > 1
    assert large["spark.sql.adaptive.enabled"] == "false"
    cluster = session_settings("spark://127.0.0.1:7077", input_bytes=14 * 1024)
    assert cluster["spark.sql.shuffle.partitions"] == "1" and cluster["spark.sql.adaptive.enabled"] == "true"
    # a cluster's job of a large log keeps Spark's 200, and Spark's own when the size is not known
    huge = session_settings("spark://127.0.0.1:7077", input_bytes=10 << 30)
    assert huge["spark.sql.shuffle.partitions"] == str(SPARK_SHUFFLE_PARTITIONS) == "200"
    assert (
        int(session_settings("spark://h:7077", input_bytes=800 << 20)["spark.sql.shuffle.partitions"]) == 100
    )
    assert "spark.sql.shuffle.partitions" not in session_settings("spark://127.0.0.1:7077")


def test_a_local_job_uses_the_throughput_collector() -> None:
    # the driver is the executor: G1's concurrent threads would take the tasks' cores
    assert "-XX:+UseParallelGC" in session_settings("local[2]")["spark.driver.extraJavaOptions"]
    assert "UseParallelGC" not in session_settings("spark://127.0.0.1:7077")["spark.driver.extraJavaOptions"]
    # nor does a cluster's driver compile the tasks' code
    cluster = session_settings("spark://127.0.0.1:7077", input_bytes=C1_ONLY_BELOW_BYTES)
    assert "Tier4" not in cluster["spark.driver.extraJavaOptions"]
    assert "CompilerDirectivesFile" not in cluster["spark.driver.extraJavaOptions"]


def test_the_jvm_takes_the_c2_directives_as_shipped() -> None:
    # a directives file the JVM cannot read stops it from starting ("Could not load file"): the
    # shipped one loads, and excludes what it names from C2 only
    java = java_binary()
    if java is None:
        pytest.skip("no java here (Spark's tests need one)")
    run = subprocess.run(
        [java, *C2_SKIPS.split(), "-XX:+CompilerDirectivesPrint", "-version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    printed = run.stdout + run.stderr
    assert "org/codehaus/*.*" in printed and "org/antlr/*.*" in printed
    ours = printed[printed.index("org/codehaus/*.*") : printed.index("(default)")]
    c1, c2 = ours.split("c1 directives:")[1].split("c2 directives:")
    assert "Exclude:true" in c2 and "Exclude:true" not in c1


def test_local_workers_import_pyspark_through_the_daemon_module() -> None:
    assert (
        session_settings("local[2]")["spark.python.daemon.module"]
        == "pfscope.spark_jobs.runtime.worker_daemon"
    )
    # a cluster's executors may not have this package: PySpark's own daemon there
    assert "spark.python.daemon.module" not in session_settings("spark://127.0.0.1:7077")


def test_the_class_archive_is_added_to_options_a_caller_gives() -> None:
    archive = "-XX:SharedArchiveFile=/x/a.jsa -Xlog:cds=off"
    ingest = {"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1", "spark.driver.memory": "1g"}
    assert with_archive(ingest, archive) == {
        "spark.driver.extraJavaOptions": f"-XX:TieredStopAtLevel=1 {archive}",
        "spark.driver.memory": "1g",
    }
    assert with_archive({}, archive) == {"spark.driver.extraJavaOptions": archive}
    assert with_archive(ingest, "") == ingest  # no archive made in this environment
    dumping = {"spark.driver.extraJavaOptions": "-XX:ArchiveClassesAtExit=/tmp/t.jsa"}
    assert with_archive(dumping, archive) == dumping


def test_a_small_log_runs_interpreted_on_any_master() -> None:
    # generating and compiling each query's code costs more than it saves on a small log
    interpreted = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
    for master in ("local[2]", "spark://127.0.0.1:7077", None):
        small = session_settings(master, input_bytes=INTERPRETED_BELOW_BYTES - 1)
        assert interpreted.items() <= small.items(), master
        large = session_settings(master, input_bytes=INTERPRETED_BELOW_BYTES)
        assert not interpreted.keys() & large.keys(), master  # Spark's defaults: code generated
    assert interpreted.items() <= session_settings("local[2]", for_tests=True).items()
    assert not interpreted.keys() & session_settings("local[2]").keys()  # size unknown (a remote log)


def test_what_spark_submit_was_given_wins_over_the_jobs_defaults() -> None:
    """Under spark-submit, a setting given to it keeps its value (the session's builder would
    replace it), the executors' Java options are the job's followed by the given ones, and a
    setting the job does not make stays spark-submit's alone (the builder leaves it)."""
    job = session_settings("spark://127.0.0.1:7077")
    given = {
        "spark.sql.adaptive.enabled": "false",
        "spark.executor.extraJavaOptions": "-XX:+UseG1GC -Dlog4j2.configurationFile=file:/etc/mine.xml",
        "spark.executor.memory": "8g",
    }
    got = submitted_first(job, given)
    assert job["spark.sql.adaptive.enabled"] == "true" and got["spark.sql.adaptive.enabled"] == "false"
    assert got["spark.executor.extraJavaOptions"] == (
        f"{job['spark.executor.extraJavaOptions']} {given['spark.executor.extraJavaOptions']}"
    )
    assert "spark.executor.memory" not in got
    assert {k: v for k, v in got.items() if k not in given} == {
        k: v for k, v in job.items() if k not in given
    }
    assert submitted_first(job, {}) == job
