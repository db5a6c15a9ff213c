"""The organisation report's folders needing attention (app/report/attention.py): the count is
the dashboard's, and a table that stops short says so, names the rest and where all of them are."""

from __future__ import annotations

import html as htmllib
import re

import pandas as pd

from pfscope.app import figures as f
from pfscope.app.report.attention import attention_count_text, worst_section
from pfscope.app.report.cells import Limits


def test_the_count_says_how_many_are_listed_and_where_the_rest_are() -> None:
    assert attention_count_text(28, 25) == (
        "28 folders need attention: the 25 worst of 28 are listed below, worst first; the other 3 "
        'follow the table by FID, and the dashboard\'s overview lists all 28 (Folders needing attention, "Show all").'
    )
    assert attention_count_text(3, 25) == "3 folders need attention, all listed below, worst first."
    assert attention_count_text(1, 25) == "1 folder needs attention, listed below, worst first."
    assert attention_count_text(0, 25).startswith("No folder needs attention")


def replicas(n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "store": ["S1"] * n,
            "fid": [f"1-{100 + i:X}" for i in range(n)],
            "path": [f"IPM_SUBTREE\\F{i}" for i in range(n)],
            "health": ["backfilling"] * n,
            "missing_count": [n - i for i in range(n)],  # the first is the worst
            "unique_count": [0] * n,
            "at_risk_count": [0] * n,
        }
    )


def test_a_cut_table_names_the_rest_worst_first() -> None:
    reps = replicas(7)
    every = f.worst_folders(reps, pd.DataFrame(columns=["observer", "fid", "opened_at"]), limit=100)
    html = worst_section(
        reps,
        pd.DataFrame(columns=["observer", "fid", "opened_at"]),
        None,
        Limits(worst_folders=3, rest_fids=2),
    )
    text = htmllib.unescape(re.sub(r"<[^>]+>", "", html))
    assert "7 folders need attention: the 3 worst of 7 are listed below" in text
    rest = list(every["fid"][3:])
    assert (
        f"The other 4, worst first: {rest[0]}, {rest[1]}, and 2 more (on the dashboard's overview)." in text
    )
    assert html.count("<tr>") == 1 + 3


def test_an_uncut_table_says_all_are_listed() -> None:
    empty = pd.DataFrame(columns=["observer", "fid", "opened_at"])
    text = htmllib.unescape(re.sub(r"<[^>]+>", "", worst_section(replicas(2), empty, None, Limits())))
    assert "2 folders need attention, all listed below" in text and "The other" not in text


def test_each_listed_folder_has_its_forecast() -> None:
    reps = pd.concat([replicas(3), replicas(3).assign(store="S2")], ignore_index=True)
    t = pd.Timestamp
    forecast = pd.DataFrame(
        {
            "store": ["S1", "S2", "S1"],
            "fid": ["1-64", "1-64", "1-65"],
            "in_sync_at": [t("2026-11-09T01:00:00Z"), pd.NaT, t("2026-11-09T02:00:00Z")],
            "latest_in_sync_at": [t("2026-11-09T03:00:00Z"), pd.NaT, t("2026-11-09T02:00:00Z")],
            "sources": [["S3"], [], ["S2"]],
            "blocked_by": [None, "S2 is down since 2026-11-07T00:00:00Z: <b>x</b>", None],
        }
    )
    empty = pd.DataFrame(columns=["observer", "fid", "opened_at"])
    html = worst_section(reps, empty, None, Limits(), forecast)
    body = [
        [htmllib.unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
        for row in re.findall(r"<tr>(.*?)</tr>", html)
    ]
    body = [r for r in body if r]
    said = {r[0]: r[-1] for r in body}
    assert said["1-64"] == (
        "1 replica in sync by ~Mon 11-09 01:00 (Mon 11-09 03:00 at the latest); 1 replica will not catch up "
        "within 14 days: S2 is down since 2026-11-07T00:00:00Z: <b>x</b>"
    )
    assert said["1-65"] == "S1: in sync by ~Mon 11-09 02:00 via S2 (a lost reply would not delay it)"
    assert said["1-66"] == "none lacks CNs"
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html  # escaped
    assert "forecast</th>" in html
