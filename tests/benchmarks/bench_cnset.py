"""CN-set speed: the set algebra, parse and text on fragmented sets, and CN-by-CN adds.

    python tests/benchmarks/bench_cnset.py

Prints µs per operation; asserts nothing. Sets have 3 origins and 10, 1,000 or 10,000 ranges per
origin (gaps and widths of a few CNs, so the two operands of a binary operation interleave). Each
figure is the best of 5 timed batches, a batch lasting about 0.1 s.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from pfscope.spark_jobs.model.cnset import EMPTY, CNSet

ORIGINS = ("PFS1", "PFS2", "PFS3")
SIZES = (10, 1_000, 10_000)
BATCH_SECONDS = 0.1
BATCHES = 5


def fragmented(ranges: int, seed: int) -> CNSet:
    """`ranges` ranges per origin: gaps of 1..4 CNs, widths of 1..4 CNs."""
    rng = random.Random(seed)
    value: dict[str, list[list[int]]] = {}
    for origin in ORIGINS:
        out, cur = [], 1
        for _ in range(ranges):
            cur += rng.randint(2, 5)
            width = rng.randint(0, 3)
            out.append([cur, cur + width])
            cur += width
        value[origin] = out
    s = CNSet.from_json(value)
    assert all(len(s.ranges(o)) == ranges for o in ORIGINS)
    return s


def per_op(fn: Callable[[], object]) -> float:
    """µs per call of `fn`: the best of BATCHES batches of about BATCH_SECONDS each."""
    start = time.perf_counter()
    fn()
    once = max(time.perf_counter() - start, 1e-7)
    repeat = max(1, int(BATCH_SECONDS / once))
    best = float("inf")
    for _ in range(BATCHES):
        start = time.perf_counter()
        for _ in range(repeat):
            fn()
        best = min(best, (time.perf_counter() - start) / repeat)
    return best * 1e6


def text_uncached(s: CNSet) -> float:
    """text() caches its result, so each call is timed on a fresh, equal set."""
    value = s.to_json()
    once = time.perf_counter()
    CNSet.from_json(value).text()
    once = time.perf_counter() - once
    count = max(3, min(200, int(BATCH_SECONDS / max(once, 1e-7))))
    best = float("inf")
    for _ in range(BATCHES):
        fresh = [CNSet.from_json(value) for _ in range(count)]
        start = time.perf_counter()
        for f in fresh:
            f.text()
        best = min(best, (time.perf_counter() - start) / count)
    return best * 1e6


def main() -> None:
    ops = ("union", "difference", "intersection", "issubset", "parse", "text")
    print("CN sets, 3 origins: µs per operation")
    print(f"{'ranges/origin':>14}" + "".join(f"{op:>14}" for op in ops))
    for n in SIZES:
        a, b = fragmented(n, 1), fragmented(n, 2)
        superset = a | b  # a.issubset(superset) is True, so it walks every range
        text = a.text()
        figures = [
            per_op(lambda a=a, b=b: a.union(b)),
            per_op(lambda a=a, b=b: a.difference(b)),
            per_op(lambda a=a, b=b: a.intersection(b)),
            per_op(lambda a=a, s=superset: a.issubset(s)),
            per_op(lambda t=text: CNSet.parse(t)),
            text_uncached(a),
        ]
        print(f"{n:>14,}" + "".join(f"{f:>14,.1f}" for f in figures))

    print()
    count = 100_000
    start = time.perf_counter()
    s = EMPTY
    for cn in range(1, count + 1):
        s = s.add("PFS1", cn)
    took = time.perf_counter() - start
    print(
        f"add of {count:,} consecutive CNs to an empty set: {took * 1e3:,.0f} ms, "
        f"{took / count * 1e6:.2f} µs per add -> {s.text()}"
    )

    # the same fast path when the origin already has many ranges: each add copies the range tuple
    base = fragmented(10_000, 3)
    top = base.max_cn("PFS1")
    assert top is not None
    count = 10_000
    start = time.perf_counter()
    s = base
    for cn in range(top + 1, top + 1 + count):
        s = s.add("PFS1", cn)
    took = time.perf_counter() - start
    assert s.count() == base.count() + count
    print(
        f"add of {count:,} consecutive CNs after 10,000 ranges per origin: {took * 1e3:,.0f} ms, "
        f"{took / count * 1e6:.2f} µs per add"
    )


if __name__ == "__main__":
    main()
