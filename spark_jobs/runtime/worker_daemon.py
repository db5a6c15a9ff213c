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
"""

from __future__ import annotations

import gc
import importlib.util
import os
import sys
from collections.abc import Callable


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


if __name__ == "__main__":
    kept = _without_spark_zips(sys.path)
    for dropped in set(sys.path) - set(kept):
        # PySpark calls importlib.invalidate_caches() before every task, and a zip's cached
        # importer then reads the zip's whole directory again
        sys.path_importer_cache.pop(dropped, None)
    sys.path[:] = kept
    from pyspark import daemon

    daemon.worker = _frozen_after(daemon.worker)
    daemon.manager()
