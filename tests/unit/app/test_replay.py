"""The folder page replayed at a step: entries, replicas and the step's line derived from the
published tables (state_history, backfill_entries, backfill_requests, replicas)."""

from __future__ import annotations

from itertools import pairwise

import pandas as pd
import pytest

from pfscope.app import figures as f
from pfscope.app.data import RunData, find_run
from pfscope.spark_jobs.model.cnset import CNSet
from tests.published_runs import published


def ts(text: str) -> pd.Timestamp:
    return pd.Timestamp(text, tz="UTC")


def history(rows: list[tuple[str, str, str, str, str]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["observer", "subject", "at", "cnset", "cause"]).assign(
        at=lambda d: pd.to_datetime(d["at"], utc=True),
        fid="1-2",
        derived=False,
        cnset_count=lambda d: [CNSet.parse(t).count() for t in d["cnset"]],
    )


HISTORY = history(
    [
        ("A", "A", "2026-11-02T01:00:00Z", "A:1-3", "change"),
        ("B", "A", "2026-11-02T01:10:00Z", "A:1-3", "<m1@X>"),
        ("B", "B", "2026-11-02T01:10:00Z", "", "change"),
        ("B", "B", "2026-11-02T02:00:00Z", "A:1-2", "<m2@X>"),
        ("B", "B", "2026-11-02T03:00:00Z", "A:1-3", "<m3@X>"),
    ]
)
ENTRIES = pd.DataFrame(
    {
        "entry_id": ["B/1-2/1"],
        "observer": ["B"],
        "fid": ["1-2"],
        "opened_at": [ts("2026-11-02T01:10:00Z")],
        "opened_by": ["<m1@X>"],
        "cnset_opened": ["A:1-3"],
        "cnset_opened_count": [3],
        "cnset_remaining": [""],
        "cnset_remaining_count": [0],
        "locality": ["local"],
        "new_replica": [True],
        "state": ["satisfied"],
        "closed_at": [ts("2026-11-02T03:00:00Z")],
        "requests": [2],
        "last_request_at": [ts("2026-11-02T02:40:00Z")],
        "next_due_at": [pd.NaT],
    }
)
REQUESTS = pd.DataFrame(
    {
        "entry_id": ["B/1-2/1", "B/1-2/1"],
        "observer": ["B", "B"],
        "fid": ["1-2", "1-2"],
        "attempt": [1, 2],
        "at": [ts("2026-11-02T01:25:00Z"), ts("2026-11-02T02:40:00Z")],
        "kind": ["observed", "observed"],
        "due_at": [ts("2026-11-02T01:25:00Z"), ts("2026-11-02T02:40:00Z")],
    }
)
REPLICAS = pd.DataFrame(
    {
        "store": ["A", "B"],
        "fid": ["1-2", "1-2"],
        "health": ["in_sync", "in_sync"],
        "open_entries": [0, 0],
        "missing_count": [0, 0],
        "missing_cnset": ["", ""],
        "unique_count": [0, 0],
        "unique_cnset": ["", ""],
        "next_status_at": [pd.NaT, pd.NaT],
        "delete_pending_since": [pd.NaT, pd.NaT],
        "deleted_at": [pd.NaT, pd.NaT],
    }
)


def at(text: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    cells = f.cells_at(HISTORY, ts(text))
    entries = f.entries_at(ENTRIES, REQUESTS, cells, ts(text))
    return entries, f.replicas_at(REPLICAS, entries, cells, ts(text), ["A", "B"])


def test_an_entry_replays_open_then_overdue_then_satisfied() -> None:
    assert at("2026-11-02T01:05:00Z")[0].empty  # not opened yet
    e, r = at("2026-11-02T01:30:00Z")
    assert e.loc[0, "state"] == "open" and e.loc[0, "requests"] == 1 and pd.isna(e.loc[0, "closed_at"])
    assert e.loc[0, "cnset_remaining"] == "A:1-3" and e.loc[0, "next_due_at"] == ts("2026-11-02T02:40:00Z")
    assert r.set_index("store").loc["B", "health"] == "backfilling"
    assert r.set_index("store").loc["B", "missing_count"] == 3
    e, r = at("2026-11-02T02:45:00Z")  # two requests, A:1-2 arrived: A:3 remains
    assert e.loc[0, "requests"] == 2 and e.loc[0, "cnset_remaining"] == "A:3"
    assert (
        r.set_index("store").loc["B", "health"] == "overdue"
        and r.set_index("store").loc["B", "open_entries"] == 1
    )
    e, r = at("2026-11-02T03:00:00Z")
    assert e.loc[0, "state"] == "satisfied" and list(r["health"]) == ["in_sync", "in_sync"]
    assert list(r["missing_count"]) == [0, 0]
    assert r["unique_count"].isna().all() and r["next_status_at"].isna().all()  # not published at a past step


def test_the_hierarchys_unique_cns_replay_by_the_models_rule() -> None:
    """1-1: every store is on the list at every time, so unique CNs at a step are the store's own
    row minus the other rows of its state table then; any other folder's are left blank."""
    h = HISTORY.assign(fid="1-1")
    reps = REPLICAS.assign(fid="1-1")
    for when, want in [
        ("2026-11-02T01:05:00Z", {"A": "A:1-3", "B": ""}),  # B has no row yet
        ("2026-11-02T02:00:00Z", {"A": "A:1-3", "B": ""}),  # A has no row of B: all A's own
        ("2026-11-02T03:00:00Z", {"A": "A:1-3", "B": ""}),
    ]:
        cells = f.cells_at(h, ts(when))
        entries = f.entries_at(ENTRIES.iloc[0:0], REQUESTS.iloc[0:0], cells, ts(when))
        r = f.replicas_at(reps, entries, cells, ts(when), ["A", "B"], every_store=True).set_index("store")
        assert r["unique_cnset"].to_dict() == want
        assert r["unique_count"].to_dict() == {k: CNSet.parse(v).count() for k, v in want.items()}
    two = history(
        [
            ("A", "A", "2026-11-02T01:00:00Z", "A:1-3", "change"),
            ("A", "B", "2026-11-02T01:30:00Z", "A:1-2;B:1", "<m@B>"),
            ("B", "B", "2026-11-02T01:20:00Z", "A:1-2;B:1", "change"),
        ]
    ).assign(fid="1-1")
    cells = f.cells_at(two, ts("2026-11-02T02:00:00Z"))
    r = f.replicas_at(
        reps, ENTRIES.iloc[0:0], cells, ts("2026-11-02T02:00:00Z"), ["A", "B"], every_store=True
    ).set_index("store")
    assert (
        r.loc["A", "unique_cnset"] == "A:3" and r.loc["A", "unique_count"] == 1
    )  # B is believed to hold A:1-2
    assert r["next_status_at"].isna().all()  # never replayed (receipts of held changes leave no row)


def test_slider_positions_are_seconds_since_the_first_change_then_the_as_of() -> None:
    times = f.history_times(HISTORY)
    assert f.slider_positions(times, ts("2026-11-02T05:00:00Z")) == [0.0, 600.0, 3600.0, 7200.0, 14400.0]
    # the as-of at the last change: put just after it, so the two stops stay apart
    assert f.slider_positions(times, ts("2026-11-02T03:00:00Z"))[-2:] == [7200.0, 7200.0 + 7200 / 50]
    assert f.slider_positions(times[:1], None) == [0.0, 1.0]
    assert f.slider_positions([], None) == []
    positions = f.slider_positions(times, ts("2026-11-02T05:00:00Z"))
    assert [f.position_index(v, positions) for v in (0, 600.0004, 3600, 14400)] == [0, 1, 2, 4]
    assert f.position_index(601, positions) is None and f.position_index("x", positions) is None
    assert f.position_index(None, positions) is None and f.position_index(float("nan"), positions) is None


def test_slider_labels_keep_apart_and_as_of_is_last() -> None:
    texts = ["2026-11-02T01:00:00Z", "2026-11-02T01:10:00Z", "2026-11-02T02:00:00Z", "2026-11-02T03:00:00Z"]
    positions = [0.0, 600.0, 3600.0, 7200.0, 14400.0]
    assert f.slider_labels(positions, texts, 1 / 8) == [
        "11-02 01:00",
        "",
        "11-02 02:00",
        "11-02 03:00",
        "as of",
    ]
    # within 1/8 of the end: no label (it would touch "as of")
    assert f.slider_labels([0.0, 95.0, 100.0], texts[:2], 1 / 8) == ["11-02 01:00", "", "as of"]
    labelled = [
        i for i, x in enumerate(f.slider_labels([float(i) for i in range(101)], [texts[0]] * 100, 1 / 8)) if x
    ]
    assert len(labelled) == 8 and all(b - a >= 12.5 for a, b in pairwise(labelled))


def test_a_step_says_who_learned_what_from_which_message() -> None:
    lines = f.step_changes(HISTORY, ts("2026-11-02T01:10:00Z"))
    assert lines == [
        "B learned that A holds A:1-3 (from message <m1@X>)",
        "B's own content became ∅ (a change)",
    ]
    assert f.step_changes(HISTORY, ts("2026-11-02T01:11:00Z")) == []


def test_ticks_are_spaced_by_time_not_by_event() -> None:
    times = f.history_times(HISTORY)
    assert f.time_ticks(times) == pytest.approx([0.0, 1 / 12, 0.5, 1.0])
    assert f.time_ticks(times, ts("2026-11-02T05:00:00Z")) == pytest.approx([0.0, 1 / 24, 0.25, 0.5])
    assert f.time_ticks([]) == [] and f.time_ticks(times[:1]) == [0.0]


@pytest.mark.parametrize("scenario", ["worked-example", "demo"])
def test_replayed_at_the_as_of_time_every_entry_and_replica_equals_the_published_row(scenario: str) -> None:
    data = RunData(find_run(published(scenario)))
    as_of = data.summary()["as_of"]
    entries, requests = data.table("backfill_entries"), data.table("backfill_requests")
    checked, hierarchy = 0, False
    for fid in sorted(set(entries["fid"]) | set(data.replicas()["fid"]))[:80]:
        cells = f.cells_at(data.state_history(fid), as_of)
        published_e = entries[entries["fid"] == fid].set_index("entry_id")
        mine = f.entries_at(published_e.reset_index(), requests[requests["fid"] == fid], cells, as_of)
        assert sorted(mine["entry_id"]) == sorted(published_e.index)
        for r in mine.to_dict("records"):
            p = published_e.loc[r["entry_id"]]
            assert (r["state"], r["requests"]) == (p["state"], int(p["requests"] or 0))
            assert CNSet.parse(r["cnset_remaining"] or "") == CNSet.parse(p["cnset_remaining"] or "")
            assert (pd.isna(r["next_due_at"]) and pd.isna(p["next_due_at"])) or r["next_due_at"] == p[
                "next_due_at"
            ]
            checked += 1
        reps = data.replicas(fid=fid)
        folder = data.folder(fid) or {}
        again = f.replicas_at(reps, mine, cells, as_of, folder.get("replicas", []), every_store=fid == "1-1")
        assert list(again["health"]) == list(reps["health"])
        assert list(again["missing_count"]) == list(reps["missing_count"].fillna(0).astype(int))
        assert list(again["open_entries"]) == list(reps["open_entries"].fillna(0).astype(int))
        for what_is_so in ("lacks_count", "not_told_count", "really_unique_count"):  # by the model's rules
            assert list(again[what_is_so]) == list(reps[what_is_so].astype(int)), (fid, what_is_so)
        if fid == "1-1":  # the hierarchy's unique CNs replay (every store is always on its list)
            assert list(again["unique_count"]) == list(reps["unique_count"].fillna(0).astype(int))
            assert [CNSet.parse(t or "") for t in again["unique_cnset"]] == [
                CNSet.parse(t or "") for t in reps["unique_cnset"]
            ]
            hierarchy = True
    assert checked > 0 and hierarchy


def test_a_long_history_keeps_the_slider_under_dashs_500_marks() -> None:
    positions = [float(i) for i in range(1600)] + [1700.0]
    picked = f.slider_mark_indices(positions, keep=[3, 1599])
    assert len(picked) <= 500 and picked[0] == 0 and picked[-1] == 1600 and {3, 1599} <= set(picked)
    marks = [positions[i] for i in picked]
    assert all(min(abs(p - m) for m in marks) <= 1700 / 480 for p in positions)  # every stop has a mark near
    short = [0.0, 5.0, 10.0, 20.0]
    assert f.slider_mark_indices(short) == [0, 1, 2, 3]  # a short history: every stop
    assert f.slider_mark_indices([]) == []


def test_the_list_at_a_step_is_the_last_change_by_then_and_the_topologys_before() -> None:
    import pandas as pd

    from pfscope.app.figures import list_at

    T = pd.Timestamp
    lists = pd.DataFrame(
        [
            {"fid": "1-2", "at": pd.NaT, "seq": None, "replicas": ["A", "B"]},
            {"fid": "1-2", "at": T("2026-11-03T10:00:00Z"), "seq": 7, "replicas": ["A", "B", "C"]},
            {"fid": "1-2", "at": T("2026-11-03T10:00:00Z"), "seq": 9, "replicas": ["A", "C"]},
        ]
    )
    assert list_at(lists, T("2026-11-02T00:00:00Z")) == ["A", "B"]
    assert list_at(lists, T("2026-11-03T10:00:00Z")) == ["A", "C"]  # the later line of the same time
    assert list_at(lists.iloc[0:0], T("2026-11-03T10:00:00Z")) is None


def test_a_replica_replayed_whole_takes_its_lifecycle_and_next_status_from_its_history() -> None:
    import pandas as pd

    from pfscope.app.figures import replicas_from_history

    T = pd.Timestamp
    cells = pd.DataFrame(
        [
            {"observer": "A", "subject": "A", "cnset": "A:1-5"},
            {"observer": "A", "subject": "B", "cnset": "A:1-3"},
            {"observer": "B", "subject": "B", "cnset": "A:1-3"},
            {"observer": "B", "subject": "A", "cnset": "A:1-5"},
        ]
    )
    replicas = pd.DataFrame(
        [
            {
                "store": s,
                "fid": "1-2",
                "health": "in_sync",
                "open_entries": 0,
                "missing_count": 0,
                "missing_cnset": "",
                "unique_count": 0,
                "unique_cnset": "",
                "on_list": True,
                "delete_pending_since": pd.NaT,
                "deleted_at": pd.NaT,
                "next_status_at": pd.NaT,
            }
            for s in ("A", "B")
        ]
    )
    history = pd.DataFrame(
        [
            {
                "store": "A",
                "fid": "1-2",
                "at": T("2026-11-02T01:00:00Z"),
                "on_list": True,
                "lifecycle": "active",
                "status_due": T("2026-11-03T12:15:00Z"),
            },
            {
                "store": "A",
                "fid": "1-2",
                "at": T("2026-11-02T05:00:00Z"),
                "on_list": False,
                "lifecycle": "delete_pending",
                "status_due": T("2026-11-03T12:15:00Z"),
            },
            {
                "store": "B",
                "fid": "1-2",
                "at": T("2026-11-02T01:00:00Z"),
                "on_list": True,
                "lifecycle": "active",
                "status_due": T("2026-11-02T12:15:00Z"),
            },
        ]
    )
    entries = pd.DataFrame(columns=["observer", "state", "requests"])
    at = T("2026-11-02T18:00:00Z")
    got = replicas_from_history(replicas, entries, cells, at, ["B"], history, every_store=False).set_index(
        "store"
    )
    assert got.loc["A", "health"] == "delete_pending" and got.loc["A", "delete_pending_since"] == T(
        "2026-11-02T05:00:00Z"
    )
    assert got.loc["A", "unique_cnset"] == "A:4-5" and got.loc["A", "unique_count"] == 2  # B holds only 1-3
    assert got.loc["A", "next_status_at"] == T("2026-11-03T12:15:00Z")
    assert pd.isna(got.loc["B", "next_status_at"])  # due 12:15, before the step: none pending
    assert got.loc["B", "missing_cnset"] == "" and not got.loc["A", "on_list"]
