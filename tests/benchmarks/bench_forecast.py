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
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from pfscope.spark_jobs.model.cnset import CNSet  # noqa: E402
from pfscope.spark_jobs.model.forecast.outcome import (  # noqa: E402
    CAUGHT_UP,
    LATE,
    NOT_YET,
    SLOWER,
    STILL_LACKING,
    WITHIN,
    actual_in_sync,
    back_at,
    came_true,
    cause_kind,
    due_by,
    first_change_after,
    miss_cause,
)
from pfscope.spark_jobs.model.forecast.record import Happened  # noqa: E402
from pfscope.spark_jobs.model.replay import replay  # noqa: E402
from pfscope.spark_jobs.model.timeutil import HOUR  # noqa: E402
from pfscope.spark_jobs.simulator import build, run_scenario  # noqa: E402
from tests.logbuilder import event_log_from_lines  # noqa: E402

SCENARIOS = {
    "demo": {},
    "scale": {"stores": 12, "sites": 3, "folders": 120, "replicas": 3, "days": 6, "changes_per_day": 6},
}
KINDS = (WITHIN, LATE, NOT_YET, STILL_LACKING, CAUGHT_UP)


@dataclass
class Backtest:
    tally: Counter[str] = field(default_factory=Counter)
    causes: Counter[str] = field(default_factory=Counter)  # the misses, by cause (its first words)
    unbounded: int = 0  # forecasts in sync by a time whose bound is beyond the horizon
    waited: int = 0  # forecasts that waited for a down store's return
    errors: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

    @property
    def judged(self) -> int:
        return sum(self.tally[k] for k in KINDS if k != NOT_YET)

    @property
    def within(self) -> int:
        return self.tally[WITHIN] + self.tally[STILL_LACKING]

    @property
    def unforeseeable(self) -> int:
        """Misses caused by what the forecast assumes away (a status change, new changes)."""
        return sum(
            n for cause, n in self.causes.items() if cause != SLOWER.split(":")[0] and "did not" not in cause
        )


def backtest(name: str, seed: int, cuts: int) -> Backtest:
    scenario = build(name, seed, dict(SCENARIOS[name]))
    buf = io.StringIO()
    run_scenario(scenario, buf, seed)
    log = event_log_from_lines(buf.getvalue().splitlines(), scenario.topology)
    full = replay(scenario.topology, log)
    happened = Happened.from_rows(
        (r for r in full.tables["state_history"] if r["observer"] == r["subject"]),
        full.tables["store_periods"],
        full.tables["folders"],
    )
    periods, members = happened.periods, happened.members
    first, last = log.events[0].ts, log.last_ts()
    out = Backtest()
    for i in range(cuts):
        as_of = first + (last - first) * (3 + 6 * i // max(cuts - 1, 1)) // 10
        started = time.process_time()
        result = replay(scenario.topology, log, as_of)
        out.cpu.append(time.process_time() - started)
        for row in result.tables["forecast"]:
            lacked = CNSet.parse(row["lacks_cnset"])
            mine = happened.owned.get(row["fid"], {})
            actual = actual_in_sync(lacked, mine.get(row["store"]), as_of)
            back = back_at(row["waits_for"], periods, as_of)
            due = due_by(row, as_of, back)
            kind = came_true(due, actual, last, as_of)
            out.tally[kind] += 1
            out.unbounded += row["in_sync_at"] is not None and row["latest_in_sync_at"] is None
            out.waited += back is not None and row["after_back_s"] is not None
            cause = miss_cause(
                kind,
                row,
                as_of,
                actual if actual is not None else last,
                members.get(row["fid"], []),
                periods,
                first_change_after(mine, as_of),
            )
            if cause is not None:
                out.causes[cause_kind(cause)] += 1
            if actual is not None and row["in_sync_at"] is not None:
                out.errors.append((actual - row["in_sync_at"]) / HOUR)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--cuts", type=int, default=6)
    args = parser.parse_args()
    print(f"{'scenario':<10} {'seed':>4} {'forecasts':>9} " + " ".join(f"{k[:14]:>14}" for k in KINDS))
    print(
        f"{'':<10} {'':>4} {'':>9} {'within/judged':>14} {'excl. unknown':>14} {'|err| med h':>12} {'p90 h':>8} "
        f"{'unbounded':>9} {'waited':>7} {'cpu s/cut':>9}"
    )
    for name in SCENARIOS:
        for seed in range(1, args.seeds + 1):
            b = backtest(name, seed, args.cuts)
            absolute = sorted(abs(e) for e in b.errors)
            p90 = absolute[int(0.9 * (len(absolute) - 1))] if absolute else float("nan")
            print(
                f"{name:<10} {seed:>4} {sum(b.tally.values()):>9} "
                + " ".join(f"{b.tally[k]:>14}" for k in KINDS)
            )
            print(
                f"{'':<10} {'':>4} {'':>9} {f'{b.within}/{b.judged}':>14} "
                f"{f'{b.within}/{b.judged - b.unforeseeable}':>14} "
                f"{statistics.median(absolute) if absolute else float('nan'):>12.2f} {p90:>8.2f} "
                f"{b.unbounded:>9} {b.waited:>7} {statistics.median(b.cpu):>9.2f}"
            )
            for cause, n in b.causes.most_common():
                print(f"{'':<16} miss: {n:>4} {cause}")


if __name__ == "__main__":
    main()
