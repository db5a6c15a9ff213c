"""Ingest's event log again as files by folder (``DIR/events/``), beside ``DIR/events.jsonl``.

A refresh of ``compute`` reads only what is new in its input files. Ingest writes its whole log
again on every run, and a later export changes lines it wrote before (a send's recipients grow,
a receive's send is the sender's own after all, a change is seen earlier), so a refresh over
``events.jsonl`` found it rewritten and read everything again. Over these files a later export
rewrites only the files of the folders it reaches, and ``compute`` takes a rewritten file back
and folds only its folders again (``compute.retaken``).

Each folder's lines are in one file, in the log's order, a receive with its message's send (so
no message and no folder is in two files); the files are fixed in number and name, empty ones
included, so a folder never moves and no new file sorts before one read before. Both engines of
ingest write them from the ``events.jsonl`` they wrote: one rule.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import zlib
from pathlib import Path

#: the folder of the files, in ingest's output folder
EVENTS_FOLDER = "events"
#: how many files: a later export rewrites the files of the folders it reaches, and a refresh
#: folds every folder of a rewritten file again
EVENT_FILES = 64


def file_name(index: int) -> str:
    return f"folders-{index:02d}.jsonl"


def file_of(key: str) -> int:
    """The file of a folder (or of a message whose folder is unknown)."""
    return zlib.crc32(key.encode("utf-8", "surrogatepass")) % EVENT_FILES


def write_event_files(log: Path, folder: Path) -> None:
    """``log``'s lines (ingest's ``events.jsonl``) into ``folder``, a new folder, by folder."""
    folder.mkdir(parents=True)
    folder_of = _message_folders(log)
    handles = [open(folder / file_name(i), "w", encoding="utf-8") for i in range(EVENT_FILES)]  # noqa: SIM115
    try:
        with open(log, encoding="utf-8") as fh:
            for line in fh:
                rec = json.loads(line)
                fid = rec.get("fid")
                msg = rec.get("msg")
                key = fid if fid is not None else folder_of.get(msg, msg) if msg is not None else ""
                handles[file_of(str(key))].write(line)
    finally:
        for h in handles:
            h.close()


def _message_folders(log: Path) -> dict[str, str]:
    """Each sent message's folder (a receive goes into its send's file)."""
    out: dict[str, str] = {}
    with open(log, encoding="utf-8") as fh:
        for line in fh:
            if '"send"' in line:
                rec = json.loads(line)
                if rec.get("kind") == "send" and rec.get("msg") is not None:
                    out[str(rec["msg"])] = str(rec.get("fid"))
    return out


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
