"""A folder report's who-knows-what matrix as an HTML table, as the dashboard draws it: one column
per observer, one row per subject, each cell its state in words (the dashboard's and the
glossary's words, :func:`app.figures.cell_label`), its CN set and counts, in the page's text
colour on a light tint of the state's colour, with a bar of that colour on its left.

A heatmap's cell labels shrink to fit their cells (about 8 px, white on colour); HTML text keeps
its size, wraps between CN ranges and prints. A wide matrix scrolls sideways in its box.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from pfscope.app import figures as f
from pfscope.app.report.cells import cn_text, missing
from pfscope.app.report.html import Html, esc, tag

#: more stores than this: the cells give counts, the list under the matrix gives the CN sets
CNSETS_UP_TO = 8

#: the tint behind a cell's text (the page's text stays 4.5:1 or more on it, light and dark)
TINT_ALPHA: dict[str, float] = {"not_told": 0.16, "lacks": 0.14, "owned": 0.08}


def _rgba(hex_colour: str, alpha: float) -> str:
    r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r}, {g}, {b}, {alpha})"


def matrix_css() -> str:
    """The matrix's rules: a bar and a tint per state, from the figures' colours (palette)."""
    rules = [
        ".matrix-wrap { overflow-x: auto; max-width: 100%; }",
        "table.matrix { border-collapse: collapse; margin: 6px 0 10px; font-size: 13px; }",
        "table.matrix caption { text-align: left; color: var(--muted); font-size: 12px; padding-bottom: 2px; }",
        "table.matrix th { background: var(--band); border: 1px solid var(--line); padding: 4px 8px;"
        " text-align: left; font-weight: 600; vertical-align: top; white-space: nowrap; }",
        "table.matrix td.cell { border: 1px solid var(--line); border-left: 6px solid var(--line);"
        " padding: 4px 8px; vertical-align: top; min-width: 11em; max-width: 24em; line-height: 1.35; }",
        "td.cell .state { font-weight: 600; }",
        "td.cell .cn { font-size: 12px; }",
        "td.cell .count, td.cell .derived { color: var(--muted); font-size: 12px; }",
    ]
    for state, colour in f.CELL_COLOURS.items():
        tint = TINT_ALPHA.get(state)
        rules.append(
            f"table.matrix td.cell.state-{state} {{ border-left-color: {colour};"
            + (f" background: {_rgba(colour, tint)};" if tint else "")
            + " }"
        )
    return "\n".join(rules) + "\n"


def _cns(text: Any, count: Any, max_chars: int) -> Html:
    """A CN set in monospace that may wrap after each ``,`` and ``;``, never inside a range; a long
    one is cut at a range boundary, saying how many CNs in all (as :func:`.cells.cn_text`)."""
    if missing(text) or text == "":
        return cn_text(text, count, max_chars)
    shown, rest = str(text), Html("")
    if len(shown) > max_chars:
        cut = max(shown.rfind(",", 0, max_chars), shown.rfind(";", 0, max_chars))
        shown = shown[: cut if cut > 0 else max_chars]
        rest = tag("span", f" … ({_count(count)} in all)", class_="left-out")
    pieces = [p for p in re.findall(r"[^,;]*[,;]?", shown) if p]
    return tag("span", Html("<wbr>".join(esc(p) for p in pieces)), rest, class_="cn")


def _count(value: Any) -> str:
    n = 0 if missing(value) else int(value)
    return f"{n:,} CN" + ("" if n == 1 else "s")


def _cell(r: dict[str, Any] | None, subject: str, counts_only: bool, max_chars: int) -> Html:
    if r is None:
        return tag(
            "td",
            tag("div", f.cell_label("unknown"), " (never heard from)", class_="state"),
            class_="cell state-unknown",
            data_state="unknown",
            title=f.CELL_STATES["unknown"],
        )
    state = str(r["state"])
    derived = bool(r.get("derived")) and not missing(r.get("derived"))
    head: list[Any] = [f.cell_label(state)]
    lag_cns: Html | None = None
    if state == "owned" and not missing(r.get("last_sent_cn")):
        head.append(f", last sent {subject}:{int(r['last_sent_cn'])}")
    elif state in ("not_told", "told_later"):
        head.append(f": {_count(r.get('lag_count'))}")
        lag_cns = _cns(r.get("lag_cnset"), r.get("lag_count"), max_chars)
    elif state == "lacks":
        head.append(f": {_count(r.get('lacks_count'))}")
        lag_cns = _cns(r.get("lacks_cnset"), r.get("lacks_count"), max_chars)
    parts: list[Any] = [tag("div", *head, class_="state")]
    if lag_cns is not None and not counts_only:
        parts.append(tag("div", lag_cns))
    believed = (
        (f.DERIVED_MARK + " " if derived else "")
        + ("holds " if state == "owned" else "believed ")
        + _count(r.get("cnset_count"))
    )
    if counts_only:
        parts.append(tag("div", believed, class_="count"))
    else:
        parts.append(tag("div", _cns(r.get("cnset"), r.get("cnset_count"), max_chars)))
        parts.append(tag("div", believed, class_="count"))
    if derived:
        parts.append(tag("div", f.DERIVED_NOTE, class_="derived"))
    title = f.CELL_STATES.get(state, "") + (f"; {f.DERIVED_HELP}" if derived else "")
    return tag("td", *parts, class_=f"cell state-{state}", data_state=state, title=title)


def matrix_grid(matrix: pd.DataFrame, caption: str, max_chars: int) -> Html:
    """The matrix (``matrix_frame`` rows) as a table: observers across, subjects down. With more
    than :data:`CNSETS_UP_TO` stores the cells give counts only (the list under it has the sets)."""
    observers = sorted(matrix["observer"].unique())
    subjects = sorted(matrix["subject"].unique())
    counts_only = len(set(observers) | set(subjects)) > CNSETS_UP_TO
    by_pair = {(r["subject"], r["observer"]): r for r in matrix.to_dict("records")}
    head = tag(
        "thead",
        tag(
            "tr",
            tag("th", "subject \u2193 / observer \u2192", scope="col"),
            *(tag("th", o, scope="col") for o in observers),
        ),
    )
    body = tag(
        "tbody",
        *(
            tag(
                "tr",
                tag("th", s, scope="row"),
                *(_cell(by_pair.get((s, o)), s, counts_only, max_chars) for o in observers),
            )
            for s in subjects
        ),
    )
    note = tag(
        "caption",
        caption,
        " (counts only, for its size: the CN sets are in the list below)" if counts_only else "",
    )
    return tag("div", tag("table", note, head, body, class_="matrix"), class_="matrix-wrap")
