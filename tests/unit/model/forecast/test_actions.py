"""A plan's actions in the play forward: a plan of no actions is the baseline forecast; a store
down for maintenance holds back the requests it should answer until it is back; down for good,
the replica that needs it does not catch up."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from pfscope.spark_jobs.model.cnset import CNSet
from pfscope.spark_jobs.model.forecast.actions import (
    Action,
    Backup,
    Decommission,
    ReplicaChange,
    Restore,
    StoreStatus,
    down_for_maintenance,
)
from pfscope.spark_jobs.model.forecast.folder import forecast_folder
from pfscope.spark_jobs.model.forecast.planner import FolderStart, PlayedPlan, play_plan
from pfscope.spark_jobs.model.forecast.play import DOWN, REMOVED, RESTORED
from pfscope.spark_jobs.model.forecast.restore import restore_stories, story_lines
from pfscope.spark_jobs.model.forecast.verdict import Moved, PlanResult, judge
from pfscope.spark_jobs.model.timeutil import SECOND
from tests.logbuilder import H, Log, M, at, topology
from tests.unit.model.forecast.test_folder import FID, STORES, forecast, play_inputs, told_by_p2


def plan(log: Log, as_of: int, actions: Sequence[Action]) -> list[dict[str, Any]]:
    result, org, mail, transits = play_inputs(log, as_of)
    folds = {s: f for (s, fid), f in result.folds.items() if fid == FID}
    return forecast_folder(org, FID, folds, mail.get(FID, []), result.as_of, transits, actions).forecast


def test_a_plan_of_no_actions_is_the_baseline_forecast() -> None:
    log = Log(topology(STORES, folders={FID: ["P1", "P2", "P3"]}))
    told_by_p2(log)
    _, baseline, _ = forecast(log, 61 * H)
    assert baseline and plan(log, 61 * H, []) == baseline


def test_the_source_down_for_maintenance_answers_once_it_is_back() -> None:
    """P3's request falls due at 66:10 and goes to P2 (12 min); P2 is down from 62 h to 70 h: the
    request waits in P2's queue, is processed a second after P2 is back, and the reply takes
    P2->P3's 10 minutes."""
    log = Log(topology(STORES, folders={FID: ["P1", "P2", "P3"]}))
    told_by_p2(log)
    (row,) = plan(log, 61 * H, down_for_maintenance("P2", at(62 * H), at(70 * H)))
    assert row["store"] == "P3" and row["in_sync_at"] == at(70 * H) + SECOND + 10 * M
    (base,) = plan(log, 61 * H, [])
    assert base["in_sync_at"] == at(66 * H + 10 * M + 12 * M + 10 * M)  # as without the plan


def test_the_source_down_for_good_leaves_the_replica_lacking() -> None:
    log = Log(topology(STORES, folders={FID: ["P1", "P2", "P3"]}))
    told_by_p2(log)
    (row,) = plan(log, 61 * H, down_for_maintenance("P2", at(62 * H), None))
    assert row["in_sync_at"] is None and row["latest_in_sync_at"] is None
    assert row["waits_for"] == ["P2"]


def test_actions_outside_the_horizon_or_backwards_are_refused_or_ignored() -> None:
    with pytest.raises(ValueError, match="must end after it starts"):
        down_for_maintenance("P2", 10, 10)
    log = Log(topology(STORES, folders={FID: ["P1", "P2", "P3"]}))
    told_by_p2(log)
    # before the as-of: not the plan's to change (the run already knows what happened)
    assert plan(log, 61 * H, [StoreStatus(at(60 * H), "P2", False)]) == plan(log, 61 * H, [])


# -- a plan's every action, on a log where P1 holds a change no other replica holds yet ------------
# P1 makes P1:4 at 60:50; its next cycle (15 min after the as-of, 61 h) sends it to P2 and P3
FOUR = ["P1", "P2", "P3", "P4"]


def unique_on_p1() -> Log:
    log = Log(topology({s: ("A", "2003") for s in FOUR}, folders={FID: ["P1", "P2", "P3"]}))
    told_by_p2(log)
    log.changes(60 * H + 50 * M, "P1", FID, [4])
    return log


def judged(log: Log, actions: Sequence[Action]) -> tuple[PlayedPlan, PlanResult]:
    result, org, mail, transits = play_inputs(log, 61 * H)
    starts: dict[str, FolderStart] = {}
    for (store, fid), fold in result.folds.items():
        start = starts.setdefault(fid, FolderStart({}, mail.get(fid, [])))
        start.folds[store] = fold  # type: ignore[index]
    played = play_plan(org, starts, result.as_of, transits, actions)
    return played, judge(played)


def test_a_store_down_for_good_with_content_only_it_holds_is_not_safe() -> None:
    _, result = judged(unique_on_p1(), [StoreStatus(at(61 * H), "P1", False)])
    (risk,) = result.at_risk
    assert (risk.store, risk.cause, risk.cns.text(), risk.until) == ("P1", DOWN, "P1:4", None)
    assert result.verdict == "not safe" and result.reasons[0].startswith(
        f"{FID} would lose P1:4 while P1 stays down"
    )
    assert {m.store for m in result.changed if m.after is None} == {"P2", "P3"}  # they never get P1:4


