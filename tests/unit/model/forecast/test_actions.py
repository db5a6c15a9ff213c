"""A plan's actions in the play forward: a plan of no actions is the baseline forecast; a store
down for maintenance holds back the requests it should answer until it is back; down for good,
the replica that needs it does not catch up."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from pfscope.spark_jobs.model.forecast.actions import Action, StoreStatus, down_for_maintenance
from pfscope.spark_jobs.model.forecast.folder import forecast_folder
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
