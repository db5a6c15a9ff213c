"""CN-set speed on large sets. Prints figures; asserts nothing.

    python tests/benchmarks/cnset_speed.py
"""

from __future__ import annotations

import random
import time

from spark_jobs.model.cnset import EMPTY, CNSet


def fragmented(ranges: int, seed: int) -> CNSet:
    rng = random.Random(seed)
    out: dict[str, list[list[int]]] = {}
    for origin in ("PFS1", "PFS2", "PFS3"):
        n, cur = [], 1
        for _ in range(ranges):
            cur += rng.randint(2, 5)
            width = rng.randint(0, 3)
            n.append([cur, cur + width])
            cur += width
        out[origin] = n
    return CNSet.from_json(out)


def per_op(fn, *args, repeat: int) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    for _ in range(repeat):
        fn(*args)
    return (time.perf_counter() - start) / repeat * 1e6


def main() -> None:
    print(f"{'ranges/origin':>14} {'union':>10} {'difference':>11} {'intersect':>10} {'issubset':>9} "
          f"{'parse':>9} {'text':>9}   (µs per operation, 3 origins)")
    for ranges in (10, 1_000, 10_000):
        a, b = fragmented(ranges, 1), fragmented(ranges, 2)
        text = a.text()
        repeat = max(3, 20_000 // ranges)
        figures = [
            per_op(a.union, b, repeat=repeat),
            per_op(a.difference, b, repeat=repeat),
            per_op(a.intersection, b, repeat=repeat),
            per_op(a.issubset, b, repeat=repeat),
            per_op(CNSet.parse, text, repeat=repeat),
            per_op(lambda s: CNSet(dict(s.items())).text(), a, repeat=repeat),
        ]
        print(f"{ranges:>14,} " + " ".join(f"{f:>10,.1f}" for f in figures))
    start = time.perf_counter()
    s = EMPTY
    for cn in range(1, 100_001):
        s = s.add("PFS1", cn)
    took = time.perf_counter() - start
    print(f"add of 100,000 consecutive CNs: {took * 1e3:,.0f} ms ({took / 1e5 * 1e6:.2f} µs each) -> {s.text()}")


if __name__ == "__main__":
    main()
