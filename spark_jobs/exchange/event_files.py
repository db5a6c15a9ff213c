"""Ingest's event log again as files by day and folder (``DIR/events/``), beside
``DIR/events.jsonl``.

A refresh of ``compute`` reads only what is new in its input files. Ingest writes its whole log
again on every run, and a later export changes lines it wrote before (a send's recipients grow,
a receive's send is the sender's own after all, a change is seen earlier) and adds lines among
the last hours' (a server's export that ends earlier than the others'), so a refresh over
``events.jsonl`` found it rewritten and read everything again. Over these files a later export
rewrites only the files of the days and folders it reaches (mostly the last day's), and
``compute`` takes a rewritten file back and folds its folders again (``compute.retaken``).

A line's file is its day's (UTC; a receive's is its send's, so that a message is in one file)
and its folder's among ``FOLDER_FILES`` (a folder's lines of one day are in one file, in the
log's order). Every day from the first to the last has all its files, empty ones included, and
the names sort by day: a folder never moves, and no new file sorts before one read before unless
a line comes before the log's first day. Both engines follow one rule (``placement``): the
reference over the ``events.jsonl`` it wrote, the Spark job where each line is made.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import shutil
import zlib
from pathlib import Path
from typing import Any, NamedTuple, TextIO

#: the folder of the files, in ingest's output folder
EVENTS_FOLDER = "events"
#: files per day: a later export rewrites the files of the folders it reaches
FOLDER_FILES = 16
#: the days between the first and the last get their files too, up to this many days (a clock
#: years off would make thousands of empty files)
FILLED_DAYS = 400
#: files open at once while writing (a receive may go into a file days back)
OPEN_FILES = 256


def file_name(day: str, index: int) -> str:
    return f"{day}-folders-{index:02d}.jsonl"


def file_of(key: str) -> int:
    """The file of a folder (or of a message whose folder is unknown) among a day's."""
    return zlib.crc32(key.encode("utf-8", "surrogatepass")) % FOLDER_FILES


def day_of(ts: object) -> str:
    """The UTC day of a line's time (``YYYY-MM-DD``; one that cannot be read: ``0000-00-00``)."""
    try:
        when = dt.datetime.fromisoformat(str(ts).replace("Z", "+00:00"))
    except ValueError:
        return "0000-00-00"
    if when.tzinfo is not None:
        when = when.astimezone(dt.UTC)
    return when.date().isoformat()


class Placement(NamedTuple):
    """Where one line goes, as far as the line itself says: a line with a folder (or with neither
    folder nor message) in its own file; one with a message only in its message's send's file
    (the last send of it in the log), else in the message's own file of its day. A send also
    says where its message's receives go."""

    name: str  # the line's file, unless it goes with its message's send
    msg: str | None  # the message whose send's file it goes in, when the log holds a send of it
    send: tuple[str, str] | None  # a send: its message, and the file its receives go in

    def resolve(self, sends: dict[str, str]) -> str:
        """The line's file, given each message's send's file (``sends``, the last in the log)."""
        return self.name if self.msg is None else sends.get(self.msg, self.name)


def placement(rec: dict[str, Any]) -> Placement:
    """Where the line ``rec`` (an event line's fields) goes: the one rule of the files, which both
    engines follow (the Spark one where each line is made, the reference over its log)."""
    msg, fid, day = rec.get("msg"), rec.get("fid"), day_of(rec.get("ts"))
    send = None
    if rec.get("kind") == "send" and msg is not None:
        send = (str(msg), file_name(day, file_of(str(fid))))
    if fid is None and msg is not None:
        return Placement(file_name(day, file_of(str(msg))), str(msg), send)
    return Placement(file_name(day, file_of(str(fid if fid is not None else ""))), None, send)


def day_of_file(name: str) -> str:
    """The day of a file's name (``file_name``)."""
    return name.rsplit("-folders-", 1)[0]


def write_event_files(log: Path, folder: Path) -> None:
    """``log``'s lines (ingest's ``events.jsonl``) into ``folder``, a new folder, by day and folder
    (the reference engine's; the Spark engine places its lines as it makes them)."""
    folder.mkdir(parents=True)
    sends = _sends(log)
    days: set[str] = set()
    with AppendFiles(folder) as files, open(log, encoding="utf-8") as fh:
        for line in fh:
            name = placement(json.loads(line)).resolve(sends)
            days.add(day_of_file(name))
            files.write(name, line)
    fill_days(folder, days)


def fill_days(folder: Path, days: set[str]) -> None:
    """Every day's files from the first day to the last, empty ones included."""
    for day in _every_day(days):
        for i in range(FOLDER_FILES):
            (folder / file_name(day, i)).touch()


class AppendFiles:
    """Files appended to, at most ``OPEN_FILES`` open at once (the least used closed first)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.open: dict[str, TextIO] = {}

    def write(self, name: str, line: str) -> None:
        out = self.open.pop(name, None)
        if out is None:
            if len(self.open) >= OPEN_FILES:
                self.open.pop(next(iter(self.open))).close()
            out = open(self.folder / name, "a", encoding="utf-8")  # noqa: SIM115
        self.open[name] = out  # the most recent last
        out.write(line)

    def __enter__(self) -> AppendFiles:
        return self

    def __exit__(self, *exc: object) -> None:
        for out in self.open.values():
            out.close()


def _sends(log: Path) -> dict[str, str]:
    """Each sent message's send's file (the last send of it in the log)."""
    out: dict[str, str] = {}
    with open(log, encoding="utf-8") as fh:
        for line in fh:
            if '"send"' in line:
                send = placement(json.loads(line)).send
                if send is not None:
                    out[send[0]] = send[1]
    return out


def _every_day(days: set[str]) -> list[str]:
    """Every day from the first to the last (those that cannot be read as they are)."""
    real = sorted(d for d in days if d != "0000-00-00")
    if not real:
        return sorted(days)
    first, last = dt.date.fromisoformat(real[0]), dt.date.fromisoformat(real[-1])
    if (last - first).days >= FILLED_DAYS:
        return sorted(days)
    span = [(first + dt.timedelta(days=n)).isoformat() for n in range((last - first).days + 1)]
    return sorted(set(span) | days)


def swap_in(partial: Path, folder: Path) -> None:
    """``partial`` (a complete folder of files) in place of ``folder``."""
    old = folder.with_name(folder.name + ".old")
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(old)
    with contextlib.suppress(FileNotFoundError):
        folder.rename(old)
    partial.rename(folder)
    shutil.rmtree(old, ignore_errors=True)


def discard(partial: Path) -> None:
    shutil.rmtree(partial, ignore_errors=True)
