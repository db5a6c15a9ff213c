"""What a run in one process keeps of each input file for the next: the file's key, and its objects
pickled with whose they are.

Both engines that run in one process read a share where an hour adds a few files or rewrites a few:
ingest keeps each export's records (``ingest.python_engine``), compute each event file's parsed
lines (``compute.kept_lines``). A file is known again by its key (path, size, times and inode); a
pickle is used only when it says it holds that file's objects as read with the same options, and
each of its items passes the reader's check: anything else (torn, stale, another shape) is read
again from the file.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import pickle
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any


def file_key(path: str) -> str:
    """A file as this run sees it: another size, modification or change time, or inode is another
    file (a rewrite that puts its size and time back still changes its change time); one that
    cannot be looked at is read (and rejected) again on every run."""
    try:
        st = os.stat(path)
        text = f"{os.path.abspath(path)}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}\0{st.st_ctime_ns}"
    except OSError:
        text = f"{os.path.abspath(path)}\0unreadable\0{uuid.uuid4()}"
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def pickle_name(*about: str) -> str:
    """A pickle's file name, from what its objects are (the file as given, its key, the options)."""
    text = "\0".join(about)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32] + ".pickle"


def load_kept(path: Path, about: dict[str, str], check: Callable[[Any], bool]) -> list[Any] | None:
    """The items pickled at ``path``, or None: not there, unreadable, not ``about`` the same file and
    options, or an item ``check`` refuses (the file is then read again, and the pickle replaced)."""
    try:
        with path.open("rb") as fh:
            got = pickle.load(fh)
    except FileNotFoundError:
        return None
    except Exception:  # a torn or stale pickle
        return None
    if not isinstance(got, dict) or got.get("about") != about:
        return None
    items = got.get("items")
    if not isinstance(items, list) or not all(check(x) for x in items):
        return None
    return items


def dump_kept(path: Path, about: dict[str, str], items: list[Any]) -> None:
    """``items`` pickled at ``path`` with whose they are (``about``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        ByFields(fh, protocol=pickle.HIGHEST_PROTOCOL).dump({"about": about, "items": items})


def link_or_copy(there: Path, here: Path) -> None:
    """An earlier run's kept file in this run's folder too: linked (runs share it), or copied where
    links cannot be made."""
    here.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(there, here)
    except OSError:
        shutil.copyfile(there, here)


class ByFields(pickle.Pickler):
    """Pickles a dataclass with slots as a call of its class on its fields: unpickled, it is built
    by its ``__init__`` at once, where the default pickling sets each slot through ``fields()``
    (126,452 records: 5.5 CPU s to load against 6.9, with the collector running)."""

    def reducer_override(self, obj: Any) -> Any:
        names = _init_fields(type(obj))
        if names is None:
            return NotImplemented
        return type(obj), tuple(getattr(obj, n) for n in names)


_FIELDS: dict[type, tuple[str, ...] | None] = {}


def _init_fields(cls: type) -> tuple[str, ...] | None:
    """A slotted dataclass's fields, when ``__init__`` takes them all; else None."""
    if cls not in _FIELDS:
        names = None
        if dataclasses.is_dataclass(cls) and "__slots__" in cls.__dict__:
            fields = dataclasses.fields(cls)
            names = tuple(f.name for f in fields) if all(f.init for f in fields) else None
        _FIELDS[cls] = names
    return _FIELDS[cls]
