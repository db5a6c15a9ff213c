"""The forecast against the future it could not see: simulated organisations whose whole log is
known, cut at several as-of times, forecast at each cut by the replay, and each forecast compared
with when the replica really held what it lacked (the full log's ``state_history``). Prints;
asserts nothing.

    python tests/benchmarks/bench_forecast.py [--seeds 3] [--cuts 6]

Per scenario and seed: the forecasts made (replicas lacking CNs at a cut), how they came true
(``model.forecast.outcome``: within their bounds, late, not yet due by the log's end, still
lacking as forecast, caught up though forecast not to), the share within bounds of those that
could be judged, the error of ``in_sync_at`` (actual minus forecast, hours: median and 90th
percentile of its absolute value), and the forecast's own CPU time per cut. The real future has
what the forecast assumes away (new changes, outages, lost mail): its misses measure that.
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from pfscope.spark_jobs.model.cnset import CNSet  # noqa: E402
from pfscope.spark_jobs.model.forecast.outcome import (  # noqa: E402
    CAUGHT_UP,
    LATE,
    NOT_YET,
    STILL_LACKING,
    WITHIN,
    actual_in_sync,
    came_true,
)
from pfscope.spark_jobs.model.replay import replay  # noqa: E402
from pfscope.spark_jobs.model.timeutil import HOUR  # noqa: E402
from pfscope.spark_jobs.simulator import build, run_scenario  # noqa: E402
from tests.logbuilder import event_log_from_lines  # noqa: E402

SCENARIOS = {
    "demo": {},
    "scale": {"stores": 12, "sites": 3, "folders": 120, "replicas": 3, "days": 6, "changes_per_day": 6},
}
KINDS = (WITHIN, LATE, NOT_YET, STILL_LACKING, CAUGHT_UP)


def backtest(name: str, seed: int, cuts: int) -> tuple[Counter[str], list[float], list[float]]:
    scenario = build(name, seed, dict(SCENARIOS[name]))
    buf = io.StringIO()
    run_scenario(scenario, buf, seed)
    log = event_log_from_lines(buf.getvalue().splitlines(), scenario.topology)
    full = replay(scenario.topology, log)
    owned: dict[tuple[str, str], list[tuple[int, CNSet]]] = {}
    for r in sorted(full.tables["state_history"], key=lambda r: r["at"]):
        if r["observer"] == r["subject"]:
            owned.setdefault((r["observer"], r["fid"]), []).append((r["at"], CNSet.parse(r["cnset"])))
    first, last = log.events[0].ts, log.last_ts()
    tally: Counter[str] = Counter()
    errors: list[float] = []
    cpu: list[float] = []
    for i in range(cuts):
        as_of = first + (last - first) * (3 + 6 * i // max(cuts - 1, 1)) // 10
        started = time.process_time()
        result = replay(scenario.topology, log, as_of)
        cpu.append(time.process_time() - started)
        for row in result.tables["forecast"]:
            lacked = CNSet.parse(row["lacks_cnset"])
            actual = actual_in_sync(lacked, owned.get((row["store"], row["fid"]), []), as_of)
            tally[came_true(row["in_sync_at"], row["latest_in_sync_at"], actual, last)] += 1
            if actual is not None and row["in_sync_at"] is not None:
                errors.append((actual - row["in_sync_at"]) / HOUR)
    return tally, errors, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--cuts", type=int, default=6)
    args = parser.parse_args()
    print(f"{'scenario':<10} {'seed':>4} {'forecasts':>9} " + " ".join(f"{k[:14]:>14}" for k in KINDS))
    print(
        f"{'':<10} {'':>4} {'':>9} {'within/judged':>14} {'|err| med h':>12} {'p90 h':>8} {'replay+forecast cpu s/cut':>26}"
    )
    for name in SCENARIOS:
        for seed in range(1, args.seeds + 1):
            tally, errors, cpu = backtest(name, seed, args.cuts)
            judged = tally[WITHIN] + tally[LATE] + tally[STILL_LACKING] + tally[CAUGHT_UP]
            within = tally[WITHIN] + tally[STILL_LACKING]
            absolute = sorted(abs(e) for e in errors)
            p90 = absolute[int(0.9 * (len(absolute) - 1))] if absolute else float("nan")
            print(
                f"{name:<10} {seed:>4} {sum(tally.values()):>9} " + " ".join(f"{tally[k]:>14}" for k in KINDS)
            )
            print(
                f"{'':<10} {'':>4} {'':>9} {f'{within}/{judged}':>14} "
                f"{statistics.median(absolute) if absolute else float('nan'):>12.2f} {p90:>8.2f} "
                f"{statistics.median(cpu):>26.2f}"
            )


if __name__ == "__main__":
    main()
