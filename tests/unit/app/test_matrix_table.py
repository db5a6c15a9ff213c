"""The who-knows-what matrix on the dashboard: its cells, its legend, its rows and columns."""

from __future__ import annotations

import pandas as pd

from pfscope.app import matrix_table as mt
from tests.unit.app.test_components import texts


def test_a_derived_cell_says_so_in_words_and_has_the_dashed_class() -> None:
    base = {
        "observer": "PFS3",
        "subject": "PFS1",
        "state": "current",
        "cnset": "PFS1:1-11",
        "cnset_count": 11,
        "lag_count": 0,
        "heard_at": pd.Timestamp("2026-11-02T02:00", tz="UTC"),
    }
    derived = mt.matrix_cell({**base, "derived": True})
    plain = mt.matrix_cell({**base, "derived": False})
    assert "≥ lower bound (derived from Exchange logs)" in texts(derived)
    assert (
        "pf-derived" in derived.className.split()
        and derived.to_plotly_json()["props"]["data-derived"] == "true"
    )
    assert "derived" in derived.title
    assert not any("lower bound" in t for t in texts(plain)) and "pf-derived" not in plain.className
    assert "pf-derived" not in mt.matrix_cell({**base, "derived": pd.NA}).className  # a null flag is no mark


def test_the_matrix_legend_explains_the_mark_only_when_a_cell_has_it() -> None:
    from pfscope.app import figures as f

    hist = pd.DataFrame(
        [
            {
                "observer": "A",
                "subject": "A",
                "at": pd.Timestamp("2026-11-02", tz="UTC"),
                "cnset": "A:1",
                "cnset_count": 1,
                "derived": d,
            }
            for d in (True,)
        ]
    )
    marked = mt.matrix_table(f.who_knows_what(f.cells_at(hist, pd.Timestamp("2026-11-03", tz="UTC"))))
    plain = mt.matrix_table(
        f.who_knows_what(f.cells_at(hist.assign(derived=False), pd.Timestamp("2026-11-03", tz="UTC")))
    )
    assert any(t.startswith("derived:") for t in texts(marked.children[1]))
    assert not any(t.startswith("derived:") for t in texts(plain.children[1]))


def test_the_matrix_keeps_the_folders_observers_and_subjects_at_an_early_step() -> None:
    """A replayed step draws every store the folder's tables ever had (a store with no row yet:
    empty cells), so the table keeps its columns and width from step to step."""
    from pfscope.app import figures as f

    hist = pd.DataFrame(
        [
            {
                "observer": "A",
                "subject": "A",
                "at": pd.Timestamp("2026-11-02", tz="UTC"),
                "cnset": "A:1",
                "cnset_count": 1,
                "derived": False,
            }
        ]
    )
    early = f.who_knows_what(f.cells_at(hist, pd.Timestamp("2026-11-03", tz="UTC")))
    table = mt.matrix_table(early, observers=["A", "B", "C"], subjects=["A", "B", "C"]).children[0]
    head, body = table.children
    assert [th.children for th in head.children.children] == ["subject \\ observer", "A", "B", "C"]
    assert len(body.children) == 3 and all(len(tr.children) == 4 for tr in body.children)
    assert (
        sum(
            td.className.startswith("pf-cell")
            for tr in body.children
            for td in tr.children[1:]
            if hasattr(td, "className") and td.className
        )
        == 1
    )
    # nothing at all yet: still the frame, not "no rows"
    empty = mt.matrix_table(early.iloc[0:0], observers=["A", "B"], subjects=["A", "B"])
    assert empty.children[0].id == "pf-matrix"
    assert mt.matrix_table(early.iloc[0:0]).className == "pf-muted"
