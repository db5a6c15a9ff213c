"""Seed 004 reproduced: the "who knows what" table at each step of its walkthrough.

Cells are (subject row, observer column) as in the seed; the diagonal is the observer's own
set and last sent CN. Where the seed's simplified tables contradict themselves (PFS1 still
showing PFS3:1-30 after it received change 31), the consistent value is used.
"""

from __future__ import annotations

import pytest

from pfscope.spark_jobs.model.replay import replay
from pfscope.spark_jobs.model.timeutil import HOUR
from pfscope.spark_jobs.simulator.scenarios import WORKED_FID, worked_example
from tests.unit.simulator.conftest import simulate

STORES = ("PFS1", "PFS2", "PFS3")
FULL = "PFS1:1-10;PFS2:1-20;PFS3:1-30"

# checkpoint -> {subject: (cell seen by PFS1, by PFS2, by PFS3)}; "*N" marks a self cell with last sent CN N
EXPECTED = {
    "synchronised": {
        "PFS1": ("*10 " + FULL, FULL, FULL),
        "PFS2": (FULL, "*20 " + FULL, FULL),
        "PFS3": (FULL, FULL, "*30 " + FULL),
    },
    "pfs1_change_11": {
        "PFS1": (
            "*11 PFS1:1-11;PFS2:1-20;PFS3:1-30",
            "PFS1:1-11;PFS2:1-20;PFS3:1-30",
            "PFS1:1-11;PFS2:1-20;PFS3:1-30",
        ),
        "PFS2": (FULL, "*20 PFS1:1-11;PFS2:1-20;PFS3:1-30", FULL),
        "PFS3": (FULL, FULL, "*30 PFS1:1-11;PFS2:1-20;PFS3:1-30"),
    },
    "pfs3_change_31": {
        "PFS1": (
            "*11 PFS1:1-11;PFS2:1-20;PFS3:1-31",
            "PFS1:1-11;PFS2:1-20;PFS3:1-30",
            "PFS1:1-11;PFS2:1-20;PFS3:1-30",
        ),
        "PFS2": (FULL, "*20 PFS1:1-11;PFS2:1-20;PFS3:1-31", FULL),
        "PFS3": (
            "PFS1:1-11;PFS2:1-20;PFS3:1-31",
            "PFS1:1-11;PFS2:1-20;PFS3:1-31",
            "*31 PFS1:1-11;PFS2:1-20;PFS3:1-31",
        ),
    },
    "outage": {
        "PFS1": (
            "*16 PFS1:1-16;PFS2:1-28;PFS3:1-31",
            "PFS1:1-16;PFS2:1-20;PFS3:1-31",
            "PFS1:1-11;PFS2:1-20;PFS3:1-30",
        ),
        "PFS2": ("PFS1:1-16;PFS2:1-28;PFS3:1-31", "*28 PFS1:1-16;PFS2:1-28;PFS3:1-31", FULL),
        "PFS3": (
            "PFS1:1-11;PFS2:1-20;PFS3:1-31",
            "PFS1:1-11;PFS2:1-20;PFS3:1-31",
            "*31 PFS1:1-11;PFS2:1-20;PFS3:1-31",
        ),
    },
    "backfill_filed": {
        # PFS3 holds PFS1:17 but not 12-16: "FID1-123:PFS1:1-11, 17"
        "PFS1": (
            "*17 PFS1:1-17;PFS2:1-28;PFS3:1-31",
            "PFS1:1-17;PFS2:1-28;PFS3:1-31",
            "PFS1:1-17;PFS2:1-28;PFS3:1-31",
        ),
        "PFS3": (
            "PFS1:1-11;PFS2:1-20;PFS3:1-31",
            "PFS1:1-11;PFS2:1-20;PFS3:1-31",
            "*31 PFS1:1-11,17;PFS2:1-20;PFS3:1-31",
        ),
    },
}


@pytest.fixture(scope="module")
def run():  # type: ignore[no-untyped-def]
    return simulate("worked-example", 1)


def matrix(run, at: int) -> dict[tuple[str, str], str]:  # type: ignore[no-untyped-def]
    result = replay(run.sim.topo, run.log, at)
    out = {}
    for r in result.tables["state_table"]:
        if r["fid"] == WORKED_FID:
            cell = f"*{r['last_sent_cn']} {r['cnset']}" if r["is_self"] else r["cnset"]
            out[(r["subject"], r["observer"])] = cell
    return out


@pytest.mark.parametrize("checkpoint", list(EXPECTED))
def test_state_table_at_each_step(run, checkpoint: str) -> None:  # type: ignore[no-untyped-def]
    at = worked_example().notes["checkpoints"][checkpoint]
    got = matrix(run, at)
    for subject, cells in EXPECTED[checkpoint].items():
        for observer, cell in zip(STORES, cells, strict=True):
            assert got[(subject, observer)] == cell, (checkpoint, subject, observer)


def test_the_backfill_entry_and_its_request(run) -> None:  # type: ignore[no-untyped-def]
    checkpoints = worked_example().notes["checkpoints"]
    filed = replay(run.sim.topo, run.log, checkpoints["backfill_filed"]).tables
    [entry] = filed["backfill_entries"]
    assert entry["observer"] == "PFS3"
    assert entry["cnset_opened"] == "PFS1:12-16;PFS2:21-28"  # "Backfill Request PFS1:12-16, PFS2:21-28"
    assert entry["state"] == "open" and entry["locality"] == "local" and not entry["new_replica"]
    assert entry["next_due_at"] == entry["opened_at"] + 6 * HOUR  # waits six hours, in its site
    assert filed["backfill_requests"] == []

    done = run.result.tables
    [entry] = done["backfill_entries"]
    assert entry["state"] == "satisfied" and entry["requests"] == 1
    [request] = done["backfill_requests"]
    assert request["at"] == entry["opened_at"] + 6 * HOUR
    assert (request["source"], request["cnset"], request["algorithm"]) == (
        "PFS1",
        "PFS1:12-16;PFS2:21-28",
        "2003+",
    )
    # PFS2 has sent PFS3 nothing since the outage, so PFS3 does not believe it holds any of
    # the missing CNs: it is no candidate, and PFS1 holds all of them.
    [cand] = done["backfill_candidates"]
    assert (cand["candidate"], cand["holds_count"], cand["chosen"]) == ("PFS1", 13, True)
    assert {r["health"] for r in done["replicas"]} == {"in_sync"}
