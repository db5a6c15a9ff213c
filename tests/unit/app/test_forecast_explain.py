"""One replica's forecast explained: its requests in order with the transits they used (the pair's
own, or the play's fallback, called as the play calls it), its sources, what blocks it and what
would unblock it, and why a replica has no forecast."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pandas as pd

from pfscope.app.figures import forecast_explain as fx
from pfscope.spark_jobs.model.cnset import CNSet
from pfscope.spark_jobs.model.forecast.folder import blocked_by
from pfscope.spark_jobs.model.forecast.world import Transits
from pfscope.spark_jobs.model.timeutil import parse_ts

T = pd.Timestamp
AS_OF = T("2026-11-08T23:59:59Z")

STORES = pd.DataFrame(
    {
        "store": ["PFRED01", "PFRED02", "PFDUB01", "PFSIN01", "PFJNB01"],
        "server": ["EXRED01", "EXRED02", "EXDUB01", "EXSIN01", "EXJNB01"],
        "site": ["Redmond", "Redmond", "Dublin", "Singapore", "Johannesburg"],
        "version": ["2003"] * 5,
    }
)
TRANSITS = pd.DataFrame(
    {
        "sender": ["PFRED01", "PFDUB01", "PFRED02", "PFDUB01"],
        "recipient": ["PFDUB01", "PFRED01", "PFRED01", "PFSIN01"],
        "messages": [40, 38, 90, 12],
        "median_transit_s": [600.0, 840.0, 60.0, 1200.0],
        "longest_transit_s": [900.0, 7200.0, 120.0, 1500.0],
    }
)
#: candidates as the run states them: Redmond-Dublin 10, Dublin-Singapore 15, Johannesburg no affinity
CANDIDATES = pd.DataFrame(
    {
        "observer": ["PFRED01", "PFDUB01", "PFDUB01", "PFSIN01", "PFRED01", "PFRED01", "PFJNB01"],
        "candidate": ["PFDUB01", "PFRED01", "PFSIN01", "PFDUB01", "PFRED02", "PFJNB01", "PFRED01"],
        "cost": [10, 10, 15, 15, 0, None, None],
    }
)
REQUESTS = pd.DataFrame(
    {
        "entry_id": ["PFRED01/1-2A43/3", "PFRED01/1-2A43/2", "PFSIN01/1-2A43/1", "PFRED01/1-2A43/2"],
        "observer": ["PFRED01", "PFRED01", "PFSIN01", "PFRED01"],
        "fid": ["1-2A43"] * 4,
        "attempt": [1, 2, 1, 1],
        "due_at": [
            T("2026-11-09T06:00:00Z"),
            T("2026-11-10T00:00:00Z"),
            T("2026-11-09T01:00:00Z"),
            T("2026-11-09T06:00:00Z"),
        ],
        "source": ["PFDUB01", "PFSIN01", "PFDUB01", "PFDUB01"],
        "cnset": ["PFDUB01:5", "PFDUB01:6", "PFDUB01:5-6", "PFDUB01:6"],
        "cnset_count": [1, 1, 2, 1],
        "answered_at": [T("2026-11-09T06:30:00Z"), None, T("2026-11-09T01:40:00Z"), None],
        "outcome": ["answered", "answered: the source held none of them", "answered", "reply lost"],
    }
)


def test_a_replicas_requests_in_the_order_they_go_out_with_the_transits_there_and_back() -> None:
    mine = fx.replica_requests(REQUESTS, "PFRED01")
    assert list(zip(mine["entry_id"], mine["attempt"], strict=True)) == [
        ("PFRED01/1-2A43/2", 1),
        ("PFRED01/1-2A43/3", 1),
        ("PFRED01/1-2A43/2", 2),
    ]
    pairs = fx.pairs_used(mine, "PFRED01", ["PFDUB01", "PFRED02"])
    assert pairs == [
        ("PFRED01", "PFDUB01"),
        ("PFDUB01", "PFRED01"),
        ("PFRED01", "PFSIN01"),
        ("PFSIN01", "PFRED01"),
        ("PFRED02", "PFRED01"),
    ]
    assert fx.pairs_without_row(TRANSITS, pairs) == [("PFRED01", "PFSIN01"), ("PFSIN01", "PFRED01")]
    costs = fx.site_costs(CANDIDATES, STORES)
    used = fx.transit_rows(TRANSITS, pairs, fx.topology_of(STORES, costs), fx.unknown_costs(STORES, costs))
    rows = fx.request_rows(REQUESTS, "PFRED01", used)
    assert list(rows.columns) == fx.REQUEST_COLUMNS
    first = rows.iloc[0]
    assert (first["there"], first["back"]) == ("10 min (longest 15 min)", "14 min (longest 2 h 0 min)")
    # PFRED01 -> PFSIN01 has no row: the play's fallback; no candidate states Redmond-Singapore's cost
    # (taken as no affinity) and no pair at no affinity has a row: the lower middle of all pairs
    last = rows.iloc[2]
    assert last["source"] == "PFSIN01" and last["there"] == "10 min (longest 15 min)"


def test_a_pair_without_a_row_takes_the_plays_fallback_and_says_so() -> None:
    costs = fx.site_costs(CANDIDATES, STORES)
    assert costs[("Redmond", "Dublin")] == 10 and costs[("Dublin", "Singapore")] == 15
    assert costs[("Redmond", "Johannesburg")] is None and ("Redmond", "Redmond") not in costs
    topo = fx.topology_of(STORES, costs)
    unknown = fx.unknown_costs(STORES, costs)
    assert ("Redmond", "Singapore") in unknown and ("Redmond", "Dublin") not in unknown
    pairs = [("PFRED01", "PFDUB01"), ("PFSIN01", "PFDUB01"), ("PFRED02", "PFRED02"), ("PFRED01", "PFSIN01")]
    used = fx.transit_rows(TRANSITS, pairs, topo, unknown).set_index(["sender", "recipient"])
    # the values are the play's own (Transits.typical on the same rows and costs)
    table = Transits.from_rows(TRANSITS.to_dict("records"))
    for pair in pairs:
        assert used.loc[pair, "median_s"] * 1e6 == table.typical(topo, *pair)
        assert used.loc[pair, "longest_s"] * 1e6 == table.typical(topo, *pair, longest=True)
    assert used.loc[("PFRED01", "PFDUB01"), "basis"] == (
        "its own: 40 messages PFDUB01 processed from PFRED01 by the as-of"
    )
    # Singapore-Dublin, cost 15: the one pair at that cost (PFDUB01 -> PFSIN01)
    same = used.loc[("PFSIN01", "PFDUB01")]
    assert same["median"] == "20 min" and same["basis"].startswith(
        "no message from PFSIN01 processed by PFDUB01 by the as-of: the lower middle of the pairs at "
        "the same site cost (15)"
    )
    # within a site: the one same-site pair (PFRED02 -> PFRED01)
    assert used.loc[("PFRED02", "PFRED02"), "median"] == "1 min"
    assert "(0, the same site)" in used.loc[("PFRED02", "PFRED02"), "basis"]
    # Redmond-Singapore: no candidate states its cost, and no pair at "no affinity" has a row
    lone = used.loc[("PFRED01", "PFSIN01")]
    assert "the lower middle of all pairs" in lone["basis"] and "none states" in lone["basis"]
    assert "Redmond-Singapore" in lone["basis"] and "may differ" in lone["basis"]
    # without the costs, a pair without a row is unknown, never guessed
    blind = fx.transit_rows(TRANSITS, [("PFRED01", "PFSIN01")])
    assert blind.iloc[0]["basis"] == "unknown" and blind.iloc[0]["median"] == ""
    # no transit in the log at all: an hour
    empty = fx.transit_rows(TRANSITS.iloc[0:0], [("PFRED01", "PFDUB01")], topo, unknown)
    assert (
        empty.iloc[0]["median"] == "1 h 0 min"
        and empty.iloc[0]["basis"] == "no transit in the log at all: an hour"
    )


def test_the_sources_say_how_they_bring_the_cns_and_their_transit() -> None:
    used = fx.transit_rows(TRANSITS, [("PFDUB01", "PFRED01"), ("PFRED02", "PFRED01")])
    mine = fx.replica_requests(REQUESTS, "PFRED01")
    rows = fx.source_rows({"sources": ["PFDUB01", "PFRED02"]}, "PFRED01", mine, used)
    assert rows.to_dict("records") == [
        {
            "source": "PFDUB01",
            "how": "answers 2 requests of the play",
            "transit": "14 min (longest 2 h 0 min)",
        },
        {
            "source": "PFRED02",
            "how": "by mail on its way or due (a change, status message or reply it sends)",
            "transit": "1 min (longest 2 min)",
        },
    ]
    assert fx.source_rows({"sources": []}, "PFRED01", mine, used).empty


def _blocked(store: str, target: str, owned: dict[str, str], up: dict[str, bool], missing: str = "") -> str:
    """The model's own ``blocked_by`` text for a small case (duck-typed folds, play and org)."""
    folds = {s: SimpleNamespace(owned=CNSet.parse(c)) for s, c in owned.items()}
    play = SimpleNamespace(held={}, up=up, missing={store: CNSet.parse(missing)} if missing else {})
    org = SimpleNamespace(
        down_since=lambda s, _t: parse_ts("2026-11-07T00:00:00Z") if not up.get(s, True) else None
    )
    return blocked_by(store, CNSet.parse(target), cast(Any, folds), cast(Any, play), cast(Any, org), 0)


