"""Standalone HTML reports: one self-contained file per view of a published run.

``build_report(data, fid=None, at=None)`` is what both ``pfscope report`` and the dashboard's
"Download report" call, so the same run and view give the same file.
"""

from __future__ import annotations

from pfscope.app.report.build import build_report, render, report_download
from pfscope.app.report.cells import Limits
from pfscope.app.report.files import write_report
from pfscope.app.report.view import ReportError, View, parse_view, report_filename

__all__ = [
    "Limits",
    "ReportError",
    "View",
    "build_report",
    "parse_view",
    "render",
    "report_download",
    "report_filename",
    "write_report",
]
