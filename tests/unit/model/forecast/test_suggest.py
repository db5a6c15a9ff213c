"""Suggestions for a plan that is not safe: each is safe where the plan was not, and is found by
the rules (a later start once the content has gone out, a store that is down brought back first,
a replica added first)."""

from __future__ import annotations

from collections.abc import Sequence

from pfscope.spark_jobs.model.forecast.actions import Action, ReplicaChange, StoreStatus
from pfscope.spark_jobs.model.forecast.planner import FolderStart, PlayedPlan, play_plan
from pfscope.spark_jobs.model.forecast.suggest import Suggestion, Trial, at_issue, suggest
from pfscope.spark_jobs.model.forecast.verdict import PlanResult, judge
from tests.logbuilder import H, Log, M, at
from tests.unit.model.forecast.test_actions import unique_on_p1
from tests.unit.model.forecast.test_folder import FID, play_inputs

AS_OF = 61 * H


def suggestions(log: Log, actions: Sequence[Action]) -> tuple[PlanResult, list[Suggestion], Trial]:
    result, org, mail, transits = play_inputs(log, AS_OF)
    starts: dict[str, FolderStart] = {}
    for (store, fid), fold in result.folds.items():
        start = starts.setdefault(fid, FolderStart({}, mail.get(fid, [])))
        start.folds[store] = fold  # type: ignore[index]
    lists = {fid: next(iter(s.folds.values())).replicas for fid, s in starts.items()}

    def trial(plan: Sequence[Action], fids: set[str]) -> tuple[PlayedPlan, PlanResult]:
        played = play_plan(org, {f: starts[f] for f in fids}, result.as_of, transits, plan)
        return played, judge(played)

    played, verdict = trial(actions, set(starts))
    return verdict, suggest(actions, played, verdict, result.as_of, log.topo, lists, trial), trial


def test_a_plan_that_is_safe_gets_no_suggestion() -> None:
    verdict, found, _ = suggestions(unique_on_p1(), [StoreStatus(at(64 * H), "P1", False)])
    assert verdict.safe and found == []


def test_waiting_until_the_content_has_gone_out_or_adding_a_replica_first() -> None:
    """P1 goes down for good at the as-of holding P1:4 alone: lost. Its next cycle (61:15, 5 min on
    the way) sends P1:4 to P2 and P3: starting 30 min later is safe; so is a replica on P4 first."""
    down = [StoreStatus(at(AS_OF), "P1", False)]
    verdict, found, trial = suggestions(unique_on_p1(), down)
    assert not verdict.safe and at_issue(verdict) == {FID}
    whys = [s.why for s in found]
    assert whys[0].startswith("wait 30 min") and found[0].actions == [
        StoreStatus(at(AS_OF) + 30 * M, "P1", False)
    ]
    assert whys[1].startswith("add a replica first (P4 on 1-123)")
    assert ReplicaChange(at(AS_OF), "P4", FID, True) in found[1].actions
    for s in found:  # each, played on every folder, is safe
        assert trial(s.actions, {FID, "1-1"})[1].safe


def test_bringing_back_the_store_that_alone_holds_what_a_replica_needs() -> None:
    """P3 lacks P1:1-3, which P1 and P2 hold; P2 is down at the as-of. Taking P1 down for good
    leaves P3 waiting for P2: bringing P2 back first makes it safe."""
    log = unique_on_p1()
    log.status(60 * H + 55 * M, "P2", "down")
    down = [StoreStatus(at(AS_OF) + H, "P1", False)]  # after P1:4 went out: no content at risk
    verdict, found, trial = suggestions(log, down)
    assert not verdict.safe and verdict.at_risk == []
    assert [s.why.split(":")[0] for s in found] == ["bring P2 back first"]
    assert found[0].actions == [StoreStatus(at(AS_OF), "P2", True), *down]
    assert trial(found[0].actions, {FID, "1-1"})[1].safe
