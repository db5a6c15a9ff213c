"""A failed Spark job can be diagnosed: its crash's whole text holds the JVM's stack trace."""

from __future__ import annotations

from pathlib import Path

import pytest

from pfscope.spark_jobs.runtime import command
from pfscope.spark_jobs.runtime.command import run_command


def test_a_failed_spark_query_s_jvm_stack_trace_is_kept(
    spark,
    tmp_path: Path,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(command, "crash_folder", lambda: tmp_path)

    def failing_job() -> int:
        spark.sql("SELECT raise_error('the fold broke') AS x").collect()
        return 0

    assert run_command("compute", failing_job) == 1
    line = capsys.readouterr().err
    assert line.count("\n") == 1 and "the fold broke" in line
    (written,) = tmp_path.iterdir()
    text = written.read_text(encoding="utf-8")
    assert "failing_job" in text  # the Python side
    assert "\tat org.apache.spark." in text  # and the JVM's

    assert run_command("compute", failing_job, debug=True) == 1
    assert "\tat org.apache.spark." in capsys.readouterr().err
