"""Step 4 in parts, one process each: the event lines of a large share derived, written as text and
placed in their files on every core the process may use.

A folder's lines depend only on its own messages (``derive_keyed``), and each line carries its
place in the whole log; so each part derives the lines of its folders, writes each line's text
(``line_text``) and file (``placement``) and sends them back, and the parts merge by place into
the log's order, as ingest on Spark merges its partitions'. The result equals ``derive_events``
followed by each line's text and placement, line by line (tests/unit/exchange/test_derive_apart.py).

The parts beyond the first run in processes forked from this one: they read the messages where
they lie (no copy is sent) and send back only text. A part holds nothing of its parent's but its
pipe, and dies with it; a part that fails fails the run, which then writes nothing
(``run_ingest``). It trades CPU for time: the pages both processes touch are copied, and the
lines are sent back. The 1M-event share's hour (252,571 messages) took 4.7-5.0 s less (40.6 ->
35.9 s, 45.0 -> 40.0 in pairs), for 3.7-4.1 CPU s more; the 12-export share's (43,320) took as
long either way, for 1.1 CPU s more. Below ``PARTS_FROM`` messages the share is derived in this
process alone, and so it is in a process limited to one core (``taskset``, systemd's
``CPUAffinity=``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import pickle
import signal
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pfscope.spark_jobs.exchange.derive import Derived, Key, derive_keyed
from pfscope.spark_jobs.exchange.event_files import Place, file_of, line_text, placement
from pfscope.spark_jobs.exchange.messages import Msg
from pfscope.spark_jobs.exchange.translate import FolderKey
from pfscope.spark_jobs.model.topology import HIERARCHY_FID

#: messages from which the derivation runs in parts (the 12-export share has 43,320, the 1M-event
#: share 252,571)
PARTS_FROM = 100_000
#: parts at most: each is a process holding its folders' lines until they are sent back
MAX_PARTS = 4


@dataclass
class WrittenLines:
    """The event lines as ingest writes them, in the log's order: each one's text (a line of
    ``events.jsonl``) and where it goes among the files by block and folder."""

    texts: list[str]
    places: list[Place]


#: one part's lines (their places in the log, texts and files), its rejects (message index, reason)
#: and its statistics (name, count, where first counted): columns of plain values, which pickle
#: fast (at 12 exports 0.26 CPU s where rows of (place, text, ``Placement``) took 0.55)
_Part = tuple[list[Key], list[str], list[Place], list[tuple[int, str]], list[tuple[str, int, Key]]]


def parts_for(messages: int) -> int:
    """How many parts to derive ``messages`` in: one per core this process may use, up to
    ``MAX_PARTS``; one below ``PARTS_FROM``, and where this process cannot fork."""
    if messages < PARTS_FROM or not hasattr(os, "fork") or not hasattr(os, "sched_getaffinity"):
        return 1  # where processes cannot be forked or cores counted (Windows, macOS): one part
    return max(1, min(MAX_PARTS, len(os.sched_getaffinity(0))))


def derive_written(
    msgs: list[Msg],
    fids: dict[FolderKey, str],
    replicas: dict[str, list[str]],
    all_stores: list[str],
    parts: int,
) -> tuple[WrittenLines, list[tuple[Msg, str]], Counter[str]]:
    """``derive_events`` in ``parts`` parts by folder: the lines written and placed, the messages
    rejected (in their time order) and the statistics (in the order each was first counted)."""
    for n, m in enumerate(msgs):
        m.order = (n,)
    groups: list[list[Msg]] = [[] for _ in range(parts)]
    for m in msgs:
        fid = fids[m.folder] if m.folder is not None else HIERARCHY_FID
        groups[file_of(fid) % parts].append(m)
    children: list[tuple[int, int]] = []
    try:
        for group in groups[1:]:
            children.append(_fork(lambda g=group: _part(g, fids, replicas, all_stores)))
        got = [_part(groups[0], fids, replicas, all_stores)]
        while children:
            got.append(_collect(*children[0]))
            children.pop(0)
    finally:
        for pid, fd in children:  # this process failed first: the other parts are not waited for
            _stop(pid, fd)
    return _merged(got, msgs)


def _part(
    msgs: list[Msg], fids: dict[FolderKey, str], replicas: dict[str, list[str]], stores: list[str]
) -> _Part:
    d: Derived = derive_keyed(msgs, fids, replicas, stores)
    keys: list[Key] = []
    texts: list[str] = []
    places: list[Place] = []
    names: dict[str, str] = {}  # each file's name one object, so a pickle holds it once
    alone: dict[str, Place] = {}  # a line placed by its own folder: one tuple a file
    for key, line in d.lines:
        keys.append(key)
        texts.append(line_text(line))
        name, msg, send = placement(line)
        name = names.setdefault(name, name)
        if msg is None and send is None:
            places.append(alone.setdefault(name, (name, None, None)))
        else:
            places.append((name, msg, send))
    bad = [(m.order[0], reason) for m, reason in d.bad]
    return keys, texts, places, bad, [(name, n, d.firsts[name]) for name, n in d.stats.items()]


def _merged(got: list[_Part], msgs: list[Msg]) -> tuple[WrittenLines, list[tuple[Msg, str]], Counter[str]]:
    """The parts' lines merged by place, their rejects by their messages' time, their statistics
    summed in the order of where each was first counted (a folder's own order kept)."""
    keys = [k for p in got for k in p[0]]
    order = sorted(range(len(keys)), key=keys.__getitem__)  # a merge of the parts' sorted runs
    texts = [t for p in got for t in p[1]]
    places = [x for p in got for x in p[2]]
    written = WrittenLines([texts[i] for i in order], [places[i] for i in order])
    bad = sorted((b for p in got for b in p[3]), key=lambda b: (msgs[b[0]].sent_at, b[0]))
    counts: Counter[str] = Counter()
    firsts: dict[str, Key] = {}
    for p in got:
        for name, n, first in p[4]:
            counts[name] += n
            firsts[name] = min(first, firsts.get(name, first))
    stats: Counter[str] = Counter({name: counts[name] for name in sorted(counts, key=firsts.__getitem__)})
    return written, [(msgs[i], reason) for i, reason in bad], stats


def _fork(work: Any) -> tuple[int, int]:
    """``work()`` in a child process, its result pickled back through a pipe: (pid, read end)."""
    parent, die = os.getpid(), _death_signal()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns to the caller's stack
        code = 1
        try:
            _detach(write, parent, die)
            try:
                data = pickle.dumps(("ok", work()), protocol=pickle.HIGHEST_PROTOCOL)
            except BaseException as e:  # the parent raises it
                data = pickle.dumps(("error", f"{type(e).__name__}: {e}"))
            with os.fdopen(write, "wb") as out:
                out.write(data)
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    return pid, read


def _detach(keep: int, parent: int, die: Callable[[], object] | None) -> None:
    """The child holds only its pipe: not the run's lock, nor the pipes of whoever waits for the
    run's output (``pfscope refresh`` reads them to their end); and it dies with its parent."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, keep)
    os.closerange(keep + 1, os.sysconf("SC_OPEN_MAX"))
    if die is not None:
        die()
    if os.getppid() != parent:  # the parent died before the signal was asked for
        os._exit(1)


@functools.cache
def _death_signal() -> Callable[[], object] | None:
    """Linux's ``prctl(PR_SET_PDEATHSIG, SIGKILL)``, found before any fork (a child imports
    nothing), or None where there is none."""
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return functools.partial(prctl, 1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG


def _collect(pid: int, fd: int) -> _Part:
    """A child's result, once it has sent it all and ended."""
    with os.fdopen(fd, "rb") as fh:
        data = fh.read()
    _, status = os.waitpid(pid, 0)
    if not data:
        raise RuntimeError(
            f"a part of the derivation (process {pid}) ended without its lines (status {status})"
        )
    kind, got = pickle.loads(data)
    if kind != "ok":
        raise RuntimeError(f"a part of the derivation (process {pid}) failed: {got}")
    return got  # type: ignore[no-any-return]


def _stop(pid: int, fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        os.waitpid(pid, 0)
