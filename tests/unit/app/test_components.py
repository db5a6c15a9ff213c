"""Shared widgets: suggestions for a mistyped name, escaped tables, links, times and ids that wrap."""

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


def texts(node: object) -> list[str]:
    """Every text child below a component, in order."""
    if isinstance(node, str):
        return [node]
    kids = getattr(node, "children", None)
    if kids is None:
        return []
    kids = kids if isinstance(kids, list) else [kids]
    return [t for k in kids for t in texts(k)]


def test_times_wrap_between_date_and_time_only() -> None:
    got = c.as_time("2026-11-07 00:47:50Z", {})
    parts = got.children
    assert [p.children for p in parts[::2]] == ["2026-11-07", "00:47:50Z"] and parts[1] == " "
    assert all(p.className == "pf-nowrap" for p in parts[::2])
    assert c.as_time(None, {}) == "" and c.as_time("", {}) == ""


def test_ids_wrap_after_their_separators_only() -> None:
    got = c.as_breakable("PFJNB02/1-2BE4/8", {})
    assert "".join(texts(got)) == "PFJNB02/1-2BE4/8"
    nowrap = [p.children for p in got.children if getattr(p, "className", None) == "pf-nowrap"]
    assert nowrap == ["PFJNB02/", "1-2BE4/", "8"]
    assert sum(type(p).__name__ == "Wbr" for p in got.children) == 2
    message = c.as_breakable("<00001B59@EXDUB02>", {})
    assert [p.children for p in message.children if getattr(p, "className", None)] == [
        "<00001B59@",
        "EXDUB02>",
    ]
    assert c.as_breakable(None, {}) == ""
