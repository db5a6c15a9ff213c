"""A plan's folders played on every core: worker processes forked for each pass of the plays.

Each folder's play is plain Python and shares nothing with another folder's, so ``play_plan``
hands the folders out in chunks (``planner.ChunkMap``). :func:`forked` forks the workers when a
pass starts: they inherit the run's organisation, the folders' states and the pass's work as they
are in this process (nothing is pickled on the way in; a state the parent has not read yet is
read by the worker that plays its folder, ``planning.StoredStarts``), play their chunks and send
their results back pickled. A fork of a server's worker costs milliseconds; a pass over fewer than
:data:`MIN_FOLDERS` folders stays in this process, as does everything where ``fork`` is not
available. The workers run only the model's plain Python: no Spark, no Arrow, no I/O.

The cyclic garbage collector is paused while a plan is made (``runtime.collector.cyclic_gc_paused``, as in
the job's tasks): the plays allocate millions of short-lived objects that reference counting
frees, and the workers inherit the pause.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from pfscope.spark_jobs.model.forecast.planner import ChunkMap, in_turn
from pfscope.spark_jobs.runtime.config import cores

#: below this many folders a pass is played in this process (a fork and its pickled results cost
#: more than they save)
MIN_FOLDERS = 200
#: chunks per worker: a folder's play costs from nothing to a second, so a worker that drew the
#: slow folders would keep the others waiting behind it
CHUNKS_PER_WORKER = 4

#: the pass's work, in a worker (set by the pool's initializer, inherited through the fork)
_work: Callable[[list[str]], Any] | None = None


def forked(workers: int | None = None) -> ChunkMap:
    """A ``ChunkMap`` over ``workers`` forked processes (default: one per core)."""
    n = workers or cores()
    if n < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return in_turn

    def run(work: Callable[[list[str]], Any], fids: list[str]) -> list[Any]:
        if len(fids) < MIN_FOLDERS:
            return [work(fids)]
        parts = min(len(fids), n * CHUNKS_PER_WORKER)
        chunks = [fids[i::parts] for i in range(parts)]
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(n, mp_context=context, initializer=_receive, initargs=(work,)) as pool:
            return list(pool.map(_play, chunks))

    return run


def _receive(work: Callable[[list[str]], Any]) -> None:
    global _work
    _work = work


def _play(chunk: list[str]) -> Any:
    assert _work is not None, "a worker's pass has no work"
    return _work(chunk)
