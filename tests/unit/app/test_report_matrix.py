"""The folder report's who-knows-what matrix as an HTML table (app/report/matrix.py): one wording
with the dashboard, every cell in words, CN sets that wrap between ranges, data kept as text."""

from __future__ import annotations

import re

import pandas as pd

from pfscope.app import figures as f
from pfscope.app.report.matrix import CNSETS_UP_TO, matrix_css, matrix_grid
from tests.unit.app.test_figures import SEED_004, ts


def seed_matrix(derived: bool = False) -> pd.DataFrame:
    hist = SEED_004.assign(derived=[True, False, False, True, False]) if derived else SEED_004
    at = ts("2026-11-02T01:30:00") if derived else ts("2026-11-02T02:00:00")
    return f.who_knows_what(f.cells_at(hist, at))


def cells(markup: str) -> dict[str, str]:
    """Each cell's state and text, by (subject, observer) in reading order."""
    out = {}
    for i, row in enumerate(re.findall(r"<tr>(.*?)</tr>", markup, re.S)[1:]):
        subject = re.search(r'<th scope="row">(.*?)</th>', row).group(1)  # type: ignore[union-attr]
        for j, (state, body) in enumerate(
            re.findall(r'<td class="cell state-(\w+)".*?>(.*?)</td>', row, re.S)
        ):
            out[(subject, j)] = (state, re.sub(r"<[^>]+>", "", body))
        assert i >= 0
    return out  # type: ignore[return-value]


def test_every_cell_says_its_state_in_the_dashboards_words() -> None:
    m = seed_matrix()
    got = cells(matrix_grid(m, "Who knows what: 1-123", 240))
    # observers PFS1, PFS3 across; subjects PFS1, PFS3 down (seed 004: PFS3 not told of PFS1:12-16)
    assert got[("PFS1", 1)] == (
        "not_told",
        "not told yet: 5 CNsPFS1:12-16PFS1:1-11;PFS2:1-20;PFS3:1-31believed 62 CNs",
    )
    assert got[("PFS3", 0)][0] == "lacks" and got[("PFS3", 0)][1].startswith("really lacks: 5 CNs")
    assert got[("PFS1", 0)][1].startswith("owned, last sent PFS1:16")
    for state, text in got.values():
        assert text.startswith(f.cell_label(state)), (state, text)
    assert "told later" not in matrix_grid(m, "x", 240)


def test_cn_sets_wrap_between_ranges_and_long_ones_are_cut_saying_so() -> None:
    markup = matrix_grid(seed_matrix(), "x", 240)
    assert "PFS1:1-11;<wbr>PFS2:1-20;<wbr>PFS3:1-31" in markup
    short = matrix_grid(seed_matrix(), "x", 12)
    assert '>PFS1:1-11<span class="left-out"> … (62 CNs in all)</span>' in short


def test_a_large_matrix_gives_counts_and_says_where_the_sets_are() -> None:
    names = [f"S{i:02d}" for i in range(CNSETS_UP_TO + 1)]
    rows = [
        {
            "observer": o,
            "subject": s,
            "state": "owned" if o == s else "current",
            "cnset": "S00:1-5",
            "cnset_count": 5,
            "lag_cnset": "",
            "lag_count": 0,
            "lacks_cnset": "",
            "lacks_count": 0,
            "last_sent_cn": 5,
            "derived": False,
        }
        for o in names
        for s in names
    ]
    markup = matrix_grid(pd.DataFrame(rows), "Who knows what: 1-1", 240)
    assert "S00:1-5" not in markup and "believed 5 CNs" in markup
    assert "counts only, for its size: the CN sets are in the list below" in markup


def test_derived_cells_say_so_in_words() -> None:
    got = cells(matrix_grid(seed_matrix(derived=True), "x", 240))
    assert f.DERIVED_NOTE in got[("PFS1", 1)][1] and got[("PFS1", 1)][1].count(f.DERIVED_MARK) >= 1
    assert f.DERIVED_NOTE not in got[("PFS3", 0)][1]


def test_data_stays_text() -> None:
    m = seed_matrix().assign(observer=lambda x: x["observer"].str.replace("PFS3", "<b>PFS3</b>"))
    markup = matrix_grid(m, "Who knows what: 1-123 <script>alert(1)</script>", 240)
    assert "<b>" not in markup and "<script>" not in markup and "&lt;script&gt;" in markup


def test_each_state_has_its_colour_bar() -> None:
    css = matrix_css()
    for state, colour in f.CELL_COLOURS.items():
        assert f"table.matrix td.cell.state-{state} {{ border-left-color: {colour};" in css
