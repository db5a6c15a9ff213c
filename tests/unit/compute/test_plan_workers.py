"""``plan_workers.forked``: every folder handed to exactly one forked worker, results back."""

from __future__ import annotations

import os

import pytest

from pfscope.spark_jobs.compute import plan_workers
from pfscope.spark_jobs.model.forecast.planner import in_turn


def _where(chunk: list[str]) -> tuple[int, list[str]]:
    return os.getpid(), chunk


def test_every_folder_goes_to_one_worker_and_comes_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plan_workers, "MIN_FOLDERS", 1)
    fids = [f"1-{i}" for i in range(50)]
    parts = plan_workers.forked(2)(_where, fids)
    assert sorted(f for _, chunk in parts for f in chunk) == sorted(fids)
    assert len(parts) == 2 * plan_workers.CHUNKS_PER_WORKER
    pids = {pid for pid, _ in parts}
    assert os.getpid() not in pids and 1 <= len(pids) <= 2


def test_a_worker_s_error_reaches_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plan_workers, "MIN_FOLDERS", 1)

    def fails(chunk: list[str]) -> None:
        raise ValueError(f"no play for {chunk[0]}")

    with pytest.raises(ValueError, match="no play for 1-"):
        plan_workers.forked(2)(fails, ["1-1", "1-2", "1-3"])


def test_few_folders_or_one_core_stay_in_this_process() -> None:
    assert plan_workers.forked(1) is in_turn
    few = [f"1-{i}" for i in range(plan_workers.MIN_FOLDERS - 1)]
    assert plan_workers.forked(2)(_where, few) == [(os.getpid(), few)]
