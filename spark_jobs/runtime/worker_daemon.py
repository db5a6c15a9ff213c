"""The Python workers' daemon on a local master (``spark.python.daemon.module``): PySpark's own,
with PySpark imported from where it is installed rather than from ``pyspark.zip``.

Spark puts ``$SPARK_HOME/python/lib/pyspark.zip``, py4j's zip and the spark-core jar first on
every worker's ``PYTHONPATH``. Python never caches bytecode for a module imported from a zip, so
the daemon and every worker it forks compiled PySpark's modules from source again; and before
every task PySpark calls ``importlib.invalidate_caches()``, which made each worker read the
jar's whole directory (thousands of entries) again. On the 12-export ingest, 2.8 of the workers'
31 CPU seconds were imports and those reads. When the same PySpark is installed beside this
package (``pip install pyspark``: its ``.pyc`` files are cached), these archives are dropped from
``sys.path`` before anything imports it; otherwise nothing changes.

The daemon also imports, once, what every worker it forks would import for its first task
(``PRELOADED``: pyarrow, pandas, PySpark's worker and Arrow serializers, the model's fold), and
freezes it: each forked worker inherits the modules instead of importing them again (and, with
no bytecode cache for this package's own modules, compiling them again).
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable

#: imported by the daemon before it forks any worker: what a task of the job's (a fold, stage 1's
#: parsing, ingest's steps: ``mapInArrow`` functions) imports first. A module missing here is only
#: imported by each worker, as before.
PRELOADED = (
    "pyarrow",
    "pyarrow.parquet",
    "pandas",
    "pyspark.worker",
    "pyspark.sql.pandas.serializers",
    "pfscope.spark_jobs.model.fold",
    "pfscope.spark_jobs.model.events",
)


def _without_spark_zips(path: list[str]) -> list[str]:
    """``path`` without the archives Spark puts on it (``pyspark.zip``, ``py4j-*.zip``, the
    spark-core jar) when they belong to the PySpark found without them (they lie inside its
    folder: a ``pip install pyspark``), and py4j is found too."""
    zips = [
        p
        for p in path
        if p.endswith((".zip", ".jar"))
        and (os.path.basename(p) == "pyspark.zip" or os.path.basename(p).startswith(("py4j-", "spark-core")))
    ]
    if not zips:
        return path
    rest = [p for p in path if p not in zips]
    saved = sys.path
    sys.path = rest
    try:
        pyspark, py4j = importlib.util.find_spec("pyspark"), importlib.util.find_spec("py4j")
    finally:
        sys.path = saved
    if pyspark is None or py4j is None or not pyspark.origin:
        return path
    home = os.path.dirname(os.path.realpath(pyspark.origin)) + os.sep
    return rest if all(os.path.realpath(z).startswith(home) for z in zips) else path


def _frozen_after(worker: Callable[..., int]) -> Callable[..., int]:
    """PySpark's ``worker`` (one task in a forked worker), then a collection and ``gc.freeze()``:
    the daemon collects after every task a reused worker runs, and without the freeze each
    collection walked every object the worker's imports made (pandas, pyarrow, the job's
    modules) again, 2.8 CPU seconds of the 12-export ingest. Only what the task just run made is
    walked now. A frozen object that later becomes part of a garbage cycle is not freed: a
    worker lives as long as its job's session, and what one task leaves (imports, a parsed
    topology) is what the next one uses."""

    def run(*args: object) -> int:
        try:
            return worker(*args)
        finally:
            gc.collect()
            gc.freeze()

    return run


def preload(names: tuple[str, ...] = PRELOADED) -> list[str]:
    """Import ``names`` (those that import: an optional one may be absent) and freeze what they
    made, so that forked workers share it; the names imported."""
    done = []
    for name in names:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
            done.append(name)
    gc.collect()
    gc.freeze()
    return done


if __name__ == "__main__":
    kept = _without_spark_zips(sys.path)
    for dropped in set(sys.path) - set(kept):
        # PySpark calls importlib.invalidate_caches() before every task, and a zip's cached
        # importer then reads the zip's whole directory again
        sys.path_importer_cache.pop(dropped, None)
    sys.path[:] = kept
    preload()
    from pyspark import daemon

    daemon.worker = _frozen_after(daemon.worker)
    daemon.manager()
