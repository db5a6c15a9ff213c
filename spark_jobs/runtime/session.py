"""The SparkSession the job runs in: quiet, UTC, workers on this interpreter."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pyspark.sql import SparkSession

LOG4J = Path(__file__).with_name("log4j2.properties")
#: below this much input the JVM runs the C1 compiler only: C2's warm-up (38 of 105 JVM CPU
#: seconds on the worked example) does not pay back on a small log; on the 1M log (131 MB)
#: C1 alone cost 319 s wall against 217 s with C2
C1_ONLY_BELOW_BYTES = 32 << 20
#: with C1 alone the JVM reserves 48 MB for compiled code, which a session of many small queries
#: fills (the test suite's session within a minute of ``test_retaken``): the compiler stops, and a
#: method handle that needs code space then fails the job ("Out of space in CodeCache for method
#: handle intrinsic"). This is what the JVM reserves when C2 is on.
C1_CODE_CACHE = "-XX:ReservedCodeCacheSize=240m"
#: below this much input a job evaluates its queries interpreted and generates no code:
#: compiling each query's classes (Janino, then the JIT) is most of a small run's JVM time.
#: Measured against code generation (wall, local[2], alternated): a 5-store log 30 % less (CPU
#: too), 2.9 MB 7 % less, the demo's 5.4 MB 6 % less, 13.7 MB 10 % more, 29.6 MB 15 % more;
#: on a standalone cluster, spark-submit of the ingest test's share 49 -> 31 s (docs/performance.md)
INTERPRETED_BELOW_BYTES = 8 << 20
#: the settings of a job run interpreted: no whole-stage code, and no generated expressions
#: (``factoryMode``: Spark's own switch between the two, an internal setting its test suites run
#: both ways; without it each projection is compiled)
INTERPRETED = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
BYTES_PER_SHUFFLE_PARTITION = 8 << 20
#: Spark's own shuffle partitions, which a cluster's job of a large log keeps
SPARK_SHUFFLE_PARTITIONS = 200
#: below this much input the cached frames are kept uncompressed: choosing and applying each
#: column's encoding was the JVM's largest cost in the 1M job (131 MB: 50 -> 45 s) once the
#: Arrow batches were fixed; above it the cache is compressed, so a large log spills less
UNCOMPRESSED_CACHE_BELOW_BYTES = 256 << 20
#: with C2, a method waits ten times longer than the JVM's default before C2 compiles it
#: (C1's code runs meanwhile): Spark generates many classes that run briefly, and compiling
#: them all was 16 of the 1M job's 52 JVM CPU seconds on two cores (three runs, alternating:
#: 0.2-1.3 s faster wall, 3-5 s less JVM CPU each time)
C2_LATER = (
    "-XX:Tier4InvocationThreshold=50000 -XX:Tier4MinInvocationThreshold=20000"
    " -XX:Tier4CompileThreshold=60000 -XX:Tier4BackEdgeThreshold=400000"
)
#: nor does C2 compile the libraries that plan the queries in the driver (Janino, ASM, ANTLR,
#: Java serialization; ``c2_directives.json``): their large methods were C2's longest
#: compilations (about a second each) for code that runs hot while a query is planned and not
#: again. C1's code serves them; at 1M events C2's CPU went from 38.6-41.4 s to 28.7-33.0 s.
C2_DIRECTIVES = Path(__file__).with_name("c2_directives.json")
C2_SKIPS = f"-XX:+UnlockDiagnosticVMOptions -XX:CompilerDirectivesFile={C2_DIRECTIVES.resolve()}"


#: the driver's heap unless the job is given another (``PFSCOPE_DRIVER_MEMORY`` or ``--conf``)
DEFAULT_DRIVER_MEMORY = "4g"
#: the optimizer's rule that folds a local relation's projections and filters in the driver
NO_LOCAL_EVALUATION = "org.apache.spark.sql.catalyst.optimizer.ConvertToLocalRelation"


def spark_session(
    master: str | None = None,
    app_name: str = "pfscope",
    conf: dict[str, str] | None = None,
    *,
    progress: bool = False,
    for_tests: bool = False,
    input_bytes: int | None = None,
    archive: bool = True,
) -> SparkSession:
    """Build (or reuse) the session. ``conf`` overrides any default, and so, under spark-submit, do
    the settings spark-submit was given (``submitted_first``). With no ``master``: the one
    spark-submit was given when running under it, else ``local[*]``. ``input_bytes`` (the log's
    size, when known before the JVM starts) chooses the JIT compiler and whether the cache is
    compressed; ``archive``: a JVM launched here maps the class archive, if there is one
    (``class_archive``)."""
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ  # the JVM launched this Python
    if master is None and not under_submit:
        master = "local[*]"
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if master is not None and master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    settings = session_settings(master, progress=progress, for_tests=for_tests, input_bytes=input_bytes)
    if under_submit:
        settings = submitted_first(settings, _submitted())
    settings |= conf or {}
    if archive and not under_submit and master is not None and master.startswith("local"):
        from pfscope.spark_jobs.runtime.class_archive import java_options

        settings = with_archive(settings, java_options())
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


#: the executors' Java options: the job's (its log4j configuration) and any an operator gives
EXECUTOR_OPTIONS = "spark.executor.extraJavaOptions"


def submitted_first(settings: dict[str, str], submitted: dict[str, str]) -> dict[str, str]:
    """The job's ``settings`` under spark-submit, which was given ``submitted`` (its ``--conf``
    flags and properties file): each setting it was given keeps its value, where the session's
    builder would replace it; the executors' Java options are the job's followed by those given
    (a JVM takes the last of an option given twice)."""
    out = {key: submitted.get(key, value) for key, value in settings.items()}
    if EXECUTOR_OPTIONS in settings and EXECUTOR_OPTIONS in submitted:
        out[EXECUTOR_OPTIONS] = f"{settings[EXECUTOR_OPTIONS]} {submitted[EXECUTOR_OPTIONS]}".strip()
    return out


def _submitted() -> dict[str, str]:
    """The settings of the JVM spark-submit started (its ``spark.*`` system properties)."""
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()  # the gateway to that JVM, as the builder opens it
    return dict(SparkConf().getAll())


def with_archive(settings: dict[str, str], archive_options: str) -> dict[str, str]:
    """``settings`` whose driver options also map the class archive: added to any options a
    caller gave (ingest gives its own JIT options), unless those already choose an archive."""
    given = settings.get("spark.driver.extraJavaOptions", "")
    if not archive_options or any(
        o in given for o in ("SharedArchiveFile", "ArchiveClassesAtExit", "-Xshare")
    ):
        return settings
    return settings | {"spark.driver.extraJavaOptions": f"{given} {archive_options}".strip()}


def session_settings(
    master: str | None, *, progress: bool = False, for_tests: bool = False, input_bytes: int | None = None
) -> dict[str, str]:
    """The job's Spark settings for this master and log size (before any ``--conf``)."""
    local = master is not None and master.startswith("local")
    java_opts = f"-Dlog4j2.configurationFile=file:{LOG4J.resolve()}"
    if for_tests or (input_bytes is not None and input_bytes < C1_ONLY_BELOW_BYTES):
        java_opts += f" -XX:TieredStopAtLevel=1 {C1_CODE_CACHE}"
    elif local:  # the driver runs the tasks: its JIT competes with them for the cores
        java_opts += f" {C2_LATER} {C2_SKIPS}"
    if local:
        # the throughput collector: G1's concurrent threads compete with the tasks for the
        # cores (1M log on 2 cores: 46-47 s with G1, 42-44 s with this one)
        java_opts += " -XX:+UseParallelGC"
    settings = {
        "spark.driver.extraJavaOptions": java_opts,
        EXECUTOR_OPTIONS: f"-Dlog4j2.configurationFile=file:{LOG4J.resolve()}",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # no byte limit on the Arrow batches sent to Python workers (the row limit, 10,000,
        # stays): with one, the writer measures the batch after every row, and measuring a list
        # column walks the whole batch (Arrow's ListVector.setValueCount): 45 % of the JVM's
        # samples in the 1M job's fold, whose rows carry lists (``to``, ``responders``, ...)
        "spark.sql.execution.arrow.maxBytesPerBatch": str(2**31 - 1),
        "spark.ui.showConsoleProgress": "true" if progress else "false",
        "spark.sql.adaptive.enabled": "true",
        "spark.driver.memory": DEFAULT_DRIVER_MEMORY,
        # rows the driver holds (``frames``: a refresh's new lines, the earlier lines it judges
        # them with, the fold states) are local relations, and this rule of the optimizer would
        # evaluate every projection and filter over one in the driver, on one thread, again in
        # each query that reads it: in a 1M log's hour (144,888 new lines, 143,732 earlier
        # ones) the driver's JVM spent 7-15 CPU s there. The tasks run them instead.
        "spark.sql.optimizer.excludedRules": NO_LOCAL_EVALUATION,
    }
    if input_bytes is not None and input_bytes < UNCOMPRESSED_CACHE_BELOW_BYTES:
        settings["spark.sql.inMemoryColumnarStorage.compressed"] = "false"
    # shuffle partitions of a few rows each cost more than they bring: one per 8 MB of log (a
    # task's fixed cost outweighs its share of work), at most two per core on one machine and
    # Spark's 200 on a cluster, which keeps them when the log's size is not known (a remote log).
    # A cluster's own (spark-submit's, ``submitted_first``) win: the compute of 128 lines took
    # 35 s there with 200, 23 s with 4
    most = max(4, 2 * (os.cpu_count() or 2)) if local else SPARK_SHUFFLE_PARTITIONS
    if input_bytes is not None:
        most = max(1, min(most, input_bytes // BYTES_PER_SHUFFLE_PARTITION))
    if local or input_bytes is not None:
        settings["spark.sql.shuffle.partitions"] = str(most)
    if local:
        # one Spark job per action: adaptive execution runs each shuffle and each broadcast of
        # a query as a job of its own (23 jobs for the reading's counts of 128 lines), and on
        # one machine's few partitions it has little to adapt; the job's few small joins
        # shuffle within the query instead of broadcasting (a broadcast is a job too)
        settings["spark.sql.adaptive.enabled"] = "false"
        settings["spark.sql.autoBroadcastJoinThreshold"] = "-1"
        # a frame of more than 32 files was listed by a Spark job of its own (a 10M log's
        # refresh reads tables of 42 files, one per fold partition, several times); on one
        # machine the driver lists them at once
        settings["spark.sql.sources.parallelPartitionDiscovery.threshold"] = "4096"
        # the workers import PySpark from where it is installed, its bytecode cached, instead
        # of compiling it from Spark's pyspark.zip in every worker (``worker_daemon``)
        settings["spark.python.daemon.module"] = "pfscope.spark_jobs.runtime.worker_daemon"
    if for_tests or (input_bytes is not None and input_bytes < INTERPRETED_BELOW_BYTES):
        settings |= INTERPRETED
    if for_tests:
        settings |= {
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "4",
            "spark.default.parallelism": "4",
        }
    return settings