def test_each_block_the_play_writes_has_what_would_unblock_it() -> None:
    down = _blocked("PFJNB02", "PFRED01:1-4", {"PFRED01": "PFRED01:1-4"}, {"PFJNB02": False})
    only = _blocked("PFRED01", "PFJNB02:1-40", {"PFJNB02": "PFJNB02:1-40"}, {"PFJNB02": False})
    lost = _blocked("PFRED01", "PFS9:1-2", {}, {})
    never = _blocked("PFRED01", "PFDUB01:5", {"PFDUB01": "PFDUB01:5"}, {}, missing="PFDUB01:5")
    untold = _blocked("PFRED01", "PFDUB01:5", {"PFDUB01": "PFDUB01:5"}, {})
    said = {
        part: remedy
        for text in (down, only, lost, never, untold)
        for part, remedy in fx.blocks({"blocked_by": text})
    }
    assert said == {
        "PFJNB02 is down since 2026-11-07T00:00:00Z: it processes nothing until it is back": (
            "PFJNB02 coming back up: it then processes the mail held for it (what waited over 48 hours has "
            "expired) and its entries' requests go out"
        ),
        "only PFJNB02 holds PFJNB02:1-40: down since 2026-11-07T00:00:00Z": (
            "PFJNB02 coming back up: then it answers a request for PFJNB02:1-40, or tells of them"
        ),
        "no store holds PFS9:1-2: that content is lost": (
            "nothing: no replica holds PFS9:1-2 (the content is lost; only new changes make new CNs)"
        ),
        "backfill of PFDUB01:5 is never answered by a store that holds it": (
            "a request reaching a store that holds PFDUB01:5: the entry's next sources are chosen by the "
            "rules from what it believes each holds; a replica-list change or a store's status changing "
            "moves them"
        ),
        "nothing on its way tells PFRED01 of PFDUB01:5 (no change, status message or reply is due)": (
            "the folder's next change, or a status message from a store that holds PFDUB01:5: either tells "
            "PFRED01 of them, and it files a backfill entry (as in Exchange, it waits until then)"
        ),
    }
    # parts joined by "; " (a CN set's own ";" has no space), and a wording the dashboard does not know
    both = fx.blocks({"blocked_by": "only PFJNB02 holds PFJNB02:1-3;PFS1:4: down; something new"})
    assert both == [
        (
            "only PFJNB02 holds PFJNB02:1-3;PFS1:4: down",
            "PFJNB02 coming back up: then it answers a request for PFJNB02:1-3;PFS1:4, or tells of them",
        ),
        ("something new", ""),
    ]
    assert fx.blocks({"blocked_by": None}) == [] and fx.blocks({"blocked_by": ""}) == []


