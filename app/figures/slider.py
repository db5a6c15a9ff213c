"""The folder slider's geometry: positions in time, the step a value means, labels, marks, time ticks."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd


def time_ticks(times: Sequence[Any], end: Any = None) -> list[float]:
    """Where each change time sits on a time axis from the first change to ``end`` (default: the
    last change), as fractions 0..1: ticks spaced by time, not by event."""
    if not times:
        return []
    ts = [pd.Timestamp(x) for x in times]
    last = pd.Timestamp(end) if end is not None and not pd.isna(end) else ts[-1]
    last = max(last, ts[-1])
    span = (last - ts[0]).total_seconds()
    if span <= 0:
        return [0.0 for _ in ts]
    return [(x - ts[0]).total_seconds() / span for x in ts]


def slider_positions(times: Sequence[Any], end: Any = None) -> list[float]:
    """The folder slider's positions: seconds since the first change for each change time, then
    the run's as-of (``end``) last, so the thumb sits where in time the change happened. An as-of
    at the last change (or before it) is put just after it, so the two steps stay apart."""
    if not times:
        return []
    ts = [pd.Timestamp(x) for x in times]
    out = [round((x - ts[0]).total_seconds(), 6) for x in ts]
    last = out[-1]
    as_of = (
        round((pd.Timestamp(end) - ts[0]).total_seconds(), 6)
        if end is not None and not pd.isna(end)
        else last
    )
    return [*out, as_of if as_of > last else last + max(1.0, last / 50)]


def position_index(value: Any, positions: Sequence[float], tolerance: float = 1e-3) -> int | None:
    """The step a slider value stands for (its nearest position), or None when no position is
    within ``tolerance`` seconds: a value the page never offered."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    if not positions or v != v:
        return None
    i = min(range(len(positions)), key=lambda k: abs(positions[k] - v))
    return i if abs(positions[i] - v) <= tolerance else None


def slider_labels(positions: Sequence[float], texts: Sequence[str], min_gap: float = 1 / 8) -> list[str]:
    """One label per change position (``texts``: their RFC 3339 times) and "as of" for the last:
    a change keeps its label only when it is ``min_gap`` of the slider from the previous labelled
    one and from "as of", so labels placed by time never overlap; the others are blank (the thumb
    still stops there)."""
    if not positions:
        return []
    end = positions[-1] or 1.0
    labels, last = [], None
    for p, text in zip(positions[:-1], texts, strict=True):
        x = p / end
        keep = (last is None or x - last >= min_gap) and 1 - x >= min_gap
        labels.append(text[5:16].replace("T", " ") if keep else "")
        last = x if keep else last
    return [*labels, "as of"]


#: dcc.Slider draws at most 500 marks (more: it warns and draws its own); kept below that
MAX_SLIDER_MARKS = 480


def slider_mark_indices(
    positions: Sequence[float], keep: Iterable[int] = (), limit: int = MAX_SLIDER_MARKS
) -> list[int]:
    """Which stops get a mark: the first, the last (as-of), ``keep`` (labelled ones, the current
    step) and the first stop in each 1/``limit`` of the slider, so a long history stays under
    Dash's limit. The keyboard still visits every stop (assets/pfscope-slider.js); a drag snaps
    to the marks, at most 1/``limit`` of the width apart."""
    n = len(positions)
    if n == 0:
        return []
    end = positions[-1] or 1.0
    picked = {0, n - 1, *(i for i in keep if 0 <= i < n)}
    seen: set[int] = set()
    for i, p in enumerate(positions):
        slot = round(p / end * limit)
        if slot not in seen:
            seen.add(slot)
            picked.add(i)
    return sorted(picked)
