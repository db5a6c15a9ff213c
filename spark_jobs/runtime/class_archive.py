"""A class-data archive for the driver's JVM: Spark's classes loaded once, mapped by every run.

A local run's JVM loads and verifies some 15,000 classes before its first job: on this 2-core
machine, reading a small Parquet table took 8.1-8.6 s from a fresh process, 4.1-4.3 s with an
archive of the classes (Java's AppCDS), the session alone 5.1 against 2.8 s. That fixed cost is
most of a refresh of a few lines, and of every small run. ``scripts/setup`` makes the archive
once (``compute/make_archive.py``): a run of the job on the worked example in a JVM that
writes the classes it loaded at its exit, to a temporary file renamed into place when whole
(a JVM mapping a truncated archive dies with SIGBUS). A session then starts its JVM with it
when it exists; a JVM whose Java or Spark jars changed since refuses the archive without a
word and loads its classes as before. Only a JVM that pyspark launches can use it: under
``spark-submit`` the driver's JVM is already running.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

#: the JVM's messages about the archive (a refused archive warns on stdout) are not the job's
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def java_binary() -> str | None:
    """The ``java`` Spark launches: ``$JAVA_HOME/bin/java``, else the one on the PATH."""
    home = os.environ.get("JAVA_HOME")
    return shutil.which("java", path=os.path.join(home, "bin")) if home else shutil.which("java")


def archive_path() -> Path | None:
    """Where this environment's archive is (beside its packages: it belongs to its Spark jars and
    its Java), or None without a Java."""
    java = java_binary()
    if java is None:
        return None
    import pyspark

    real = os.path.realpath(java)
    key = hashlib.sha1(f"{pyspark.__version__} {real} {os.stat(real).st_mtime_ns}".encode()).hexdigest()[:12]
    return Path(sys.prefix) / "share" / "pfscope" / f"spark-classes-{key}.jsa"


def java_options() -> str:
    """The driver's JVM options that map the archive, if this environment has one."""
    path = archive_path()
    return f"-XX:SharedArchiveFile={path} {QUIET}" if path is not None and path.is_file() else ""
