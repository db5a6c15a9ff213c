"""The protocol simulator: event logs made by the model's own rules, from seed 004's three
stores to organisations of millions of events."""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pfscope.spark_jobs.model.engine import Simulator, Stats
from pfscope.spark_jobs.simulator.network import Network
from pfscope.spark_jobs.simulator.scenarios import SCENARIOS, Scenario, ScenarioError, build

__all__ = [
    "SCENARIOS",
    "Network",
    "Scenario",
    "ScenarioError",
    "Simulator",
    "Stats",
    "run_scenario",
    "simulate_to_folder",
]


def run_scenario(scenario: Scenario, out: Any, seed: int, *, progress: bool = False) -> Simulator:
    """Run a scenario, writing events to the text stream ``out``; returns the finished simulator."""
    rng = random.Random(seed + 1)
    network = (
        scenario.network(rng, scenario.topology) if scenario.network else Network(rng, scenario.topology)
    )
    sim = Simulator(
        scenario.topology,
        out,
        start=scenario.start,
        end=scenario.end,
        network=network,
        queue_expiry=scenario.queue_expiry,
        on_progress=_progress_bar() if progress else None,
    )
    scenario.script(sim)
    sim.run()
    return sim


def simulate_to_folder(
    name: str,
    out_dir: str | Path,
    *,
    seed: int = 1,
    options: dict[str, Any] | None = None,
    progress: bool = False,
) -> Stats:
    """Write ``topology.json`` and ``events.jsonl`` for a named scenario into ``out_dir``."""
    scenario = build(name, seed, options)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "topology.json").write_text(
        json.dumps(scenario.topology.to_json(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    tmp = out / "events.jsonl.partial"
    with open(tmp, "w", encoding="utf-8", buffering=1 << 20) as fh:
        sim = run_scenario(scenario, fh, seed, progress=progress and sys.stderr.isatty())
    tmp.replace(out / "events.jsonl")
    return sim.stats


def _progress_bar() -> Callable[[int, int], None]:
    def show(done: int, total: int) -> None:
        frac = done / total if total else 1.0
        bar = "#" * int(frac * 30)
        sys.stderr.write(f"\rsimulating [{bar:<30}] {frac:5.1%}")
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return show
