"""The local workers' daemon: PySpark from where it is installed; the collector spared old objects."""

from __future__ import annotations

import gc
import os
import subprocess
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


#: in a process of its own: which modules are imported is the point
_PRELOAD = """
import gc, os, sys
from pfscope.spark_jobs.runtime.worker_daemon import PRELOADED, preload
before = [m for m in PRELOADED if m in sys.modules]
done = preload((*PRELOADED, "no_such_module_here"))
pid = os.fork()
if pid == 0:  # a worker, as the daemon forks it: the modules are there, nothing to import
    os._exit(0 if all(m in sys.modules for m in PRELOADED) else 1)
_, status = os.waitpid(pid, 0)
print(before, done == list(PRELOADED), os.waitstatus_to_exitcode(status), gc.get_freeze_count() > 0)
"""


def test_the_daemon_imports_what_its_workers_would_once_before_it_forks_them() -> None:
    """Each worker inherits pyarrow, pandas, PySpark's worker and the model's fold; a module that
    cannot be imported is left to the workers (as before), not an error."""
    got = subprocess.run(
        [sys.executable, "-c", _PRELOAD], capture_output=True, text=True, timeout=120, check=True
    )
    assert got.stdout == "[] True 0 True\n", got
