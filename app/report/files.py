"""Writing a report: the whole file or nothing (a half-written report is never left behind)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_report(html: str, out: str | os.PathLike[str]) -> int:
    """Write ``html`` to ``out`` atomically (temporary file, then rename); the number of bytes."""
    target = Path(out)
    data = html.encode("utf-8")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return len(data)
