"""The digest of the code that wrote a stored state, so that other code never reads it as its own.

A state (a published run's ``_state``, ingest's stored rows) is only read by the code that wrote
it: a change to a rule must not fold on from rows the old rule made. The digest covers every
module of the packages named, found from the packages themselves (a renamed or new module is in
it without a list to keep up to date).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import ModuleType


def source_files(module: ModuleType) -> list[Path]:
    """A module's source file, or every ``.py`` file under a package's folder, in a stable order."""
    if hasattr(module, "__path__"):
        found = sorted(p for folder in module.__path__ for p in Path(folder).rglob("*.py"))
    else:
        found = [Path(module.__file__ or "")]
    if not found or not all(p.is_file() for p in found):
        raise FileNotFoundError(f"no source found for {module.__name__}")
    return found


def source_digest(*modules: ModuleType, salt: str = "") -> str:
    """A 16-hex digest of the sources of ``modules`` (each file's path within its package and bytes)."""
    h = hashlib.sha256(salt.encode())
    for module in modules:
        root = Path(module.__file__ or "").parent
        for f in source_files(module):
            h.update(f"{module.__name__}/{f.relative_to(root).as_posix()}".encode() + b"\0")
            h.update(f.read_bytes())
    return h.hexdigest()[:16]
