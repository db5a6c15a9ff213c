"""Tables in windows: at most a page of a frame's rows is ever sent."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class Page:
    """A window of a frame: the rows shown and how many there are in all."""

    rows: pd.DataFrame
    total: int
    offset: int


def window(frame: pd.DataFrame, offset: int = 0, limit: int = 500) -> Page:
    """At most ``limit`` rows from ``offset``: tables never send the whole organisation."""
    offset = max(0, min(int(offset), max(len(frame) - 1, 0)))
    return Page(frame.iloc[offset : offset + limit].reset_index(drop=True), len(frame), offset)
