"""Backfill time-outs: every cell of the table of seed 003 (model: "Time-outs")."""

from __future__ import annotations

import pytest

from pfscope.spark_jobs.model.rules.timeouts import backfill_timeout
from pfscope.spark_jobs.model.timeutil import HOUR, MINUTE


@pytest.mark.parametrize(
    ("local", "expected"),
    [(True, 15 * MINUTE), (False, 12 * HOUR)],
    ids=["local", "remote"],
)
def test_first_request_of_a_new_replica(local: bool, expected: int) -> None:
    assert backfill_timeout(0, local, True) == expected


@pytest.mark.parametrize(
    ("local", "expected"),
    [(True, 6 * HOUR), (False, 12 * HOUR)],
    ids=["local", "remote"],
)
def test_first_request(local: bool, expected: int) -> None:
    assert backfill_timeout(0, local, False) == expected


@pytest.mark.parametrize("new_replica", [False, True])
@pytest.mark.parametrize(
    ("local", "expected"),
    [(True, 12 * HOUR), (False, 24 * HOUR)],
    ids=["local", "remote"],
)
def test_second_request_after_the_first(local: bool, expected: int, new_replica: bool) -> None:
    # the new-replica time-out is only for the first request
    assert backfill_timeout(1, local, new_replica) == expected


@pytest.mark.parametrize("new_replica", [False, True])
@pytest.mark.parametrize("made", [2, 3, 7])
@pytest.mark.parametrize(
    ("local", "expected"),
    [(True, 24 * HOUR), (False, 48 * HOUR)],
    ids=["local", "remote"],
)
def test_every_later_request_after_the_previous(
    local: bool, expected: int, made: int, new_replica: bool
) -> None:
    assert backfill_timeout(made, local, new_replica) == expected
