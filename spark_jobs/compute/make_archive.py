"""Making the driver's class archive (``runtime/class_archive.py``): the job run on the worked
example in a child process whose JVM writes the classes it loaded at its exit.

``scripts/setup`` runs ``python -m pfscope.spark_jobs.compute.make_archive --if-missing`` once per
Java and Spark version.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from pfscope.spark_jobs.runtime.class_archive import archive_path


def build(timeout: float = 600) -> Path | None:
    """Make the archive (again): the job run on the worked example in a child process whose JVM
    writes its classes at exit. Returns its path, or None when there is no Java to make it for."""
    path = archive_path()
    if path is None:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        subprocess.run(
            [sys.executable, "-m", "pfscope.spark_jobs.compute.make_archive", "--dump", str(tmp)],
            check=True,
            timeout=timeout,
            stdout=subprocess.DEVNULL,
        )
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
    from pfscope.spark_jobs.compute.entry import run_job
    from pfscope.spark_jobs.compute.flags import JobSettings
    from pfscope.spark_jobs.runtime.session import INTERPRETED, session_settings, spark_session
    from pfscope.spark_jobs.simulator import simulate_to_folder

    options = session_settings("local[2]", input_bytes=1 << 20)["spark.driver.extraJavaOptions"]
    spark = spark_session(
        "local[2]",
        input_bytes=1 << 20,
        archive=False,
        conf={"spark.driver.extraJavaOptions": f"{options} -XX:ArchiveClassesAtExit={tmp}"},
    )
    with tempfile.TemporaryDirectory(prefix="pfscope-classes-") as work:
        data = Path(work) / "data"
        simulate_to_folder("worked-example", data)

        def settings(out: str) -> JobSettings:
            return JobSettings(
                str(data / "topology.json"),
                (str(data / "events.jsonl"),),
                str(Path(work) / out),
                master="local[2]",
            )

        assert run_job(settings("out")) == 0
        assert run_job(settings("out")) == 0  # a refresh of nothing new: its classes too
        # a log past INTERPRETED_BELOW_BYTES generates its code: those classes too
        for key in INTERPRETED:
            spark.conf.unset(key)
        assert run_job(settings("generated")) == 0
    # the JVM writes the archive as it exits, which it does when its stdin closes: wait for it
    gateway = spark.sparkContext._gateway
    assert gateway is not None  # the session's, which launched the JVM
    jvm = gateway.proc
    spark.stop()
    jvm.stdin.close()
    jvm.wait()


def main(argv: list[str]) -> int:
    """``python -m pfscope.spark_jobs.compute.make_archive [--if-missing]``: make the archive (``scripts/setup`` runs it)."""
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
