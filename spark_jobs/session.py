"""The SparkSession the job runs in: quiet, UTC, workers on this interpreter (stack notes)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pyspark.sql import SparkSession

LOG4J = Path(__file__).with_name("log4j2.properties")


def spark_session(
    master: str | None = None,
    app_name: str = "pfscope",
    conf: dict[str, str] | None = None,
    *,
    progress: bool = False,
    for_tests: bool = False,
) -> SparkSession:
    """Build (or reuse) the session. ``conf`` overrides any default. With no ``master``: the one
    spark-submit was given when running under it, else ``local[*]``."""
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ  # the JVM launched this Python
    if master is None and not under_submit:
        master = "local[*]"
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if master is not None and master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    local = master is not None and master.startswith("local")
    java_opts = f"-Dlog4j2.configurationFile=file:{LOG4J.resolve()}"
    if for_tests:
        # C1 only: saves the C2 compiler's warm-up (38 of 105 JVM CPU seconds on the worked
        # example) on tiny logs; on the 1M benchmark it cost 319 s wall against 217 s with C2,
        # so the job itself keeps the default JIT.
        java_opts += " -XX:TieredStopAtLevel=1"
    settings = {
        "spark.driver.extraJavaOptions": java_opts,
        "spark.executor.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{LOG4J.resolve()}",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.ui.showConsoleProgress": "true" if progress else "false",
        "spark.sql.adaptive.enabled": "true",
        "spark.driver.memory": os.environ.get("PFSCOPE_DRIVER_MEMORY", "4g"),
    }
    if local:
        # 200 shuffle partitions of a few rows each cost more than they bring on one machine
        settings["spark.sql.shuffle.partitions"] = str(max(4, 2 * (os.cpu_count() or 2)))
    if for_tests:
        settings |= {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4",
                     "spark.default.parallelism": "4"}
    settings |= conf or {}
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
