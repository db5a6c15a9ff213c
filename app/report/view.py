"""What a report shows (the organisation, or one folder at a time), checked against the run, and
its file's name."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

import pandas as pd

from pfscope.app.data import RunData
from pfscope.app.figures.text import ts_text
from pfscope.app.report.cells import missing as _missing
from pfscope.spark_jobs.model.errors import OperatorError
from pfscope.spark_jobs.model.timeutil import TimeError, parse_ts


class ReportError(OperatorError, ValueError):
    """A view the run cannot give (unknown FID, bad or late ``at``); one line for the operator."""


@dataclass(frozen=True)
class View:
    """What a report shows: the organisation (no ``fid``) or one folder, optionally at ``at``."""

    fid: str | None = None
    at: pd.Timestamp | None = None


def parse_view(data: RunData, fid: str | None, at: str | datetime | pd.Timestamp | None) -> View:
    """Check a view against the run: the FID exists, ``at`` is RFC 3339 and not after the as-of."""
    if at is not None and fid is None:
        raise ReportError("--at needs --fid: only a folder's matrix can be shown at an earlier time")
    if fid is not None and data.folder(fid) is None:
        raise ReportError(f"no folder with FID {fid!r} in run {data.run_id}")
    if at is None or (isinstance(at, str) and at == ""):
        return View(fid=fid)
    if isinstance(at, str):
        try:
            ts = pd.Timestamp(parse_ts(at), unit="us", tz="UTC")
        except TimeError as e:
            raise ReportError(f"--at: {e}; use a time like 2026-11-02T08:15:00Z") from None
    else:
        ts = pd.Timestamp(at)
        ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
    as_of = data.summary().get("as_of")
    if not _missing(as_of) and ts > pd.Timestamp(as_of):
        raise ReportError(f"--at {ts_text(ts)} is after the run's as-of time {ts_text(as_of)}")
    return View(fid=fid, at=ts)


def report_filename(run_id: str, fid: str | None = None, at: pd.Timestamp | None = None) -> str:
    """A file name for the view (safe on every file system): ``pfscope-<run>[-<fid>][-at-<ts>].html``."""
    parts = ["pfscope", run_id]
    if fid is not None:
        parts.append(fid)
    if at is not None:
        parts.append("at-" + pd.Timestamp(at).strftime("%Y%m%dT%H%M%SZ"))
    return re.sub(r"[^A-Za-z0-9._-]", "_", "-".join(parts)) + ".html"
