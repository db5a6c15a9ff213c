"""The job under ``spark-submit`` (the installed pyspark's, as on a cluster's edge node):
``spark-submit --master local[2] spark_jobs/job.py ...`` publishes tables equal to the replay's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

from spark_jobs.simulator import simulate_to_folder

from .published import assert_published_equals_replay

ROOT = Path(__file__).resolve().parents[2]
SPARK_HOME = Path(pyspark.__file__).parent


@pytest.mark.slow
def test_spark_submit_publishes_tables_equal_to_replay(tmp_path: Path) -> None:
    data = tmp_path / "data"
    simulate_to_folder("worked-example", data, seed=1)
    out = tmp_path / "runs"
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1",
           "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable, "PYTHONPATH": str(ROOT)}
    env.pop("PFSCOPE_SPARK_MASTER", None)  # spark-submit's --master is the one that counts
    done = subprocess.run(
        [str(SPARK_HOME / "bin" / "spark-submit"), "--master", "local[2]", "--conf", "spark.ui.enabled=false",
         str(ROOT / "spark_jobs" / "job.py"), "--topology", str(data / "topology.json"),
         "--events", str(data / "events.jsonl"), "--out", str(out)],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "published run" in done.stdout
    expected = assert_published_equals_replay(out, data)
    assert expected["backfill_entries"]  # the worked example's one entry, satisfied
