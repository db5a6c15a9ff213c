"""A class-data archive for the driver's JVM: Spark's classes loaded once, mapped by every run.

A local run's JVM loads and verifies some 15,000 classes before its first job: on this 2-core
machine, reading a small Parquet table took 8.1-8.6 s from a fresh process, 4.1-4.3 s with an
archive of the classes (Java's AppCDS), the session alone 5.1 against 2.8 s. That fixed cost is
most of a refresh of a few lines, and of every small run. ``scripts/setup`` makes the archive
once (``python -m spark_jobs.classes``): a run of the job on the worked example in a JVM that
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
import subprocess
import sys
import tempfile
from pathlib import Path

#: the JVM's messages about the archive (a refused archive warns on stdout) are not the job's
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def archive_path() -> Path | None:
    """Where this environment's archive is (beside its packages: it belongs to its Spark jars and
    its Java), or None without a Java."""
    java = shutil.which("java", path=os.path.join(os.environ["JAVA_HOME"], "bin")) if os.environ.get(
        "JAVA_HOME") else shutil.which("java")
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


def build(timeout: float = 600) -> Path | None:
    """Make the archive (again): the job run on the worked example in a child process whose JVM
    writes its classes at exit. Returns its path, or None when there is no Java to make it for."""
    path = archive_path()
    if path is None:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        subprocess.run([sys.executable, "-m", "spark_jobs.classes", "--dump", str(tmp)], check=True, timeout=timeout,
                       stdout=subprocess.DEVNULL)
        if not tmp.is_file() or tmp.stat().st_size == 0:
            raise RuntimeError(f"the JVM wrote no class archive to {tmp}")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    for old in [*path.parent.glob("spark-classes-*.jsa"), *path.parent.glob(".spark-classes-*.tmp")]:
        if old != path:  # other Java or Spark versions', and what a build that failed left
            old.unlink(missing_ok=True)
    return path


def _dump(tmp: str) -> None:
    """In the child: the job on the worked example, in a session whose JVM writes its classes to
    ``tmp`` when it exits (with this process)."""
    from spark_jobs.job import JobSettings, run_job
    from spark_jobs.session import session_settings, spark_session
    from spark_jobs.simulator import simulate_to_folder

    options = session_settings("local[2]", input_bytes=1 << 20)["spark.driver.extraJavaOptions"]
    spark = spark_session("local[2]", input_bytes=1 << 20, archive=False,
                          conf={"spark.driver.extraJavaOptions": f"{options} -XX:ArchiveClassesAtExit={tmp}"})
    with tempfile.TemporaryDirectory(prefix="pfscope-classes-") as work:
        data = Path(work) / "data"
        simulate_to_folder("worked-example", data)
        settings = JobSettings(str(data / "topology.json"), (str(data / "events.jsonl"),), str(Path(work) / "out"),
                               master="local[2]")
        assert run_job(settings) == 0
        assert run_job(settings) == 0  # a refresh of nothing new: its classes too
    # the JVM writes the archive as it exits, which it does when its stdin closes: wait for it
    jvm = spark.sparkContext._gateway.proc  # type: ignore[union-attr]
    spark.stop()
    jvm.stdin.close()
    jvm.wait()


def main(argv: list[str]) -> int:
    """``python -m spark_jobs.classes [--if-missing]``: make the archive (``scripts/setup`` runs it)."""
    if argv[:1] == ["--dump"]:
        _dump(argv[1])
        return 0
    path = archive_path()
    if "--if-missing" in argv and path is not None and path.is_file():
        print(f"class archive: {path} (kept)")
        return 0
    made = build()
    print(f"class archive: {made}" if made else "class archive: no Java found, none made")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
