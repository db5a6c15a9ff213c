"""The job's pure choices, without a session."""

from __future__ import annotations

import pytest

from pfscope.spark_jobs.compute.job import (
    MIN_ROWS_PER_FOLD_PARTITION,
    ROWS_PER_FOLD_PARTITION,
    fold_partitions_for,
)


@pytest.mark.parametrize(
    ("cores", "accepted", "partitions"),
    [
        (2, 0, 1),
        (2, 128, 1),  # the worked example: one task
        (2, MIN_ROWS_PER_FOLD_PARTITION + 1, 2),  # the demo's size: one per core
        (2, 4 * MIN_ROWS_PER_FOLD_PARTITION, 4),  # two per core
        (2, 5 * ROWS_PER_FOLD_PARTITION - 1, 6),  # 5 wanted, rounded up to whole waves
        (1, 10**6, 4),
        (4, 10**7, 40),
    ],
)
def test_fold_partitions_follow_the_accepted_events(cores: int, accepted: int, partitions: int) -> None:
    assert fold_partitions_for(cores, accepted) == partitions


def test_fold_partitions_never_shrink_as_the_log_grows() -> None:
    counts = [fold_partitions_for(2, n) for n in range(0, 3_000_000, 7_919)]
    assert counts == sorted(counts)
