"""``pfscope plan``'s actions as the operator writes them (a bad one is one line), and a plan's
result against the baseline forecast."""

from __future__ import annotations

import pytest

from pfscope.spark_jobs.model.errors import ExitStatus
from pfscope.spark_jobs.model.forecast.actions import Decommission, ReplicaChange, Restore, StoreStatus
from pfscope.spark_jobs.model.forecast.plan import (
    MAX_ACTIONS,
    Known,
    PlanError,
    parse_action,
    parse_plan,
    parse_time,
)
from pfscope.spark_jobs.model.forecast.verdict import Moved, compare
from pfscope.spark_jobs.model.timeutil import DAY, HOUR, MINUTE, parse_ts

AS_OF = parse_ts("2026-11-06T12:00:00Z")
KNOWN = Known(
    AS_OF, {"PFS1", "PFS2", "PFS3"}, {"1-123": ("PFS1", "PFS2"), "1-456": ("PFS1",)}, AS_OF - 10 * DAY
)


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
    assert parse_action("down PFS2 at +2h until +8h", KNOWN) == [
        StoreStatus(AS_OF + 2 * HOUR, "PFS2", False),
        StoreStatus(AS_OF + 8 * HOUR, "PFS2", True),
    ]
    assert parse_action("down PFS2", KNOWN) == [StoreStatus(AS_OF, "PFS2", False)]  # for good, now
    assert parse_action("up PFS1 at +1d", KNOWN) == [StoreStatus(AS_OF + DAY, "PFS1", True)]


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
        ("remove PFS2 1-123", "say remove STORE from FID"),
        ("add PFS3 to 9-999", "no folder with FID '9-999'"),
        ("restore PFS2 +2h", "say restore STORE from B"),
        ("restore PFS2 from 2026-11-07T00:00:00Z", "is after the run's as-of"),
        ("restore PFS2 from 2026-10-01T00:00:00Z", "before the log starts"),
        ("decommission PFS2 at +1h soon", "takes a time"),
    ],
)
def test_a_bad_action_is_one_line_and_exit_status_2(text: str, said: str) -> None:
    with pytest.raises(PlanError, match=said) as e:
        parse_action(text, KNOWN)
    assert "\n" not in str(e.value) and e.value.exit_status == ExitStatus.USAGE


def row(store: str, in_sync_at: int | None) -> dict[str, object]:
    return {"store": store, "fid": "1-123", "in_sync_at": in_sync_at}


def test_a_plan_beside_the_baseline() -> None:
    same = compare([row("PFS2", 10)], [row("PFS2", 10)])
    assert same.safe and same.changed == [] and same.settles_at is None
    later = compare([row("PFS2", 10), row("PFS3", 5)], [row("PFS2", 30), row("PFS3", 5)])
    assert later.safe and later.changed == [Moved("PFS2", "1-123", 10, 30)] and later.settles_at == 30
    never = compare([row("PFS2", 10)], [row("PFS2", None)])
    assert not never.safe and never.settles_at is None
    assert never.reasons == ["PFS2 would not get in sync on 1-123 within 14 days (it does without the plan)"]
    # a replica the plan makes lack CNs it did not lack: moved from nothing to its time
    new = compare([], [row("PFS2", 40)])
    assert (
        new.changed == [Moved("PFS2", "1-123", None, 40, lacked_before=False)]
        and new.settles_at == 40
        and new.safe
    )
    # a replica the plan removes: off the list, not "never in sync"
    gone = compare([row("PFS2", 10)], [], removed={("PFS2", "1-123")})
    assert gone.safe and gone.changed == [Moved("PFS2", "1-123", 10, None, removed=True)]


def test_list_changes_decommission_and_restore_as_written() -> None:
    assert parse_action("remove PFS2 from 1-123 at +1h", KNOWN) == [
        ReplicaChange(AS_OF + HOUR, "PFS2", "1-123", False)
    ]
    assert parse_action("add PFS3 to 1-123", KNOWN) == [ReplicaChange(AS_OF, "PFS3", "1-123", True)]
    assert parse_action("decommission PFS2 at +2d", KNOWN) == [Decommission(AS_OF + 2 * DAY, "PFS2")]
    assert parse_action("decommission PFS2 immediately", KNOWN) == [Decommission(AS_OF, "PFS2", True)]
    assert parse_action("restore PFS2 from 2026-11-05T00:00:00Z at +3h", KNOWN) == [
        Restore(AS_OF + 3 * HOUR, "PFS2", parse_ts("2026-11-05T00:00:00Z"))
    ]


def test_list_changes_are_checked_in_the_plan_s_time_order() -> None:
    with pytest.raises(PlanError, match="PFS1 is on its list already"):
        parse_plan(["add PFS1 to 1-123"], KNOWN)
    with pytest.raises(PlanError, match="PFS3 is not on its list then"):
        parse_plan(["remove PFS3 from 1-123"], KNOWN)
    # removed first, added back later: each is right in its turn, whatever the order written
    both = parse_plan(["add PFS2 to 1-123 at +2h", "remove PFS2 from 1-123 at +1h"], KNOWN)
    assert len(both) == 2
    with pytest.raises(PlanError, match="on its list already"):
        parse_plan(["add PFS2 to 1-123 at +1h", "remove PFS2 from 1-123 at +2h"], KNOWN)
    with pytest.raises(PlanError, match=f"at most {MAX_ACTIONS}"):
        parse_plan(["up PFS1"] * (MAX_ACTIONS + 1), KNOWN)
