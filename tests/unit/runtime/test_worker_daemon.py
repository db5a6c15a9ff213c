"""The local workers' daemon: PySpark from where it is installed; the collector spared old objects."""

from __future__ import annotations

import gc
import os
import sys

import pyspark

from pfscope.spark_jobs.runtime.worker_daemon import _frozen_after, _without_spark_zips

HOME = os.path.dirname(pyspark.__file__)
ZIPS = [
    f"{HOME}/python/lib/pyspark.zip",
    f"{HOME}/python/lib/py4j-0.10.9.9-src.zip",
    f"{HOME}/jars/spark-core_2.13-4.3.0.jar",
]


def test_spark_zips_are_dropped_when_the_same_pyspark_is_installed() -> None:
    rest = ["/work", *sys.path]  # the installed PySpark is on it
    assert _without_spark_zips([*ZIPS, *rest]) == rest


def test_zips_of_another_spark_stay() -> None:
    other = [
        "/opt/spark/python/lib/pyspark.zip",
        "/opt/spark/python/lib/py4j-0.10.9.9-src.zip",
        "/opt/spark/jars/spark-core_2.13-4.3.0.jar",
        "/work",
    ]
    assert _without_spark_zips(other) == other
    assert _without_spark_zips(["/work"]) == ["/work"]


def test_a_worker_freezes_what_its_task_left() -> None:
    ran = []
    run = _frozen_after(lambda *args: ran.append(args) or 0)
    try:
        gc.unfreeze()
        assert run("sock", True) == 0 and ran == [("sock", True)]
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