def test_a_replica_waiting_for_a_store_says_what_its_return_would_do_in_the_plays_words() -> None:
    """The play ends ``blocked_by`` with what the return of the stores it waits for would do
    (``unblock_text``): that is what would unblock it, not one more block; read from the row as
    Parquet gives it (an array, NaN for none)."""
    import numpy as np

    from pfscope.spark_jobs.model.forecast.folder import unblock_text

    waiting = {"waits_for": ["PFJNB02"], "after_back_s": 2779.0, "latest_after_back_s": 276250.0}
    back = unblock_text(waiting)
    assert back == (
        "in sync ~46 min after PFJNB02 is back, 3 d 4 h at the latest if its queued mail expires first "
        "or a reply is lost"
    )
    down = "PFJNB02 is down since 2026-11-07T00:00:00Z: it processes nothing until it is back"
    row = {**waiting, "waits_for": np.array(["PFJNB02"]), "blocked_by": f"{down}; {back}"}
    assert fx.back_text(row) == back
    assert fx.block_parts(row) == [down]
    assert [part for part, _ in fx.blocks(row)] == [down]
    lines = fx.summary_lines(
        {**row, "lacks_count": 3, "lacks_cnset": "PFRED01:1-3", "in_sync_at": None},
        "PFJNB02",
        "1-2A46",
        AS_OF,
    )
    assert lines[1:] == [
        "It will not be in sync until PFJNB02 is back, by the forecast (which assumes no store comes "
        f"back): {down}.",
        f"What would unblock it, by the forecast: {back}.",
    ]
    # not within the horizon even once back; and a row that waits for none has no such words
    never = {**row, "after_back_s": np.nan, "latest_after_back_s": np.nan}
    assert fx.back_text(never) == "still not in sync within 14 days once PFJNB02 is back"
    blocked = fx.summary_lines({**never, "lacks_count": 3, "in_sync_at": None}, "PFJNB02", "1-2A46", AS_OF)
    assert blocked[1].startswith("It will not catch up within 14 days, by the forecast: ")
    assert fx.back_text({"waits_for": None}) == "" and fx.back_text({"waits_for": np.array([])}) == ""


