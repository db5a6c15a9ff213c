"""Shared widgets: suggestions for a mistyped name, escaped tables, the matrix cell."""

from __future__ import annotations

import pandas as pd

from app import components as c


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
    frame = pd.DataFrame({"path": ["<script>alert(1)</script>"], "at": [pd.Timestamp("2026-11-02T08:15", tz="UTC")]})
    table = c.table(frame, [("path", "path"), ("at", "at")])
    cells = table.children[0].children[1].children[0].children
    assert cells[0].children == "<script>alert(1)</script>"  # a text child: React escapes it
    assert cells[1].children == "2026-11-02 08:15:00Z"


def test_folder_links_are_encoded() -> None:
    assert c.folder_href("1-2A45", at="2026-11-02T08:15:00Z", request="R/1-2A45/1:2") == (
        "/folder/1-2A45?at=2026-11-02T08:15:00Z&request=R%2F1-2A45%2F1:2")
