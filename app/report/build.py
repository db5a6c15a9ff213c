"""The two reports, organisation and folder, from a published run.

Everything shown is read from the run's tables through :class:`app.data.RunData` and drawn with
the dashboard's own figure functions (:mod:`app.figures`), so a report and the dashboard page it
mirrors show the same figures. A report states the run it was made from (run id and as-of) and
never the time it was made: the same run and view give the same bytes, whether made by
``pfscope report`` or by the dashboard's "Download report".

Sizes are bounded: each long list keeps its first ``Limits`` rows, in a stated order, and says
how many it left out.

The two reports are built alike, each section a short function: the organisation's in
:mod:`.organisation`, a folder's in :mod:`.folder`; the view and its checks in :mod:`.view`, the
header and footer every report has in :mod:`.frame`; the cells, the section helpers and ``Limits``
in :mod:`.cells`, the sections of what is so beside each store's belief and of what happened in
:mod:`.reality`, the HTML and the document around it in ``html`` and ``document``.
"""

from __future__ import annotations

from datetime import datetime

import pandas as pd

from pfscope.app.data import RunData
from pfscope.app.report.cells import Limits
from pfscope.app.report.folder import folder_report
from pfscope.app.report.organisation import organisation_report
from pfscope.app.report.view import View, parse_view, report_filename


def build_report(
    data: RunData,
    fid: str | None = None,
    at: str | datetime | pd.Timestamp | None = None,
    limits: Limits | None = None,
) -> str:
    """The HTML of the organisation report (no ``fid``) or of folder ``fid`` (its matrix at ``at``).

    Raises :class:`ReportError` for an unknown FID or a bad ``at``. Same run, same view: same bytes.
    """
    return render(data, parse_view(data, fid, at), limits)


def render(data: RunData, view: View, limits: Limits | None = None) -> str:
    """The HTML of a checked view (see :func:`parse_view`)."""
    lim = limits or Limits()
    if view.fid is None:
        return organisation_report(data, lim)
    return folder_report(data, view.fid, view.at, lim)


def report_download(
    data: RunData, fid: str | None = None, at: str | datetime | pd.Timestamp | None = None
) -> dict[str, str]:
    """The dashboard's "Download report": a ``dcc.Download`` payload with the very bytes that
    ``pfscope report`` writes for the same run and view. Raises :class:`ReportError` like it."""
    view = parse_view(data, fid, at)
    return {
        "content": render(data, view),
        "filename": report_filename(data.run_id, view.fid, view.at),
        "type": "text/html",
    }
