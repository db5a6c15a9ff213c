"""The one base class for the errors an operator can fix: a broken topology, a missing file, a
bad flag or setting. The command line catches it once and prints it as one line (exit 2); every
other exception is a crash. It lives at the bottom of the layers so every layer can raise it."""

from __future__ import annotations


class OperatorError(Exception):
    """A problem the operator can fix; its message is the whole line the operator reads."""
