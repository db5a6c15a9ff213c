"""Run folders and LATEST: readers never see a half-written run."""

from __future__ import annotations

import json
import os

import pytest

from spark_jobs.publish import LATEST, PublishError, abandon, new_run_id, publish, read_latest, start_run


def test_nothing_published_yet(tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert read_latest(tmp_path) is None


def test_publish_points_latest_at_the_complete_run(tmp_path) -> None:  # type: ignore[no-untyped-def]
    run = start_run(tmp_path)
    (run.path / "stores").mkdir()
    pointer = publish(run, {"as_of": "2026-11-08T23:59:00Z"})
    assert pointer["run_id"] == run.run_id and pointer["path"] == f"runs/{run.run_id}"
    latest = read_latest(tmp_path)
    assert latest == json.loads((tmp_path / LATEST).read_text())
    assert (tmp_path / latest["path"] / "stores").is_dir()
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".LATEST.")]  # no temporary left


def test_a_failed_run_leaves_the_previous_one(tmp_path) -> None:  # type: ignore[no-untyped-def]
    good = start_run(tmp_path)
    publish(good, {})
    bad = start_run(tmp_path)
    (bad.path / "half-written").write_text("x")
    abandon(bad)
    assert not bad.path.exists()
    assert read_latest(tmp_path)["run_id"] == good.run_id


def test_run_ids_sort_by_time_and_do_not_collide() -> None:
    from datetime import UTC, datetime

    a = new_run_id(datetime(2026, 11, 1, tzinfo=UTC))
    b = new_run_id(datetime(2026, 11, 2, tzinfo=UTC))
    assert a < b
    assert len({new_run_id() for _ in range(50)}) == 50


def test_unusable_output_folder_is_one_clear_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(PublishError, match="cannot create the output folder"):
        start_run(blocker / "out")


def test_corrupt_pointer_is_reported(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / LATEST).write_text("{not json")
    with pytest.raises(PublishError, match="unreadable"):
        read_latest(tmp_path)
    (tmp_path / LATEST).write_text('{"run": 1}')
    with pytest.raises(PublishError, match="not a pfscope LATEST pointer"):
        read_latest(tmp_path)
