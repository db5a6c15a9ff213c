"""A pair's transits and what became of a message no recipient processed (``rules.transit``)."""

from __future__ import annotations

import pytest

from pfscope.spark_jobs.model.rules.timeouts import QUEUE_EXPIRY
from pfscope.spark_jobs.model.rules.transit import (
    EXPIRED,
    IN_TRANSIT,
    NO_TRANSIT_SEEN,
    PROCESSED,
    QUEUED,
    median_transit,
    message_state,
    usual_transit,
)
from pfscope.spark_jobs.model.timeutil import HOUR, MINUTE


@pytest.mark.parametrize(
    ("transits", "median"),
    [([7], 7), ([9, 1], 1), ([3, 1, 2], 2), ([4, 1, 3, 2], 2), ([5, 5, 1, 9, 9], 5)],
)
def test_the_median_is_the_lower_middle_transit(transits: list[int], median: int) -> None:
    assert median_transit(transits) == median


def test_a_pair_with_no_transit_has_no_median() -> None:
    with pytest.raises(ValueError):
        median_transit([])


def test_the_usual_transit_is_the_longest_seen_or_an_hour() -> None:
    assert usual_transit(None) == NO_TRANSIT_SEEN == HOUR
    assert usual_transit(5 * HOUR) == 5 * HOUR
    assert usual_transit(-MINUTE) == 0  # a receive logged before its send (clocks apart)


def test_processed_by_the_as_of_is_processed() -> None:
    assert message_state(0, 10 * MINUTE, HOUR, HOUR).state == PROCESSED
    # processed after the as-of: not by then
    assert message_state(0, 2 * HOUR, HOUR, 2 * HOUR).state == IN_TRANSIT


def test_in_transit_then_queued_until_the_queue_expiry_then_expired() -> None:
    usual = 2 * HOUR
    assert message_state(0, None, 2 * HOUR - 1, usual).state == IN_TRANSIT
    queued = message_state(0, None, 2 * HOUR, usual)
    assert (queued.state, queued.expires_at) == (QUEUED, QUEUE_EXPIRY)
    assert message_state(HOUR, None, QUEUE_EXPIRY + HOUR - 1, usual).expires_at == QUEUE_EXPIRY + HOUR
    expired = message_state(0, None, QUEUE_EXPIRY, usual)
    assert (expired.state, expired.expires_at) == (EXPIRED, None)


def test_a_pair_slower_than_the_queue_expiry_goes_from_in_transit_to_expired() -> None:
    usual = QUEUE_EXPIRY + 2 * HOUR  # a message once waited out an outage
    assert message_state(0, None, QUEUE_EXPIRY - 1, usual).state == IN_TRANSIT
    assert message_state(0, None, QUEUE_EXPIRY, usual).state == EXPIRED
