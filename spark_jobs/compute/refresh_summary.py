"""How a run went about it, whichever engine ran it: for its summary row, ``/metrics`` and its one
line."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Refresh:
    """How the run went about it, for the summary, ``/metrics`` and its one line."""

    mode: str  # full, incremental
    reason: str  # why full; empty when incremental
    lines_new: int
    folders_refolded: int | None = None
    folders_carried: int | None = None
    lines_rejudged: int = 0  # lines rejected before, judged otherwise now (``spark_jobs.rejudged``)
    files_retaken: int = 0  # files rewritten since the last run, read again whole (``compute.retaken``)
    files_shared: int = 0  # unchanged files read again whole with them (``retaken.widened``)
    folders_from_start: int = 0  # folders folded again from their first event (no kept state held)

    def line(self) -> str:
        if self.mode == "full":
            return f"full: {self.reason}"
        again = f", {self.lines_rejudged:,} earlier rejects judged again" if self.lines_rejudged else ""
        if self.files_retaken:
            files = "file" if self.files_retaken == 1 else "files"
            again += f", {self.files_retaken:,} rewritten {files} read again"
            if self.files_shared:
                again += f" ({self.files_shared:,} more sharing their lines)"
        start = f" ({self.folders_from_start:,} from their first event)" if self.folders_from_start else ""
        return (
            f"incremental: {self.lines_new:,} new lines, {self.folders_refolded:,} folders refolded{start}, "
            f"{self.folders_carried:,} carried over{again}"
        )
