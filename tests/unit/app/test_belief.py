"""A store's belief beside what is so, and what happened, in words (app/figures/belief.py, outages.py)."""

from __future__ import annotations

import pandas as pd

from pfscope.app import figures as f

T = pd.Timestamp
AS_OF = T("2026-11-08T23:59:59Z")


def test_a_belief_names_whose_it_is_and_says_what_is_so() -> None:
    assert (
        f.believed_unique_text("PFJNB02", 6, 0)
        == "PFJNB02 believes 6 CNs are only there; all 6 are on other replicas"
    )
    assert f.believed_unique_text("PFJNB02", 6, 0, ", in 5 folders") == (
        "PFJNB02 believes 6 CNs are only there, in 5 folders; all 6 are on other replicas"
    )
    assert f.believed_unique_text("PFJNB01", 5, 1, cnset="PFJNB01:115-119") == (
        "PFJNB01 believes 5 CNs (PFJNB01:115-119) are only there; 4 of them are on other replicas"
    )
    assert f.believed_unique_text("A", 1, 0) == "A believes 1 CN is only there; it is on another replica"
    assert f.believed_unique_text("A", 2, 0) == "A believes 2 CNs are only there; both are on other replicas"
    assert (
        f.believed_unique_text("A", 3, 3) == "A believes 3 CNs are only there; it is right about all of them"
    )
    assert f.believed_unique_text("A", 0, 0) == ""


def test_content_held_alone_says_why_it_is_at_risk() -> None:
    assert f.held_alone_text("PFJNB01", 1, "PFJNB01:119", "while it is down") == (
        "PFJNB01 holds PFJNB01:119 alone: at risk while it is down"
    )
    assert f.held_alone_text("A", 3, "A:1-3", "until another replica holds it") == (
        "A holds A:1-3 (3 CNs) alone: at risk until another replica holds it"
    )
    assert f.held_alone_text("A", 0, "", "while it is down") == ""
    replicas = pd.DataFrame({"at_risk_count": [1, None, 2]})
    assert f.at_risk_total(replicas) == 3 and f.at_risk_total(pd.DataFrame({"unique_count": [5]})) == 0


def test_lacks_has_two_parts_and_in_sync_never_hides_them() -> None:
    row = {
        "lacks_count": 7,
        "not_told_count": 4,
        "missing_count": 3,
        "lacks_cnset": "PFDUB01:61,67-72",
        "missing_cnset": "PFDUB01:61,67,71",
        "not_told_cnset": "PFDUB01:68-70,72",
    }
    lacks = f.Lacks.of(row)
    assert (lacks.total, lacks.known, lacks.not_told) == (7, 3, 4)
    assert lacks.known_cnset == "PFDUB01:61,67,71" and lacks.not_told_cnset == "PFDUB01:68-70,72"
    assert f.lacks_summary(lacks) == "7 CNs: 3 known missing, 4 not told yet"
    assert f.sync_text("overdue", lacks) == "overdue, lacks 7 CNs: 3 known missing, 4 not told yet"
    told = f.Lacks.of({"lacks_count": 1, "not_told_count": 1, "missing_count": 0})
    assert f.sync_text("in_sync", told) == "in sync (no backfill entry), lacks 1 CN: not told yet"
    assert (
        f.sync_suffix("in_sync", told, store_down=True) == ", lacks 1 CN: not told yet"
    )  # "in sync (store down)"
    assert (
        f.sync_text("in_sync", f.Lacks.of({"lacks_count": 0, "not_told_count": 0, "missing_count": 0}))
        == "in sync"
    )
    assert f.sync_text(
        "backfilling", f.Lacks.of({"lacks_count": 3, "not_told_count": 0, "missing_count": 3})
    ) == ("backfilling, lacks 3 CNs, all known missing")
    # a run published before lacks_count: known missing only
    old = f.Lacks.of({"missing_count": 2, "missing_cnset": "A:1-2"})
    assert (old.total, old.known, old.not_told, old.cnset) == (2, 2, 0, "A:1-2")
    assert f.not_told_text("PFDUB02", 4, "PFDUB01:68-70,72") == (
        "4 it has not been told of (PFDUB01:68-70,72): they arrive, or PFDUB02 learns of them, with the next message "
        "from a store that holds them"
    )


def test_outages_newest_first_over_or_still_down() -> None:
    periods = pd.DataFrame(
        {
            "store": ["PFSIN02", "PFJNB02"],
            "down_at": [T("2026-11-03T06:00:00Z"), T("2026-11-07T00:00:00Z")],
            "up_at": [T("2026-11-05T08:00:00Z"), pd.NaT],
        }
    )
    rows = f.outage_rows(periods, AS_OF)
    assert list(rows["store"]) == ["PFJNB02", "PFSIN02"]
    assert rows.loc[1, "text"] == "down 50 h, Tue 11-03 06:00 to Thu 11-05 08:00 (UTC)"
    assert rows.loc[0, "text"] == "down since Sat 11-07 00:00 (UTC), still down at the as-of (47 h 59 min)"
    assert list(rows["to"]) == ["still down", "2026-11-05 08:00:00Z"]
    assert list(rows["down_for"]) == ["47 h 59 min so far", "50 h"]
    assert bool(rows.loc[0, "still_down"]) and not bool(rows.loc[1, "still_down"])
    assert f.outage_rows(periods.iloc[0:0], AS_OF).empty
    assert f.outage_duration(40 * 60) == "40 min" and f.outage_duration(2.5 * 3600) == "2 h 30 min"
    assert f.short_time(None) == "" and f.outage_text(None, None, AS_OF) == ""


def test_the_glossary_tells_belief_from_what_is_so() -> None:
    for term in ("believed-unique", "really-unique", "content-at-risk", "lacks", "missing", "down-period"):
        assert term in f.GLOSSARY
    assert "never a store's belief" in f.GLOSSARY["content-at-risk"][1]
    assert (
        "A store's belief" in f.GLOSSARY["believed-unique"][1]
        and "What is so" in f.GLOSSARY["really-unique"][1]
    )
    lacks = f.GLOSSARY["lacks"][1]
    assert "Known missing" in lacks and "Not told yet" in lacks
