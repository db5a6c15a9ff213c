"""``pfscope plan``'s actions as the operator writes them (a bad one is one line), and a plan's
result against the baseline forecast."""

from __future__ import annotations

import pytest

from pfscope.spark_jobs.model.errors import ExitStatus
from pfscope.spark_jobs.model.forecast.actions import StoreStatus
from pfscope.spark_jobs.model.forecast.plan import PlanError, compare, parse_action, parse_time
from pfscope.spark_jobs.model.timeutil import DAY, HOUR, MINUTE, parse_ts

AS_OF = parse_ts("2026-11-06T12:00:00Z")
STORES = {"PFS1", "PFS2"}


def test_times_relative_to_the_as_of_or_absolute_never_before_it() -> None:
    assert parse_time("+30m", AS_OF) == AS_OF + 30 * MINUTE
    assert parse_time("+6h", AS_OF) == AS_OF + 6 * HOUR
    assert parse_time("+2d", AS_OF) == AS_OF + 2 * DAY
    assert parse_time("2026-11-07T00:00:00Z", AS_OF) == parse_ts("2026-11-07T00:00:00Z")
    with pytest.raises(PlanError, match="before the run's as-of"):
        parse_time("2026-11-01T00:00:00Z", AS_OF)
    with pytest.raises(PlanError, match="neither RFC 3339 nor relative"):
        parse_time("tomorrow", AS_OF)


def test_down_and_up_as_written() -> None:
    assert parse_action("down PFS2 at +2h until +8h", AS_OF, STORES) == [
        StoreStatus(AS_OF + 2 * HOUR, "PFS2", False),
        StoreStatus(AS_OF + 8 * HOUR, "PFS2", True),
    ]
    assert parse_action("down PFS2", AS_OF, STORES) == [StoreStatus(AS_OF, "PFS2", False)]  # for good, now
    assert parse_action("up PFS1 at +1d", AS_OF, STORES) == [StoreStatus(AS_OF + DAY, "PFS1", True)]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("", "an empty action"),
        ("reboot PFS2", "say down STORE"),
        ("down NOPE", "no store named 'NOPE'"),
        ("down PFS2 at", "takes a time"),
        ("down PFS2 when +2h", "'when' is not one of at, until"),
        ("up PFS2 until +2h", "'until' is not one of at"),
        ("down PFS2 at +8h until +2h", "must end after it starts"),
        ("remove PFS2 from 1-123", "does not play 'remove' yet"),
    ],
)
def test_a_bad_action_is_one_line_and_exit_status_2(text: str, said: str) -> None:
    with pytest.raises(PlanError, match=said) as e:
        parse_action(text, AS_OF, STORES)
    assert "\n" not in str(e.value) and e.value.exit_status == ExitStatus.USAGE


def row(store: str, in_sync_at: int | None) -> dict[str, object]:
    return {"store": store, "fid": "1-123", "in_sync_at": in_sync_at}


def test_a_plan_beside_the_baseline() -> None:
    same = compare([row("PFS2", 10)], [row("PFS2", 10)])
    assert same.safe and same.changed == [] and same.settles_at is None
    later = compare([row("PFS2", 10), row("PFS3", 5)], [row("PFS2", 30), row("PFS3", 5)])
    assert later.safe and later.changed == [("PFS2", "1-123", 10, 30)] and later.settles_at == 30
    never = compare([row("PFS2", 10)], [row("PFS2", None)])
    assert not never.safe and never.settles_at is None
    assert never.reasons == ["PFS2 would not get in sync on 1-123 within 14 days (it does without the plan)"]
    # a replica the plan makes lack CNs it did not lack: moved from nothing to its time
    new = compare([], [row("PFS2", 40)])
    assert new.changed == [("PFS2", "1-123", None, 40)] and new.settles_at == 40 and new.safe
