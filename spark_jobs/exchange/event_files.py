"""Ingest's event log again as files by time block and folder (``DIR/events/``), beside
``DIR/events.jsonl``.

A refresh of ``compute`` reads only what is new in its input files. Ingest writes its whole log
again on every run, and a later export changes lines it wrote before (a send's recipients grow,
a receive's send is the sender's own after all, a change is seen earlier) and adds lines among
the last hours' (a server's export that ends earlier than the others'), so a refresh over
``events.jsonl`` found it rewritten and read everything again. Over these files a later export
rewrites only the files of the blocks and folders it reaches (the last hours'), and ``compute``
takes a rewritten file back and folds its folders again (``compute.retaken``).

A line's file is its block's (``BLOCK_HOURS`` of a UTC day; a receive's is its send's, so that a
message is in one file) and its folder's among ``FOLDER_FILES`` (a folder's lines of one block are
in one file, in the log's order). Every block from the first to the last has all its files, empty
ones included, and the names sort by time: a folder never moves, and no new file sorts before one
read before unless a line comes before the log's first block. Both engines follow one rule
(``placement``): the reference over the ``events.jsonl`` it wrote, the Spark job where each line
is made.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import re
import shutil
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple, TextIO

#: the folder of the files, in ingest's output folder
EVENTS_FOLDER = "events"
#: hours of a block (a divisor of 24): a later export rewrites the files of the blocks it reaches,
#: so an hour's exports, which reach a few hours back, make a refresh read the last blocks again
#: (the 1M chain's hour read 144,888 lines again for 7,671 new records with files by day, 33,961
#: by 6 hours, 22,362 by 4 hours: 6 took as long as 4 with a third fewer files)
BLOCK_HOURS = 6
#: files per block: a later export rewrites the files of the folders it reaches
FOLDER_FILES = 16
#: the days between the first and the last get their blocks' files too, up to this many days (a
#: clock years off would make thousands of empty files)
FILLED_DAYS = 400
#: the block of a line whose time cannot be read
NO_BLOCK = "0000-00-00T00"
#: files open at once while writing (a receive may go into a file days back)
OPEN_FILES = 256


#: an event line's text, as both engines write it (``json.dumps(line, ensure_ascii=False,
#: separators=(",", ":"))``), by one encoder for every line: a line holds plain values and lists of
#: them, so there is no cycle to look for (172,238 lines: 0.55 -> 0.35 CPU s)
LINE_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False)


def line_text(row: dict[str, Any]) -> str:
    """A line of ``events.jsonl`` (and of ingest's rejects and errors): ``row`` as JSON, then a
    newline."""
    return LINE_JSON.encode(row) + "\n"


def file_name(block: str, index: int) -> str:
    return f"{block}-folders-{index:02d}.jsonl"


def file_of(key: str) -> int:
    """The file of a folder (or of a message whose folder is unknown) among a block's."""
    return zlib.crc32(key.encode("utf-8", "surrogatepass")) % FOLDER_FILES


def block_of(ts: object) -> str:
    """The UTC block of a line's time (``YYYY-MM-DDTHH``, the block's first hour; one that cannot
    be read: ``NO_BLOCK``). A time as ingest writes it (``...THH:MM:SSZ``) has its date and hour's
    block, read once per hour (each line's own reading was a third of placing the log)."""
    if type(ts) is str and len(ts) == 20 and _WRITTEN.fullmatch(ts):
        hour = ts[:13]
        block = _BLOCKS.get(hour)
        if block is None:
            block = _BLOCKS[hour] = _read_block(hour + ":00:00Z")
        return block
    return _read_block(ts)


#: a time as ingest writes it, minutes and seconds in range (its date and hour may still not be)
_WRITTEN = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:[0-5]\d:[0-5]\dZ")
_BLOCKS: dict[str, str] = {}


def _read_block(ts: object) -> str:
    try:
        when = dt.datetime.fromisoformat(str(ts).replace("Z", "+00:00"))
    except ValueError:
        return NO_BLOCK
    if when.tzinfo is not None:
        when = when.astimezone(dt.UTC)
    return f"{when.date().isoformat()}T{when.hour - when.hour % BLOCK_HOURS:02d}"


class Placement(NamedTuple):
    """Where one line goes, as far as the line itself says: a line with a folder (or with neither
    folder nor message) in its own file; one with a message only in its message's send's file
    (the last send of it in the log), else in the message's own file of its block. A send also
    says where its message's receives go."""

    name: str  # the line's file, unless it goes with its message's send
    msg: str | None  # the message whose send's file it goes in, when the log holds a send of it
    send: tuple[str, str] | None  # a send: its message, and the file its receives go in


#: a ``Placement`` as a plain tuple (name, msg, send), as it travels between processes
Place = tuple[str, str | None, tuple[str, str] | None]


def resolve(place: Place, sends: dict[str, str]) -> str:
    """The line's file, given each message's send's file (``sends``, the last in the log)."""
    name, msg, _ = place
    return name if msg is None else sends.get(msg, name)


def placement(rec: dict[str, Any]) -> Placement:
    """Where the line ``rec`` (an event line's fields) goes: the one rule of the files, which both
    engines follow (the Spark one where each line is made, the reference over its log)."""
    msg, fid, block = rec.get("msg"), rec.get("fid"), block_of(rec.get("ts"))
    send = None
    if rec.get("kind") == "send" and msg is not None:
        send = (str(msg), file_name(block, file_of(str(fid))))
    if fid is None and msg is not None:
        return Placement(file_name(block, file_of(str(msg))), str(msg), send)
    return Placement(file_name(block, file_of(str(fid if fid is not None else ""))), None, send)


def block_of_file(name: str) -> str:
    """The block of a file's name (``file_name``)."""
    return name.rsplit("-folders-", 1)[0]


def write_event_files(log: Path, folder: Path) -> None:
    """``log``'s lines (ingest's ``events.jsonl``) into ``folder``, a new folder, by block and
    folder (the reference engine's; the Spark engine places its lines as it makes them)."""
    with open(log, encoding="utf-8") as fh:
        lines = fh.readlines()
    write_event_lines([json.loads(line) for line in lines], lines, folder)


def write_event_lines(recs: Sequence[dict[str, Any]], lines: Sequence[str], folder: Path) -> None:
    """``lines`` (each the text of the event line ``recs`` holds at its place, in log order) into
    ``folder``, a new folder, by block and folder: a line goes with its message's last send."""
    write_placed([placement(rec) for rec in recs], lines, folder)


def write_placed(placed: Sequence[Place], lines: Sequence[str], folder: Path) -> None:
    """``write_event_lines`` with each line's placement given."""
    folder.mkdir(parents=True)
    sends = {p[2][0]: p[2][1] for p in placed if p[2] is not None}  # the last send of each
    by_file: dict[str, list[str]] = {}  # each file's lines in the log's order, written at once
    for where, line in zip(placed, lines, strict=True):
        name = resolve(where, sends)
        got = by_file.get(name)
        if got is None:
            by_file[name] = [line]
        else:
            got.append(line)
    for name, group in by_file.items():
        with open(folder / name, "w", encoding="utf-8") as out:
            out.writelines(group)
    fill_blocks(folder, {block_of_file(name) for name in by_file})


def fill_blocks(folder: Path, blocks: set[str]) -> None:
    """Every block's files from the first block to the last, empty ones included."""
    for block in _every_block(blocks):
        for i in range(FOLDER_FILES):
            (folder / file_name(block, i)).touch()


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


def _every_block(blocks: set[str]) -> list[str]:
    """Every block from the first to the last (those that cannot be read as they are)."""
    real = sorted(b for b in blocks if b != NO_BLOCK)
    if not real:
        return sorted(blocks)
    first, last = (dt.datetime.fromisoformat(b) for b in (real[0], real[-1]))
    if (last - first).days >= FILLED_DAYS:
        return sorted(blocks)
    step = dt.timedelta(hours=BLOCK_HOURS)
    span = [(first + n * step).strftime("%Y-%m-%dT%H") for n in range((last - first) // step + 1)]
    return sorted(set(span) | blocks)


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
