"""The simulator's own record against what the replay computes from the log it wrote.

The simulator keeps what each store really holds by its own bookkeeping and records every
backfill request it sent; the replay sees only the log. They must agree exactly.
"""

from __future__ import annotations

import pytest

from pfscope.spark_jobs.model.replay import ReplayResult
from tests.unit.simulator.conftest import SimRun, simulate

CASES = [
    ("worked-example", 1, {}),
    ("demo", 1, {}),
    ("demo", 7, {}),
    ("scale", 3, {"stores": 8, "sites": 3, "folders": 40, "replicas": 3, "days": 4, "changes_per_day": 10}),
    ("scale", 11, {"stores": 6, "sites": 2, "folders": 25, "replicas": 2, "days": 3, "changes_per_day": 20}),
]


def owned_by_replay(result: ReplayResult) -> dict[tuple[str, str], str]:
    return {(r["observer"], r["fid"]): r["cnset"] for r in result.tables["state_table"] if r["is_self"]}


@pytest.fixture(scope="module", params=CASES, ids=lambda c: f"{c[0]}-{c[1]}")
def run(request: pytest.FixtureRequest) -> SimRun:
    name, seed, options = request.param
    return simulate(name, seed, **options)


def test_the_log_is_clean(run: SimRun) -> None:
    assert run.log.rejects == []
    assert run.log.duplicates == 0
    assert run.log.accepted == run.sim.stats.events > 0


def test_owned_sets_agree(run: SimRun) -> None:
    replayed = owned_by_replay(run.result)
    held = {k: v.text() for k, v in run.sim.held.items()}
    assert held, "the simulation made no changes"
    for key, cnset in held.items():
        assert replayed.get(key) == cnset, key
    # and the replay finds no content the simulator does not know of
    assert {k for k, v in replayed.items() if v} == {k for k, v in held.items() if v}


def test_backfill_requests_agree(run: SimRun) -> None:
    sent = sorted((r.store, r.fid, r.at, r.source, r.cnset) for r in run.sim.sent_requests)
    observed = sorted(
        (q["observer"], q["fid"], q["at"], q["source"], q["cnset"])
        for q in run.result.tables["backfill_requests"]
        if q["kind"] == "observed"
    )
    assert sent == observed


def test_every_request_was_sent_when_due_to_the_models_choice(run: SimRun) -> None:
    for q in run.result.tables["backfill_requests"]:
        assert q["entry_id"] is not None
        if q["kind"] == "observed":
            assert q["at"] == q["due_at"], q
        assert q["model_chose"] is True, q


def test_same_seed_same_log() -> None:
    a = simulate("demo", 5).text
    b = simulate("demo", 5).text
    c = simulate("demo", 6).text
    assert a == b
    assert a != c
