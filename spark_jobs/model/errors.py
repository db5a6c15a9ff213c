"""The one base class for the errors an operator can fix: a broken topology, a missing file, a
bad flag or setting, another run holding the output folder. The command line catches it once and
prints it as one line, exiting with its ``exit_status`` (2 unless the error says otherwise); every
other exception is a crash. It lives at the bottom of the layers so every layer can raise it."""

from __future__ import annotations


class OperatorError(Exception):
    """A problem the operator can fix; its message is the whole line the operator reads."""

    #: the command's exit status: 2 (usage) unless a kind of error has its own (a held lock: 75)
    exit_status: int = 2
