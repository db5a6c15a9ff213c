"""Shared widgets: suggestions for a mistyped name, escaped tables, the matrix cell."""

from __future__ import annotations

import pandas as pd

from pfscope.app import components as c


def test_suggestions_find_close_and_partial_matches() -> None:
    choices = [(s, s, c.store_href(s)) for s in ("PFRED01", "PFRED02", "PFDUB01", "PFSIN02")]
    assert [label for label, _ in c.suggestions("PFRED1", choices)][:2] == ["PFRED01", "PFRED02"]
    assert c.suggestions("dub", choices) == [("PFDUB01", "/store/PFDUB01")]
    assert c.suggestions("zzzz", choices) == []


def test_suggestions_stay_close_in_a_large_organisation() -> None:
    many = [(f"1-{0x10000 + i:X}", f"1-{0x10000 + i:X}", f"/folder/1-{0x10000 + i:X}") for i in range(50_000)]
    got = [label for label, _ in c.suggestions("1-1A2BO", many)]  # a letter O for a zero
    assert got[0] == "1-1A2B0" and len(got) == 8 and all(g.startswith("1-1A2") for g in got)


def test_tables_carry_data_as_text() -> None:
    frame = pd.DataFrame(
        {"path": ["<script>alert(1)</script>"], "at": [pd.Timestamp("2026-11-02T08:15", tz="UTC")]}
    )
    table = c.table(frame, [("path", "path"), ("at", "at")])
    cells = table.children[0].children[1].children[0].children
    assert cells[0].children == "<script>alert(1)</script>"  # a text child: React escapes it
    assert cells[1].children == "2026-11-02 08:15:00Z"


def test_folder_links_are_encoded() -> None:
    assert c.folder_href("1-2A45", at="2026-11-02T08:15:00Z", request="R/1-2A45/1:2") == (
        "/folder/1-2A45?at=2026-11-02T08:15:00Z&request=R%2F1-2A45%2F1:2"
    )


def _texts(node: object) -> list[str]:
    """Every text child below a component, in order."""
    if isinstance(node, str):
        return [node]
    kids = getattr(node, "children", None)
    if kids is None:
        return []
    kids = kids if isinstance(kids, list) else [kids]
    return [t for k in kids for t in _texts(k)]


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
    derived = c.matrix_cell({**base, "derived": True})
    plain = c.matrix_cell({**base, "derived": False})
    assert "≥ lower bound (derived from Exchange logs)" in _texts(derived)
    assert (
        "pf-derived" in derived.className.split()
        and derived.to_plotly_json()["props"]["data-derived"] == "true"
    )
    assert "derived" in derived.title
    assert not any("lower bound" in t for t in _texts(plain)) and "pf-derived" not in plain.className
    assert "pf-derived" not in c.matrix_cell({**base, "derived": pd.NA}).className  # a null flag is no mark


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
    marked = c.matrix_table(f.who_knows_what(f.cells_at(hist, pd.Timestamp("2026-11-03", tz="UTC"))))
    plain = c.matrix_table(
        f.who_knows_what(f.cells_at(hist.assign(derived=False), pd.Timestamp("2026-11-03", tz="UTC")))
    )
    assert any(t.startswith("derived:") for t in _texts(marked.children[1]))
    assert not any(t.startswith("derived:") for t in _texts(plain.children[1]))


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
    table = c.matrix_table(early, observers=["A", "B", "C"], subjects=["A", "B", "C"]).children[0]
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
    empty = c.matrix_table(early.iloc[0:0], observers=["A", "B"], subjects=["A", "B"])
    assert empty.children[0].id == "pf-matrix"
    assert c.matrix_table(early.iloc[0:0]).className == "pf-muted"


def test_times_wrap_between_date_and_time_only() -> None:
    got = c.as_time("2026-11-07 00:47:50Z", {})
    parts = got.children
    assert [p.children for p in parts[::2]] == ["2026-11-07", "00:47:50Z"] and parts[1] == " "
    assert all(p.className == "pf-nowrap" for p in parts[::2])
    assert c.as_time(None, {}) == "" and c.as_time("", {}) == ""


def test_ids_wrap_after_their_separators_only() -> None:
    got = c.as_breakable("PFJNB02/1-2BE4/8", {})
    assert "".join(_texts(got)) == "PFJNB02/1-2BE4/8"
    nowrap = [p.children for p in got.children if getattr(p, "className", None) == "pf-nowrap"]
    assert nowrap == ["PFJNB02/", "1-2BE4/", "8"]
    assert sum(type(p).__name__ == "Wbr" for p in got.children) == 2
    message = c.as_breakable("<00001B59@EXDUB02>", {})
    assert [p.children for p in message.children if getattr(p, "className", None)] == [
        "<00001B59@",
        "EXDUB02>",
    ]
    assert c.as_breakable(None, {}) == ""
