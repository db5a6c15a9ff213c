"""The reports' shared pieces: their bounds (:class:`Limits`), cells (counts, times, flags, CN
sets, folder paths, health) and section helpers, used by the organisation and folder reports
(:mod:`.build`) and by their sections of what is so and what happened (:mod:`.reality`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from pfscope.app import figures as f
from pfscope.app.report.html import Html, esc, join, tag


@dataclass(frozen=True)
class Limits:
    """The most rows each list of a report shows (the rest is counted, not shown)."""

    worst_folders: int = 25
    rest_fids: int = 1000  # the worst folders the table leaves out, named by FID after it
    open_entries: int = 500
    at_risk: int = 200
    lag_stores: int = 60
    matrix_stores: int = 30
    folder_replicas: int = 200
    folder_entries: int = 200
    attempts: int = 40
    status_requests: int = 40
    rejects_reasons: int = 20
    rejects_named: int = 50
    cnset_chars: int = 240


def missing(value: Any) -> bool:
    if value is None:
        return True
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def int_text(value: Any) -> str:
    return "" if missing(value) else f"{int(value):,}"


def time_text(value: Any) -> str:
    return f.fmt_time(value)


def bool_text(value: Any) -> str:
    return "" if missing(value) else ("yes" if bool(value) else "no")


def cn_text(text: Any, count: Any, max_chars: int) -> Html:
    """A CN set in monospace; a long one is cut at a range boundary, saying how many CNs in all."""
    if missing(text) or text == "":
        return tag("span", "∅", class_="cn muted")
    s = str(text)
    if len(s) <= max_chars:
        return tag("span", s, class_="cn")
    cut = max(s.rfind(",", 0, max_chars), s.rfind(";", 0, max_chars))
    shown = s[: cut if cut > 0 else max_chars]
    total = f"{int(count):,} CNs in all" if not missing(count) else "cut"
    return tag("span", shown, tag("span", f" … ({total})", class_="left-out"), class_="cn")


def folder_path(path: Any) -> Html:
    """A folder path (escaped) that may wrap after each backslash, so narrow columns and paper
    break it between folder names rather than inside one."""
    if missing(path):
        return Html("")
    return Html("\\<wbr>".join(esc(part) for part in str(path).split("\\")))


def health_cell(value: Any) -> Html:
    if missing(value):
        return Html("")
    return tag("span", str(value).replace("_", " "), class_=f"health {value}")


def left_out(shown: int, total: int, what: str, order: str) -> Html:
    """The line under a bounded list: how many rows, in which order, and how many are not shown."""
    if total <= shown:
        return Html("")
    return tag(
        "p",
        f"Showing the first {shown:,} of {total:,} {what} ({order}); {total - shown:,} not shown.",
        class_="left-out",
    )


def section(anchor: str, title: str, *children: Any) -> Html:
    return tag("section", tag("h2", title), *children, id=anchor)


def facts(pairs: Sequence[tuple[str, Any]]) -> Html:
    return tag("dl", *(join([tag("dt", k), tag("dd", v)]) for k, v in pairs), class_="facts")


def rows(frame: pd.DataFrame, cells: Sequence[Callable[[dict[str, Any]], Any]]) -> list[list[Any]]:
    return [[cell(r) for cell in cells] for r in frame.to_dict("records")]
