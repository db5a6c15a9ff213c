"""Running one command: the one place where errors become exit statuses.

An :class:`OperatorError` is one line on stderr and its own status. Anything else is a crash:
one line that names the exception and where its whole text went (the Python traceback and, for a
failed Spark job, the JVM's own stack trace, which Py4J carries in the exception's text), and
status 1. With ``debug`` the whole text goes to stderr instead of a file. No Spark import.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from pfscope.spark_jobs.model.errors import ExitStatus, OperatorError

#: the first line of a crash's message is cut here: a Java exception's message can be pages long
FIRST_LINE_CHARS = 400


def add_debug_argument(p: argparse.ArgumentParser) -> None:
    """``--debug``: every command has it. Unset is None, so ``PFSCOPE_DEBUG`` can fill it."""
    p.add_argument(
        "--debug",
        action="store_true",
        default=None,
        help="on a crash, print the whole traceback (Python's, and Spark's for a failed Spark "
        "job) on stderr instead of writing it to a file (default: $PFSCOPE_DEBUG, else no)",
    )


def run_command(command: str, work: Callable[[], int], *, debug: bool = False, after_crash: str = "") -> int:
    """``work()``'s exit status; an operator error or a crash said on stderr and turned into its status.
    ``after_crash`` tells the operator what a crash left (``"the previous run is still published"``)."""
    try:
        return work()
    except OperatorError as e:
        print(f"pfscope {command}: {e}", file=sys.stderr)
        return e.exit_status
    except Exception as e:
        text = whole_text(e)
        if debug:
            print(text, end="", file=sys.stderr)
        where = "the traceback is above" if debug else _written(command, text)
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:FIRST_LINE_CHARS]
        said = "; ".join(p for p in (first, after_crash, where) if p)
        print(f"pfscope {command}: failed ({type(e).__name__}): {said}", file=sys.stderr)
        return ExitStatus.CRASH


def whole_text(e: BaseException) -> str:
    """The traceback of ``e`` and of what caused it, then the JVM's stack trace of each Spark error
    among them that does not print its own (PySpark keeps it apart unless asked to show it)."""
    text = "".join(traceback.format_exception(e))
    seen: set[int] = set()
    cause: BaseException | None = e
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        jvm = getattr(cause, "_stackTrace", None)
        if isinstance(jvm, str) and jvm.strip() and jvm not in text:
            text += f"\nThe JVM's stack trace of {type(cause).__name__}:\n{jvm.rstrip()}\n"
        cause = cause.__cause__ or cause.__context__
    return text


def crash_folder() -> Path:
    """Where crash reports are written: the temporary folder's ``pfscope-crashes``."""
    return Path(tempfile.gettempdir()) / "pfscope-crashes"


def _written(command: str, text: str) -> str:
    """Write a crash's whole text to a file of its own (readable by this user only); say where."""
    folder = crash_folder()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    path = folder / f"{command}-{stamp}-{os.getpid()}.txt"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as e:
        return f"its traceback could not be written ({e.strerror or e}): run again with --debug"
    return f"the whole text: {path} (or run again with --debug)"
