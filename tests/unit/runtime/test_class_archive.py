"""The driver JVM's class archive: named for this environment's Java and Spark, used only when
it is there and whole (without Spark: the archive itself is made by ``scripts/setup``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pfscope.spark_jobs.compute import make_archive
from pfscope.spark_jobs.runtime import class_archive


def test_the_archive_belongs_to_this_environment() -> None:
    path = class_archive.archive_path()
    if path is None:
        pytest.skip("no Java on this machine")
    assert path.name.startswith("spark-classes-") and path.suffix == ".jsa"
    assert path.parent.parts[-2:] == ("share", "pfscope")
    assert class_archive.archive_path() == path  # the same key every time


def test_java_options_only_when_the_archive_exists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = tmp_path / "spark-classes-abc.jsa"
    monkeypatch.setattr(class_archive, "archive_path", lambda: archive)
    assert class_archive.java_options() == ""
    archive.write_bytes(b"x")
    assert class_archive.java_options() == f"-XX:SharedArchiveFile={archive} {class_archive.QUIET}"
    monkeypatch.setattr(class_archive, "archive_path", lambda: None)  # no Java
    assert class_archive.java_options() == ""


def test_if_missing_keeps_an_archive_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # type: ignore[no-untyped-def]
    archive = tmp_path / "spark-classes-abc.jsa"
    archive.write_bytes(b"x")
    monkeypatch.setattr(make_archive, "archive_path", lambda: archive)
    monkeypatch.setattr(make_archive, "build", lambda: pytest.fail("made again"))
    assert make_archive.main(["--if-missing"]) == 0
    assert capsys.readouterr().out == f"class archive: {archive} (kept)\n"