def test_a_maintenance_puts_the_content_at_risk_until_the_store_is_back_and_waiting_makes_it_safe() -> None:
    log = unique_on_p1()
    _, during = judged(log, down_for_maintenance("P1", at(61 * H), at(63 * H)))
    (risk,) = during.at_risk
    assert risk.until == at(63 * H) and not during.safe  # back, and its change goes out in its next cycle
    assert during.settles_at is not None and during.settles_at > at(63 * H)
    # once P1's cycle has sent P1:4 (61:15, 5 min on the way), the same maintenance risks nothing
    _, later = judged(log, down_for_maintenance("P1", at(63 * H), at(65 * H)))
    assert later.safe and later.at_risk == []


def test_a_removed_replica_sends_what_only_it_holds_before_it_goes() -> None:
    played, result = judged(unique_on_p1(), [ReplicaChange(at(61 * H), "P1", FID, False)])
    (risk,) = result.at_risk
    assert risk.cause == REMOVED and risk.until is not None  # its status request's content message
    assert played.planned[FID].removed == {"P1"}
    assert any(m.store == "P1" and m.removed for m in result.changed)
    # removed, P1 sends P1:4 right away: P2 and P3 hold it sooner than by its next cycle
    moved = {m.store: m for m in result.changed if not m.removed}
    assert moved["P2"].after is not None and moved["P2"].before is not None
    assert moved["P2"].after < moved["P2"].before


def test_an_added_replica_backfills_the_whole_folder() -> None:
    played, result = judged(unique_on_p1(), [ReplicaChange(at(61 * H), "P4", FID, True)])
    (row,) = [r for r in played.planned[FID].forecast if r["store"] == "P4"]
    assert row["lacks_cnset"] == "P1:1-4;P3:1" and row["in_sync_at"] is not None
    assert result.safe and Moved("P4", FID, None, row["in_sync_at"], lacked_before=False) in result.changed
    assert any(t.recipient == "P4" and t.after.cns > t.before.cns for t in result.traffic)


def test_a_restore_loses_the_changes_after_the_backup_that_no_other_replica_holds() -> None:
    backup = Backup(CNSet.parse("P1:1-3;P3:1"), {"P2": CNSet.parse("P1:1-3;P3:1")})
    restore = Restore(at(61 * H), "P1", at(30 * M), {FID: backup})
    _, result = judged(unique_on_p1(), [restore])
    (risk,) = result.at_risk
    assert (risk.cause, risk.cns.text(), risk.until) == (RESTORED, "P1:4", None)
    assert not result.safe and "P1:4" in result.reasons[0]
    # a backup before P1:4 was made, taken when it had just gone out (P2 holds it) loses nothing
    restore_late = Restore(at(62 * H), "P1", at(30 * M), {FID: backup})
    _, after_cycle = judged(unique_on_p1(), [restore_late])
    assert after_cycle.at_risk == [] and after_cycle.safe


def test_a_decommission_goes_down_once_nothing_of_it_is_at_risk() -> None:
    played, result = judged(unique_on_p1(), [Decommission(at(61 * H), "P1")])
    (d,) = played.decommissioned
    removal = [r for r in result.at_risk if r.cause == REMOVED]
    assert removal and d.down_at == max(r.until or 0 for r in removal) + SECOND
    assert StoreStatus(d.down_at, "P1", False) in played.played
    assert not any(r.cause == DOWN for r in result.at_risk)  # down only after it is safe
    assert all(m.after is not None for m in result.changed if not m.removed)
    # at once: down with the removal, and P1:4 is lost
    played_now, now = judged(unique_on_p1(), [Decommission(at(61 * H), "P1", at_once=True)])
    assert played_now.decommissioned[0].down_at == at(61 * H)
    assert any(r.until is None for r in now.at_risk) and not now.safe


def test_a_restore_said_plainly_what_it_loses_backfills_from_whom_and_when() -> None:
    backup = Backup(CNSet.parse("P3:1"), {"P2": CNSet.parse("P3:1")})  # taken before P1 made P1:1-3
    played, result = judged(unique_on_p1(), [Restore(at(61 * H), "P1", at(30 * M), {FID: backup})])
    (story,) = restore_stories(played, result)
    assert story.lost == {FID: CNSet.parse("P1:4")}  # P1:1-3 went out before: P2 holds them
    assert story.backfill == {FID: CNSet.parse("P1:1-3")} and set(story.sources) == {"P2"}
    assert story.first_due is not None and story.first_due > at(61 * H) + M  # after its status request
    assert story.in_sync is not None and story.never == 0 and story.requests >= 1
    lines = story_lines(story)
    assert lines[1] == "  loses 1 CN in 1 folder: its changes after the backup that no other replica holds"
    assert any(line.startswith("  backfills 3 CNs in 1 folder, from P2 (1 folder)") for line in lines)