def test_the_summary_says_what_it_lacks_when_it_holds_it_and_the_bound() -> None:
    row = {
        "lacks_count": 2,
        "lacks_cnset": "PFDUB01:5-6",
        "in_sync_at": T("2026-11-09T06:30:00Z"),
        "latest_in_sync_at": T("2026-11-10T08:00:00Z"),
        "requests": 2,
        "sources": ["PFDUB01"],
        "blocked_by": None,
    }
    lines = fx.summary_lines(row, "PFRED01", "1-2A43", AS_OF)
    assert lines == [
        "At the as-of, Sun 11-08 23:59 UTC, PFRED01 lacks 2 CNs of 1-2A43: PFDUB01:5-6 (what is so, from "
        "every store's log: CNs another replica on the list holds and it does not).",
        "In sync by ~Mon 11-09 06:30 UTC (6 h 30 min after the as-of) via PFDUB01, after 2 requests of the play.",
        "At the latest Tue 11-10 08:00 UTC (1 d 8 h after the as-of), if the first reply to each entry is lost "
        "and every message takes its pair's longest transit.",
    ]
    same = fx.summary_lines(
        {**row, "latest_in_sync_at": row["in_sync_at"], "requests": 0}, "PFRED01", "1-2A43", AS_OF
    )
    assert same[1].endswith("via PFDUB01, by mail, with no request of its own.")
    assert same[2] == "At the latest Mon 11-09 06:30 UTC too: a lost reply or slow mail would not delay it."
    never = fx.summary_lines({**row, "latest_in_sync_at": None}, "PFRED01", "1-2A43", AS_OF)
    assert never[2].startswith("At the latest: not within 14 days")
    blocked = fx.summary_lines(
        {**row, "in_sync_at": None, "latest_in_sync_at": None, "blocked_by": "PFRED01 is down"},
        "PFRED01",
        "1-2A43",
        AS_OF,
    )
    assert blocked[1:] == ["It will not catch up within 14 days, by the forecast: PFRED01 is down."]


def test_a_replica_without_a_forecast_is_told_why() -> None:
    replicas = pd.DataFrame(
        {
            "store": ["PFRED01", "PFDUB01", "PFSIN01"],
            "health": ["in_sync", "delete_pending", "deleted"],
            "on_list": [True, False, False],
        }
    )
    assert fx.no_forecast_text("PFRED01", "1-2A45", replicas) == (
        "PFRED01 lacks nothing on 1-2A45 at the as-of: nothing to forecast."
    )
    assert "not on the folder's replica list" in fx.no_forecast_text("PFDUB01", "1-2A45", replicas)
    assert fx.no_forecast_text("PFSIN01", "1-2A45", replicas).endswith("is deleted: nothing to forecast.")
    assert fx.no_forecast_text("PFJNB01", "1-2A45", replicas) == (
        "PFJNB01 holds no replica of 1-2A45 in this run: nothing to forecast."
    )
