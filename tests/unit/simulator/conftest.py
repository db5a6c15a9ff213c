"""Simulated runs shared by the simulator tests (each scenario is simulated once per session)."""

from __future__ import annotations

import io
from dataclasses import dataclass

import pytest

from pfscope.spark_jobs.model.events import EventLog
from pfscope.spark_jobs.model.replay import ReplayResult, replay
from pfscope.spark_jobs.simulator import Simulator, build, run_scenario
from tests.logbuilder import event_log_from_lines


@dataclass
class SimRun:
    sim: Simulator
    text: str
    log: EventLog
    result: ReplayResult


def simulate(name: str, seed: int, **options: object) -> SimRun:
    scenario = build(name, seed, dict(options))
    buf = io.StringIO()
    sim = run_scenario(scenario, buf, seed)
    text = buf.getvalue()
    log = event_log_from_lines(text.splitlines(), scenario.topology)
    return SimRun(sim, text, log, replay(scenario.topology, log))


@pytest.fixture(scope="session")
def demo_run() -> SimRun:
    return simulate("demo", 1)
