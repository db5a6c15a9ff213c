"""The organisation report's folders needing attention: how many there are (the dashboard
overview's count, from the same function, :func:`app.figures.worst_folders`), the worst of them in
a table, and, when the table stops short, how many it leaves out and where they are."""

from __future__ import annotations

from typing import Any

import pandas as pd

from pfscope.app import figures as f
from pfscope.app.figures.recovery import forecast_summary
from pfscope.app.report.cells import Limits, folder_path, rows, section
from pfscope.app.report.cells import int_text as _int
from pfscope.app.report.cells import time_text as _time
from pfscope.app.report.html import Html, table, tag

HEADERS = [
    "FID",
    "path",
    "content at risk (CNs)",
    "overdue replicas",
    "known missing CNs",
    "open entries",
    "oldest open entry",
    "open for",
    "forecast",
]

ORDER = (
    "Content at risk first (what is so: CNs no other replica on the list holds, of a delete-pending "
    "replica or of a store that is down), then overdue replicas, then the CNs the replicas know they "
    "are missing, then the oldest open backfill entry. The forecast: when the folder's replicas that lack "
    "CNs will be in sync (the last of them), at the latest if a reply is lost, or how many will not catch "
    "up and why (the model's rules played forward from the as-of)."
)


def attention_count_text(total: int, shown: int) -> str:
    """How many folders need attention and how many the table lists: "28 folders need attention:
    the 25 worst of 28 are listed, the other 3 after them by FID; …" (never a silent cut)."""
    need = f"{f.plural(total, 'folder')} need{'s' if total == 1 else ''} attention"
    if total == 0:
        return "No folder needs attention: every replica is in sync."
    if shown >= total:
        return f"{need}, {'listed' if total == 1 else 'all listed'} below, worst first."
    return (
        f"{need}: the {shown:,} worst of {total:,} are listed below, worst first; the other "
        f"{total - shown:,} follow the table by FID, and the dashboard's overview lists all {total:,} "
        '(Folders needing attention, "Show all").'
    )


def _the_rest(rest: pd.DataFrame, max_fids: int) -> Html:
    """The folders the table leaves out, by FID, worst first (at most ``max_fids`` named)."""
    named = [str(x) for x in rest["fid"].head(max_fids)]
    more = len(rest) - len(named)
    return tag(
        "p",
        f"The other {len(rest):,}, worst first: ",
        ", ".join(named),
        f", and {more:,} more (on the dashboard's overview)." if more > 0 else ".",
        id="worst-rest",
        class_="left-out",
    )


def folder_forecast(forecast: pd.DataFrame | None, fid: str) -> str:
    """A folder's forecast in the attention list's cell: its replicas that lack CNs, when the last
    is in sync, at the latest, how many will not catch up and why; "" when the run has no forecast,
    "none lacks CNs" when none of its replicas lacks any."""
    if forecast is None:
        return ""
    mine = forecast[forecast["fid"] == fid] if not forecast.empty else forecast
    said = forecast_summary(mine).removeprefix("forecast: ")
    if len(mine) == 1:
        said = f"{mine.iloc[0]['store']}: {said}"
    return said or "none lacks CNs"


def worst_section(
    replicas: pd.DataFrame,
    open_entries: pd.DataFrame,
    as_of: Any,
    lim: Limits,
    forecast: pd.DataFrame | None = None,
) -> Html:
    """The folders needing attention, worst first, each with its forecast (``forecast``: the
    table's rows; None: a run without one, an empty column)."""
    every = f.worst_folders(replicas, open_entries, as_of, limit=len(replicas) + 1)
    shown = every.head(lim.worst_folders)
    count = tag("p", attention_count_text(len(every), len(shown)), id="worst-count", class_="count")
    body: list[Any] = [count, tag("p", ORDER, class_="note")]
    if not every.empty:
        cells = rows(
            shown,
            [
                lambda r: r["fid"],
                lambda r: folder_path(r["path"]),
                lambda r: _int(r["at_risk_count"]),
                lambda r: _int(r["overdue"]),
                lambda r: _int(r["missing_count"]),
                lambda r: _int(r["open_entries"]),
                lambda r: _time(r["oldest_open_at"]),
                lambda r: f.fmt_age(r["oldest_open_age_s"]),
                lambda r: folder_forecast(forecast, str(r["fid"])),
            ],
        )
        body.append(table(HEADERS, cells, numeric=[2, 3, 4, 5]))
        if len(every) > len(shown):
            body.append(_the_rest(every.iloc[len(shown) :], lim.rest_fids))
    return section("worst", "Folders needing attention", *body)
