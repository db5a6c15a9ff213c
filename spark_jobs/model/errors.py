"""The one base class for the errors an operator can fix, and every command's exit statuses.

A broken topology, a missing file, a bad flag or setting, another run holding the output folder:
each is an :class:`OperatorError`, printed once as one line, the command exiting with its
``exit_status``. Every other exception is a crash (``runtime/command.py`` turns both into exit
statuses). It lives at the bottom of the layers so every layer can raise it."""

from __future__ import annotations

from enum import IntEnum


class ExitStatus(IntEnum):
    """What a ``pfscope`` command's exit status means; defined here and nowhere else."""

    #: done
    OK = 0
    #: failed unexpectedly (a crash): one line, and the whole text written to a file (or, with
    #: ``--debug``, to stderr); nothing published or written, the last good run still served
    CRASH = 1
    #: an operator error: one line says what to fix; nothing written
    USAGE = 2
    #: ``ingest``: some files could not be read whole; everything else was written, each such file
    #: a reject
    PARTIAL = 3
    #: ``plan``: the plan is not safe (its verdict, first line, says why); 0 when it is safe
    NOT_SAFE = 4
    #: another run holds the output folder's lock: try again later (``EX_TEMPFAIL``)
    LOCKED = 75


class OperatorError(Exception):
    """A problem the operator can fix; its message is the whole line the operator reads."""

    #: the command's exit status: usage (2) unless a kind of error has its own (a held lock: 75)
    exit_status: int = ExitStatus.USAGE
