"""What a command's flags say about its Spark session, read before the JVM starts (no Spark import):
the ``--conf KEY=VALUE`` settings and the size of the input that sizes the session."""

from __future__ import annotations

import os

from pfscope.spark_jobs.model.errors import OperatorError
from pfscope.spark_jobs.model.events import expand_paths


def cores() -> int:
    """The cores this process may run on (its affinity where the system says it)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def parse_conf(pairs: list[str]) -> dict[str, str]:
    """``--conf KEY=VALUE`` flags as Spark settings."""
    conf = {}
    for p in pairs:
        key, sep, value = p.partition("=")
        if not sep or not key:
            raise OperatorError(f"--conf {p!r}: expected KEY=VALUE")
        conf[key.strip()] = value.strip()
    return conf


def input_bytes(paths: list[str]) -> int | None:
    """The log's size in bytes, known before the JVM starts; None when some of it is remote."""
    if any("://" in p for p in paths):
        return None
    try:
        return sum(os.path.getsize(f) for f in expand_paths(paths))
    except OSError:
        return None
