"""Replica health: the first state that holds, in the model's precedence."""

from __future__ import annotations

import pytest

from pfscope.spark_jobs.model.rules.health import replica_health


@pytest.mark.parametrize("requests", [[], [0], [1], [2], [5, 0]])
def test_deleted_comes_first(requests: list[int]) -> None:
    assert replica_health("deleted", requests) == "deleted"


@pytest.mark.parametrize("requests", [[], [0], [1], [2], [5, 0]])
def test_delete_pending_comes_before_entries(requests: list[int]) -> None:
    assert replica_health("delete_pending", requests) == "delete_pending"


@pytest.mark.parametrize("requests", [[2], [3], [7], [0, 2], [1, 1, 2]])
def test_overdue_when_an_open_entry_had_two_requests_or_more(requests: list[int]) -> None:
    assert replica_health("active", requests) == "overdue"


@pytest.mark.parametrize("requests", [[0], [1], [0, 1, 1]])
def test_backfilling_when_open_entries_none_overdue(requests: list[int]) -> None:
    assert replica_health("active", requests) == "backfilling"


def test_in_sync_without_open_entries() -> None:
    assert replica_health("active", []) == "in_sync"


def test_accepts_a_generator_of_counts() -> None:
    assert replica_health("active", (n for n in (1, 2))) == "overdue"
