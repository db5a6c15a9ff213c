"""/metrics and the backfill trend: how long one run's figures take. Prints; asserts nothing.

    python tests/benchmarks/bench_metrics.py --data DIR [--entries 1000000] [--stores 30]

On ``DIR`` (a ``compute --out`` folder): the cold exposition (snapshot read from Parquet), a warm
one (snapshot from the cache, only the run's age computed), and the trend frame and figure. Then
the pure trend function on ``--entries`` synthetic entries over ``--stores`` stores. Each line
gives wall and CPU seconds and the load average.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pfscope.app import figures as f
from pfscope.app.data import RunData, require_run
from pfscope.app.metrics import exposition
from tests.unit.app.test_metrics import DictCache


def measure(label: str, fn: Callable[[], Any]) -> Any:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    print(
        f"{label:<44} {time.perf_counter() - wall:7.3f} s wall {time.process_time() - cpu:7.3f} s CPU "
        f"load {os.getloadavg()[0]:.1f}"
    )
    return out


def synthetic(n: int, stores: int, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    start = pd.Timestamp("2026-11-01T00:00:00Z")
    opened = start + pd.to_timedelta(rng.uniform(0, 7 * 86400, n), unit="s")
    life = pd.to_timedelta(rng.exponential(12 * 3600, n), unit="s")
    closed = pd.Series(opened + life).where(rng.uniform(size=n) < 0.9)
    overdue = pd.Series(opened + life * 0.6).where(life > pd.Timedelta(hours=18))
    return pd.DataFrame(
        {
            "observer": [f"PFS{i:02d}" for i in rng.integers(0, stores, n)],
            "opened_at": opened,
            "closed_at": closed,
            "overdue_at": overdue,
        }
    )


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--entries", type=int, default=1_000_000)
    p.add_argument("--stores", type=int, default=30)
    args = p.parse_args()
    data = RunData(require_run(args.data), DictCache())
    body = measure("/metrics cold (snapshot from Parquet)", lambda: exposition(data))
    measure("/metrics warm (snapshot cached)", lambda: exposition(data))
    samples = [line for line in body.decode().splitlines() if line and not line.startswith("#")]
    print(f"  {len(body):,} bytes, {len(samples):,} samples")
    trend = measure("backfill trend frame (Parquet + pure)", data.backfill_trend)
    print(f"  {len(trend):,} rows")
    entries = measure(
        f"synthetic entries ({args.entries:,}, {args.stores} stores)",
        lambda: synthetic(args.entries, args.stores),
    )
    out = measure("backfill_trend on them", lambda: f.backfill_trend(entries, end=entries["opened_at"].max()))
    print(f"  {len(out):,} rows ({out['at'].nunique()} times per store)")


if __name__ == "__main__":
    main()
