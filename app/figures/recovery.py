"""The forecast of many replicas at once (the published ``forecast`` table: what is so, played
forward from the as-of by the model's rules; :data:`ASSUMES` says under what assumptions): when the
last of them is in sync, when at the latest, how many will not catch up and why (the overview's
causes, the store page, the reports), and the recovery chart: the replicas still lacking CNs over
the coming days, a step down at each replica's ``in_sync_at``, its bound from
``latest_in_sync_at`` dashed, and the replicas that will not catch up as a floor."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from pfscope.app.figures.forecast import ASSUMES, forecast_text, waits_of
from pfscope.app.figures.forecast_explain import block_parts
from pfscope.app.figures.layout import base_layout, empty_figure
from pfscope.app.figures.outages import short_time, utc_time
from pfscope.app.figures.palette import BLUE, ORANGE, VERMILLION
from pfscope.app.figures.text import esc, fmt_time, plural
from pfscope.spark_jobs.model.forecast import HORIZON
from pfscope.spark_jobs.model.forecast.folder import duration, stores_are
from pfscope.spark_jobs.model.timeutil import DAY, US

__all__ = [
    "ASSUMES",
    "FORECAST_COLUMNS",
    "HORIZON_DAYS",
    "Recovery",
    "blocked_groups",
    "fig_recovery",
    "forecast_at_s",
    "forecast_cell",
    "forecast_columns",
    "forecast_short",
    "forecast_summary",
    "lacking_at",
    "recovery",
    "recovery_milestones",
    "recovery_text",
]

#: how far the forecast looks, in days (the play's horizon)
HORIZON_DAYS = HORIZON // DAY
#: the most points of each step line: beyond it, times are rounded up to a bin (the line then
#: says "by" a little later than the forecast, never earlier)
STEP_POINTS = 2_000

# a CN set inside a blocked_by text ("only PFJNB02 holds PFJNB02:1-40,45;PFS1:3: down since …"):
# origins start a word (a time's "T09:15" does not), ranges are CN numbers
_RANGE = r"[1-9][0-9]*(?:-[1-9][0-9]*)?"
_SECTION = rf"[A-Za-z][\w.\-]*:{_RANGE}(?:,{_RANGE})*"
_CNSET = re.compile(rf"(?<![\w.:\-]){_SECTION}(?:;{_SECTION})*(?![\w\-])")


def _generic(text: str) -> str:
    """A ``blocked_by`` text with its CN sets named generically, so one reason across many
    folders ("only PFJNB02 holds …: down since …") is one group."""

    def name(m: re.Match[str]) -> str:
        return "CNs" if text[: m.start()].endswith("lacks ") else "CNs it lacks"

    return _CNSET.sub(name, text)


def _blocked(forecast: pd.DataFrame) -> pd.DataFrame:
    return forecast[forecast["in_sync_at"].isna()] if not forecast.empty else forecast


def _reasons(row: Mapping[str, Any]) -> list[str]:
    """A blocked replica's reasons: its ``blocked_by`` in parts, less the closing words on the
    return of the stores it waits for (:func:`forecast_explain.block_parts`; :func:`waits_groups`
    sums those up), CN sets named generically."""
    return [_generic(p) for p in block_parts(row)]


def blocked_groups(forecast: pd.DataFrame) -> list[tuple[str, int]]:
    """Why the replicas that will not catch up will not: each reason of their ``blocked_by``
    texts (:func:`_reasons`) and how many replicas it holds back; the most common first."""
    counts: Counter[str] = Counter()
    for row in _blocked(forecast).to_dict("records"):
        for reason in dict.fromkeys(_reasons(row) or ["no reason given"]):
            counts[reason] += 1
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


@dataclass(frozen=True)
class Waiting:
    """Replicas that will not catch up while ``stores`` are down: how many, and once they are back
    the longest it then takes (``after``, seconds; ``latest``: the bound), ``never`` of them not
    even then within the horizon, ``unbounded`` not within it at the latest."""

    stores: tuple[str, ...]
    replicas: int
    after: float | None
    latest: float | None
    never: int
    unbounded: int

    def text(self) -> str:
        """``once PFJNB02 is back, all 34 in sync within ~1 d 15 h (3 d 4 h at the latest)``."""
        who, verb = stores_are(list(self.stores))
        head = f"once {who} {verb} back"
        coming = self.replicas - self.never
        if not coming or self.after is None:
            return f"{head}, still not within {HORIZON_DAYS} days"
        if self.latest is None:
            bound = f"not within {HORIZON_DAYS} days at the latest"
        else:
            bound = f"{duration(self.latest)} at the latest" + (
                f", {self.unbounded:,} of them not within {HORIZON_DAYS} days then" if self.unbounded else ""
            )
        soon = f"within ~{duration(self.after)}" if self.after >= 60 else "at once"
        if self.replicas == 1:
            said = f"{head}, in sync {soon} ({bound})"
        else:
            said = f"{head}, {'' if self.never else 'all '}{coming:,} in sync {soon} ({bound})"
        return said + (f"; {self.never:,} not even then" if self.never else "")


def waits_groups(forecast: pd.DataFrame) -> list[Waiting]:
    """The replicas that will not catch up but wait for stores that are down, by those stores:
    what their return would do (``after_back_s``, ``latest_after_back_s``), most replicas first."""
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for row in _blocked(forecast).to_dict("records"):
        if waits_of(row):
            groups.setdefault(tuple(waits_of(row)), []).append(row)
    out = []
    for stores, rows in groups.items():
        known = [r for r in rows if _known(r.get("after_back_s"))]
        after = [float(r["after_back_s"]) for r in known]
        bounded = [float(r["latest_after_back_s"]) for r in known if _known(r.get("latest_after_back_s"))]
        out.append(
            Waiting(
                stores,
                len(rows),
                max(after) if after else None,
                max(bounded) if bounded else None,
                len(rows) - len(known),
                len(known) - len(bounded),
            )
        )
    return sorted(out, key=lambda w: (-w.replicas, w.stores))


def _known(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and pd.isna(value))


def _why(groups: list[tuple[str, int]], most: int = 3) -> str:
    """The reasons in a line: one alone as it is, several each with its count."""
    if len(groups) == 1:
        return groups[0][0]
    named = [f"{text} ({n:,})" for text, n in groups[:most]]
    more = len(groups) - len(named)
    return "; ".join(named) + (f"; {plural(more, 'other reason')}" if more > 0 else "")


def _latest(values: pd.Series) -> pd.Timestamp | None:
    known = values.dropna()
    return utc_time(known.max()) if len(known) else None


def forecast_summary(forecast: pd.DataFrame) -> str:
    """The forecast of the replicas ``forecast`` holds (rows of the table), in one clause: one
    replica as :func:`forecast_text` says it; several as "forecast: all 3 replicas in sync by ~Fri
    11-06 14:05 (Sat 11-07 02:10 at the latest)", or "2 replicas in sync by …; 1 replica will not
    catch up within 14 days: …; once PFJNB02 is back, in sync within ~2 h (…)"; empty when there is
    none (they lack nothing, or the run has no forecast)."""
    if forecast.empty:
        return ""
    if len(forecast) == 1:
        return forecast_text(forecast.iloc[0].to_dict())
    blocked = _blocked(forecast)
    coming = forecast[forecast["in_sync_at"].notna()]
    parts: list[str] = []
    if len(coming):
        last = short_time(_latest(coming["in_sync_at"]))
        bound = _latest(coming["latest_in_sync_at"])
        unbounded = int(coming["latest_in_sync_at"].isna().sum())
        if bound is None:
            at_latest = f"not within {HORIZON_DAYS} days at the latest, if a reply is lost"
        else:
            at_latest = (
                ("also" if short_time(bound) == last else short_time(bound))
                + " at the latest"
                + (f"; {unbounded:,} not within {HORIZON_DAYS} days if a reply is lost" if unbounded else "")
            )
        who = ("all " if blocked.empty else "") + plural(len(coming), "replica")
        parts.append(f"{who} in sync by ~{last} ({at_latest})")
    if len(blocked):
        who = ("all " if coming.empty else "") + plural(len(blocked), "replica")
        parts.append(f"{who} will not catch up within {HORIZON_DAYS} days: {_why(blocked_groups(forecast))}")
        parts += [w.text() for w in waits_groups(forecast)]
    return "forecast: " + "; ".join(parts)


def forecast_cell(row: dict[str, Any] | None) -> str:
    """A replica's forecast in a table's cell: "in sync by ~Mon 11-09 08:05 (Tue 11-10 08:20 at
    the latest)"; not in sync, as its verdict says it ("not in sync until PFJNB02 is back: …",
    "will not catch up within 14 days: …"); empty without a row (it lacks nothing)."""
    if row is None:
        return ""
    at, bound = utc_time(row.get("in_sync_at")), utc_time(row.get("latest_in_sync_at"))
    if at is None:
        return forecast_text(row).removeprefix("forecast: ")
    if bound is None:
        latest = f"not within {HORIZON_DAYS} days at the latest"
    elif short_time(bound) == short_time(at):
        latest = "also at the latest"
    else:
        latest = f"{short_time(bound)} at the latest"
    return f"in sync by ~{short_time(at)} ({latest})"


def forecast_short(row: dict[str, Any] | None) -> str:
    """A replica's forecast in a grid's narrow cell: "in sync by ~Mon 11-09 08:05", "not until
    PFJNB02 is back" (it waits for stores that are down, and their return would bring it in sync)
    or "not within 14 days" (the bound and why are in :func:`forecast_text`); empty without a row."""
    if row is None:
        return ""
    at = utc_time(row.get("in_sync_at"))
    if at is not None:
        return f"in sync by ~{short_time(at)}"
    stores = waits_of(row)
    if stores and _known(row.get("after_back_s")):
        who, verb = stores_are(stores)
        return f"not until {who} {verb} back"
    return f"not within {HORIZON_DAYS} days"


def forecast_at_s(row: dict[str, Any] | None) -> float | None:
    """A replica's ``in_sync_at`` in seconds since the epoch, to sort by (None: not within the
    horizon, or no row)."""
    at = utc_time(row.get("in_sync_at")) if row is not None else None
    return None if at is None else at.value / 1e9


# -- the recovery chart ------------------------------------------------------------------------


@dataclass(frozen=True)
class Recovery:
    """The replicas still lacking CNs from the as-of (``start``) to ``end``: by the forecast
    (``steps``: at, lacking) and at the latest (``bound``), each counting the ``blocked`` (the
    floor) and, for the bound, the ``unbounded`` (in sync, but not within the horizon if a reply
    is lost), ``why`` they will not catch up and what the return of the stores some wait for would
    do (``waiting``)."""

    start: pd.Timestamp | None
    end: pd.Timestamp | None
    total: int
    blocked: int
    unbounded: int
    steps: pd.DataFrame
    bound: pd.DataFrame
    why: list[tuple[str, int]] = field(default_factory=list)
    #: the last in_sync_at and latest_in_sync_at of the replicas that catch up
    last: pd.Timestamp | None = None
    last_bound: pd.Timestamp | None = None
    waiting: list[Waiting] = field(default_factory=list)


def _steps(times: pd.Series, start: pd.Timestamp, end: pd.Timestamp, total: int, floor: int) -> pd.DataFrame:
    """A step line down from ``total`` at ``start``: after each time, one fewer (``floor`` left
    at the end); times rounded up to a bin when there are more than :data:`STEP_POINTS`."""
    ns = np.sort(pd.DatetimeIndex(pd.to_datetime(times, utc=True)).asi8)
    t0, t1 = start.value, end.value
    ns = np.clip(ns, t0, t1)
    distinct = np.unique(ns)
    if len(distinct) > STEP_POINTS:
        width = max(1, -(-(t1 - t0) // STEP_POINTS))
        ns = t0 + -(-(ns - t0) // width) * width
        ns = np.minimum(ns, t1)
        distinct = np.unique(ns)
    gone = np.searchsorted(ns, distinct, side="right")  # replicas in sync at or before each time
    at = np.concatenate([[t0], distinct, [t1]])
    lacking = np.concatenate([[total], total - gone, [total - len(ns)]])
    frame = pd.DataFrame({"at": pd.to_datetime(at, utc=True), "lacking": lacking.astype("int64")})
    return frame


def recovery(forecast: pd.DataFrame, as_of: Any) -> Recovery:
    """The recovery chart's data from the forecast's rows (``in_sync_at``, ``latest_in_sync_at``,
    ``blocked_by``): x from the as-of to the last forecast time, at most the horizon."""
    start = utc_time(as_of)
    total = len(forecast)
    empty = pd.DataFrame({"at": pd.Series([], dtype="datetime64[ns, UTC]"), "lacking": []})
    if start is None or total == 0:
        return Recovery(start, start, total, 0, 0, empty, empty)
    horizon = start + pd.Timedelta(microseconds=HORIZON // US * US)
    coming = forecast[forecast["in_sync_at"].notna()]
    blocked = total - len(coming)
    bounded = coming["latest_in_sync_at"].dropna()
    unbounded = len(coming) - len(bounded)
    last, last_bound = _latest(coming["in_sync_at"]), _latest(bounded)
    known = [t for t in (last, last_bound) if t is not None]
    if unbounded or not known:
        end = horizon
    else:
        last_time = max(known)
        end = min(last_time + (last_time - start) * 0.04, horizon)  # the last step seen, not on the edge
    end = max(end, start + pd.Timedelta(hours=1))  # everything at the as-of: still an hour to see it
    steps = _steps(coming["in_sync_at"], start, end, total, blocked)
    bound = _steps(bounded, start, end, total, blocked + unbounded)
    why, waiting = blocked_groups(forecast), waits_groups(forecast)
    return Recovery(start, end, total, blocked, unbounded, steps, bound, why, last, last_bound, waiting)


def recovery_text(r: Recovery, of: str = "", why: bool = False) -> str:
    """The forecast of many replicas in two sentences: "163 replicas lack CNs at the as-of (what
    is so). By the forecast, 129 will be in sync, the last by ~Tue 11-10 15:35 (Sun 11-15 12:07 at
    the latest, if a reply is lost); 34 will not catch up within 14 days." ``of``: whose replicas
    (" of PFS1"); ``why``: say why those that will not catch up will not."""
    if r.total == 0:
        return f"No replica{of} lacks CNs at the as-of: nothing to forecast."
    head = (
        f"{plural(r.total, 'replica')}{of} lack{'s' if r.total == 1 else ''} CNs at the as-of (what is so)."
    )
    coming = r.total - r.blocked
    parts: list[str] = []
    if coming:
        if r.last_bound is not None:
            same = short_time(r.last_bound) == short_time(r.last)
            bound = f"{'also' if same else short_time(r.last_bound)} at the latest, if a reply is lost" + (
                f"; {r.unbounded:,} of them not within {HORIZON_DAYS} days then" if r.unbounded else ""
            )
        else:
            bound = f"not within {HORIZON_DAYS} days at the latest, if a reply is lost"
        if r.total == 1:
            who = "it will be in sync by"
        else:
            who = ("all" if not r.blocked else f"{coming:,}") + " will be in sync, the last by"
        parts.append(f"{who} ~{short_time(r.last)} ({bound})")
    if r.blocked:
        who = (
            f"{r.blocked:,} will not catch up"
            if coming
            else ("it will not catch up" if r.total == 1 else "none of them catches up")
        )
        parts.append(f"{who} within {HORIZON_DAYS} days" + (f": {_why(r.why)}" if why and r.why else ""))
        parts += [w.text() for w in r.waiting]
    return f"{head} By the forecast, " + "; ".join(parts) + "."


def _wrap(text: str, width: int = 60) -> str:
    """Plotly text broken into lines (``<br>``) of about ``width`` characters, escaped."""
    words, lines, line = text.split(" "), [], ""
    for w in words:
        if line and len(line) + 1 + len(w) > width:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}" if line else w
    lines.append(line)
    return "<br>".join(esc(x) for x in lines)


def fig_recovery(r: Recovery) -> go.Figure:
    """Replicas still lacking CNs over the coming days, by the forecast (what is so, played
    forward): a step down at each replica's in-sync time (solid), the bound if a reply is lost
    (dashed), and the replicas that will not catch up as a floor labelled with why."""
    if r.total == 0 or r.start is None or r.end is None:
        return empty_figure("No replica lacks CNs at the as-of: nothing to forecast")
    fig = go.Figure()
    floor = r.blocked
    if floor:
        why = "<br>".join(
            [f"{n:,}: {_wrap(text)}" for text, n in r.why] + [_wrap(w.text()) for w in r.waiting]
        )
        fig.add_scatter(
            x=[r.start, r.end],
            y=[floor, floor],
            mode="lines",
            name=f"will not catch up within {HORIZON_DAYS} days",
            line={"color": VERMILLION, "width": 1, "shape": "hv"},
            fill="tozeroy",
            fillcolor="rgba(213,94,0,0.18)",  # light: the label in it stays readable, light and dark
            hovertemplate=f"{plural(floor, 'replica')} will not catch up within {HORIZON_DAYS} days:<br>"
            f"{why}<extra></extra>",
        )
    fig.add_scatter(
        x=r.bound["at"],
        y=r.bound["lacking"],
        mode="lines",
        name="at the latest (the first reply of each entry lost)",
        line={"color": ORANGE, "dash": "dash", "shape": "hv", "width": 2},
        hovertemplate="at the latest: %{y} still lacking by %{x}<extra></extra>",
    )
    fig.add_scatter(
        x=r.steps["at"],
        y=r.steps["lacking"],
        mode="lines",
        name="by the forecast",
        line={"color": BLUE, "shape": "hv", "width": 2.5},
        hovertemplate="by the forecast: %{y} still lacking by %{x}<extra></extra>",
    )
    if floor and r.why:
        more = len(r.why) - 1
        label = f"{plural(floor, 'replica')} will not catch up: {r.why[0][0]}" + (
            f" (and {plural(more, 'other reason')})" if more > 0 else ""
        )
        text = _wrap(label, 44)
        # inside the floor when it is tall enough for the label (about 15 px a line of the plot's
        # 230), else just above it
        inside = floor / max(r.total, 1) >= (text.count("<br>") + 1) * 15 / 230
        fig.add_annotation(
            x=0.5,
            xref="paper",
            y=floor / 2 if inside else floor,
            yref="y",
            yanchor="middle" if inside else "bottom",
            xanchor="center",
            align="center",
            showarrow=False,
            text=text,
            font={"size": 11},
        )
    fig.update_xaxes(range=[r.start, r.end], title_text="from the as-of (UTC)")
    fig.update_yaxes(rangemode="tozero", title_text="replicas lacking CNs")
    fig = base_layout(fig, height=360)
    fig.update_layout(hovermode="closest", margin={"l": 10, "r": 10, "t": 70, "b": 10})
    return fig


# -- a replica's forecast as a table's columns -------------------------------------------------

#: the columns :func:`forecast_columns` adds
FORECAST_COLUMNS = ["forecast", "forecast_s", "forecast_in_sync_at", "forecast_latest_at", "forecast_detail"]


def forecast_columns(
    rows: pd.DataFrame, forecast: pd.DataFrame, store: str = "store", long: bool = False
) -> pd.DataFrame:
    """``rows`` (one replica each, or several rows of one: ``store`` names its store column, with
    ``fid``) with its forecast: ``forecast`` (:func:`forecast_short`; ``long``:
    :func:`forecast_cell`, with the bound and why), ``forecast_s`` (in sync,
    seconds since the epoch, to sort by; null: not within the horizon or no forecast),
    ``forecast_in_sync_at`` and ``forecast_latest_at`` (UTC text) and ``forecast_detail`` (its
    :func:`forecast_text`, the bound and the stores or why in full)."""
    by = (
        {(str(r["store"]), str(r["fid"])): r for r in forecast.to_dict("records")}
        if not forecast.empty
        else {}
    )
    found = [by.get((str(s), str(f))) for s, f in zip(rows[store], rows["fid"], strict=True)]
    return rows.assign(
        forecast=[(forecast_cell if long else forecast_short)(r) for r in found],
        forecast_s=[forecast_at_s(r) for r in found],
        forecast_in_sync_at=[fmt_time(r.get("in_sync_at")) if r else "" for r in found],
        forecast_latest_at=[fmt_time(r.get("latest_in_sync_at")) if r else "" for r in found],
        forecast_detail=[forecast_text(r) for r in found],
    )


def lacking_at(steps: pd.DataFrame, at: pd.Timestamp) -> int:
    """How many replicas a step line says still lack CNs at ``at`` (its value after the last step
    at or before ``at``)."""
    before = steps[steps["at"] <= at]
    return int(before["lacking"].iloc[-1]) if len(before) else int(steps["lacking"].iloc[0])


#: the recovery chart's numbers, a row this often (a report's table)
MILESTONE_EVERY = pd.Timedelta(days=1)


def recovery_milestones(r: Recovery, every: pd.Timedelta = MILESTONE_EVERY) -> pd.DataFrame:
    """The chart's numbers in a few rows (a printed report has no hover): at the as-of (every
    replica that lacks CNs then, what is so), every ``every`` after it, and at the chart's end, the
    replicas still lacking by the forecast and at the latest (each counting those that will not
    catch up)."""
    if r.total == 0 or r.start is None or r.end is None:
        return pd.DataFrame(columns=["at", "by_forecast", "at_the_latest"])
    times = list(pd.date_range(r.start, r.end, freq=every))
    if times[-1] != r.end:
        times.append(r.end)
    return pd.DataFrame(
        {
            "at": times,
            "by_forecast": [r.total] + [lacking_at(r.steps, t) for t in times[1:]],
            "at_the_latest": [r.total] + [lacking_at(r.bound, t) for t in times[1:]],
        }
    )
