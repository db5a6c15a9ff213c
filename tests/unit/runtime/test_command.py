"""One place turns errors into exit statuses: an operator's error is one line and its status; a
crash is one line saying where its whole text went, or the whole text with ``debug``."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from pfscope.spark_jobs.model.errors import ExitStatus, OperatorError
from pfscope.spark_jobs.runtime import command
from pfscope.spark_jobs.runtime.command import run_command, whole_text


@pytest.fixture(autouse=True)
def crashes_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "crashes"
    monkeypatch.setattr(command, "crash_folder", lambda: folder)
    return folder


def _deep_failure() -> int:
    raise RuntimeError("the fold broke\nsecond line of the message")


def test_done_is_the_work_s_own_status() -> None:
    assert run_command("ingest", lambda: ExitStatus.PARTIAL) == 3


def test_an_operator_error_is_one_line_and_its_status(capsys: pytest.CaptureFixture[str]) -> None:
    class Locked(OperatorError):
        exit_status = ExitStatus.LOCKED

    def locked() -> int:
        raise Locked("another run holds out/.lock")

    assert run_command("compute", locked) == 75
    assert capsys.readouterr().err == "pfscope compute: another run holds out/.lock\n"


def test_a_crash_is_one_line_and_its_whole_text_in_a_file(
    capsys: pytest.CaptureFixture[str], crashes_here: Path
) -> None:
    status = run_command("compute", _deep_failure, after_crash="the previous run is still published")
    err = capsys.readouterr().err
    assert status == ExitStatus.CRASH == 1
    assert err.count("\n") == 1 and err.startswith(
        "pfscope compute: failed (RuntimeError): the fold broke; the previous run is still published; "
        "the whole text: "
    )
    written = sorted(crashes_here.iterdir())
    assert len(written) == 1 and str(written[0]) in err and written[0].name.startswith("compute-")
    text = written[0].read_text(encoding="utf-8")
    assert "Traceback (most recent call last)" in text and "_deep_failure" in text
    assert "second line of the message" in text
    assert stat.S_IMODE(written[0].stat().st_mode) == 0o600  # it may name paths and hosts


def test_debug_prints_the_whole_text_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], crashes_here: Path
) -> None:
    assert run_command("ingest", _deep_failure, debug=True, after_crash="nothing written") == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "_deep_failure" in err
    assert err.splitlines()[-1] == (
        "pfscope ingest: failed (RuntimeError): the fold broke; nothing written; the traceback is above"
    )
    assert not crashes_here.exists()


def test_a_long_first_line_is_cut(capsys: pytest.CaptureFixture[str]) -> None:
    def long() -> int:
        raise ValueError("x" * 5000)

    run_command("report", long)
    line = capsys.readouterr().err
    assert "x" * command.FIRST_LINE_CHARS in line and "x" * (command.FIRST_LINE_CHARS + 1) not in line


def test_a_crash_folder_that_cannot_be_written_says_debug(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setattr(command, "crash_folder", lambda: blocked / "crashes")
    assert run_command("serve", _deep_failure) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "its traceback could not be written" in err and "--debug" in err


def test_the_jvm_s_stack_trace_of_a_cause_is_in_the_whole_text() -> None:
    """PySpark keeps a Spark error's JVM stack trace apart (``_stackTrace``) unless asked to show it."""

    class Captured(Exception):
        _stackTrace = "org.apache.spark.SparkException: boom\n\tat org.apache.spark.Foo.bar(Foo.scala:1)"

    try:
        try:
            raise Captured("boom")
        except Captured as inner:
            raise RuntimeError("the job failed") from inner
    except RuntimeError as e:
        text = whole_text(e)
    assert "The JVM's stack trace of Captured:" in text and "Foo.scala:1" in text
    assert text.count("Foo.scala:1") == 1
