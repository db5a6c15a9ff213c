"""The pure figure and frame builders on small frames built here."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from pfscope.app import figures as f
from pfscope.app.figures.overview import down_label


def ts(text: str) -> pd.Timestamp:
    return pd.Timestamp(text, tz="UTC")


def test_health_by_store_counts_every_store_and_health() -> None:
    replicas = pd.DataFrame(
        {"store": ["A", "A", "B"], "fid": ["1-2", "1-3", "1-2"], "health": ["in_sync", "overdue", "in_sync"]}
    )
    stores = pd.DataFrame({"store": ["A", "B", "C"]})
    counts = f.health_by_store(replicas, stores)
    assert len(counts) == 3 * len(f.HEALTH_ORDER)
    got = counts.set_index(["store", "health"])["replicas"]
    assert (got["A", "in_sync"], got["A", "overdue"], got["B", "in_sync"], got["C", "in_sync"]) == (
        1,
        1,
        1,
        0,
    )
    fig = f.fig_health_by_store(counts)
    assert [t.name for t in fig.data] == [h.replace("_", " ") for h in f.HEALTH_ORDER]
    assert fig.data[0].marker.color == f.HEALTH_COLOURS["in_sync"]


def test_a_down_stores_replicas_are_one_bar_out_of_reach_with_their_last_known_health() -> None:
    replicas = pd.DataFrame(
        {
            "store": ["A", "A", "A", "B"],
            "fid": ["1-2", "1-3", "1-4", "1-2"],
            "health": ["in_sync", "backfilling", "deleted", "in_sync"],
        }
    )
    counts = f.health_by_store(replicas, pd.DataFrame({"store": ["A", "B"]}))
    fig = f.fig_health_by_store(counts, down={"A"})
    x = {t.name: dict(zip(t.y, t.x, strict=True)) for t in fig.data}
    assert x["in sync"] == {"B": 1, "A": 0} and x["backfilling"]["A"] == 0
    assert x["deleted"]["A"] == 1  # a deleted replica is deleted, down or not
    down = fig.data[-1]
    assert down.name == "store down: out of reach" and x[down.name] == {"B": 0, "A": 2}
    assert down.marker.color not in {t.marker.color for t in fig.data[:-1]} and down.marker.pattern.shape
    assert (
        down.hovertext[list(down.y).index("A")]
        == "A is down: 2 replicas out of reach; last known: 1 in sync, 1 backfilling"
    )
    assert dict(zip(fig.layout.yaxis.tickvals, fig.layout.yaxis.ticktext, strict=True)) == {
        "A": "A <b>(down)</b>",
        "B": "B",
    }
    # no store down: no such bar, plain labels
    assert [t.name for t in f.fig_health_by_store(counts).data] == [
        h.replace("_", " ") for h in f.HEALTH_ORDER
    ]
    # a store's name is text, never markup
    assert down_label("<b>x</b>", {"<b>x</b>"}) == "&lt;b&gt;x&lt;/b&gt; <b>(down)</b>"


def test_the_lag_heatmap_marks_a_down_store_and_keeps_it_when_it_draws_a_few() -> None:
    pairs = pd.DataFrame({"observer": ["A", "B", "C"], "subject": ["B", "C", "A"], "lag_count": [3, 9, 0]})
    fig = f.fig_lag_heatmap(f.lag_heatmap_frame(pairs, ["A", "B", "C"]), down={"C"})
    assert list(fig.layout.xaxis.ticktext) == list(fig.layout.yaxis.ticktext) == ["A", "B", "C <b>(down)</b>"]
    # the diagonal's own layer labels only the diagonal (the numbers show through its gaps: each
    # label is a text node plotly.js measures; the whole grid twice cost half the chart's drawing)
    assert [list(r) for r in fig.data[1].text] == [["self", "", ""], ["", "self", ""], ["", "", "self"]]
    custom = fig.data[0].customdata
    assert custom[2][0][2] == "<br>C is down: this is what it knew when it went down"
    assert custom[0][2][2] == "<br>C is down: out of reach, it sends nothing" and custom[0][1][2] == ""
    # four stores, room for two: the down store is drawn though it has the least lag
    four = f.lag_heatmap_frame(
        pd.DataFrame({"observer": ["A", "B", "D"], "subject": ["B", "A", "A"], "lag_count": [50, 40, 30]}),
        ["A", "B", "C", "D"],
    )
    assert list(f.fig_lag_heatmap(four, max_marks=4, down={"C"}).data[0].x) == ["A", "C"]


def test_worst_folders_puts_content_at_risk_then_overdue_then_missing() -> None:
    replicas = pd.DataFrame(
        {
            "store": ["A", "B", "A", "B", "A"],
            "fid": ["1-2", "1-2", "1-3", "1-3", "1-4"],
            "path": ["P2", "P2", "P3", "P3", "P4"],
            "health": ["in_sync", "backfilling", "delete_pending", "in_sync", "overdue"],
            "missing_count": [0, 40, 0, 0, 2],
            "at_risk_count": [0, 0, 5, 0, 0],
            # a store's belief is not content at risk: B believes 9 CNs of 1-2 are only there
            "unique_count": [0, 9, 5, 0, 0],
        }
    )
    entries = pd.DataFrame(
        {"fid": ["1-2", "1-4"], "opened_at": [ts("2026-11-02T00:00:00"), ts("2026-11-01T00:00:00")]}
    )
    worst = f.worst_folders(replicas, entries, ts("2026-11-03T00:00:00"))
    assert list(worst["fid"]) == ["1-3", "1-4", "1-2"]
    assert list(worst["at_risk_count"]) == [5, 0, 0]
    assert worst.set_index("fid").loc["1-4", "oldest_open_age_s"] == 2 * 86400
    # no open entries anywhere: still a frame, ages empty
    assert list(f.worst_folders(replicas, entries.iloc[0:0], ts("2026-11-03"))["fid"]) == [
        "1-3",
        "1-4",
        "1-2",
    ]


def test_lag_heatmap_frame_orders_stores_and_leaves_gaps() -> None:
    pairs = pd.DataFrame({"observer": ["A", "B"], "subject": ["B", "A"], "lag_count": [3, 0]})
    m = f.lag_heatmap_frame(pairs, ["A", "B", "C"])
    assert list(m.index) == ["A", "B", "C"] and list(m.columns) == ["A", "B", "C"]
    assert m.loc["A", "B"] == 3 and m.loc["B", "A"] == 0 and pd.isna(m.loc["A", "C"])
    fig = f.fig_lag_heatmap(m)
    assert isinstance(fig.data[0], go.Heatmap) and fig.data[0].colorscale[0][1] != ""


def history(rows: list[tuple[str, str, str, str]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "observer": o,
                "fid": "1-123",
                "subject": s,
                "at": ts(t),
                "cnset": c,
                "cnset_count": 0,
                "cause": "m",
            }
            for o, s, t, c in rows
        ]
    )


SEED_004 = history(
    [
        # PFS1 made 12-16 while PFS3 was cut off; PFS3's own row and its view of PFS1 stop at 11
        ("PFS1", "PFS1", "2026-11-02T01:00:00", "PFS1:1-16;PFS2:1-20;PFS3:1-31"),
        ("PFS1", "PFS3", "2026-11-02T01:00:00", "PFS1:1-11;PFS2:1-20;PFS3:1-31"),
        ("PFS3", "PFS3", "2026-11-02T01:00:00", "PFS1:1-11;PFS2:1-20;PFS3:1-31"),
        ("PFS3", "PFS1", "2026-11-02T01:00:00", "PFS1:1-11;PFS2:1-20;PFS3:1-30"),
        ("PFS3", "PFS1", "2026-11-02T02:00:00", "PFS1:1-11;PFS2:1-20;PFS3:1-31"),
    ]
)


def test_cells_at_takes_the_last_change_at_or_before() -> None:
    early = f.cells_at(SEED_004, ts("2026-11-02T01:30:00")).set_index(["observer", "subject"])
    assert early.loc[("PFS3", "PFS1"), "cnset"] == "PFS1:1-11;PFS2:1-20;PFS3:1-30"
    late = f.cells_at(SEED_004, ts("2026-11-02T02:00:00")).set_index(["observer", "subject"])
    assert late.loc[("PFS3", "PFS1"), "cnset"] == "PFS1:1-11;PFS2:1-20;PFS3:1-31"
    assert late.loc[("PFS3", "PFS1"), "heard_at"] == ts("2026-11-02T02:00:00")
    assert f.cells_at(SEED_004, ts("2026-11-01")).empty
    assert f.history_times(SEED_004) == [ts("2026-11-02T01:00:00"), ts("2026-11-02T02:00:00")]


def test_who_knows_what_tells_not_told_from_really_lacking() -> None:
    m = f.who_knows_what(f.cells_at(SEED_004, ts("2026-11-02T02:00:00"))).set_index(["observer", "subject"])
    # PFS3 believes PFS1 holds PFS1:1-11, PFS1 really holds 1-16: not told yet, 5 CNs behind
    assert m.loc[("PFS3", "PFS1"), "state"] == "not_told"
    assert (m.loc[("PFS3", "PFS1"), "lag_cnset"], m.loc[("PFS3", "PFS1"), "lag_count"]) == ("PFS1:12-16", 5)
    # PFS1 knows PFS3's real state, and PFS3 really lacks 12-16
    assert m.loc[("PFS1", "PFS3"), "state"] == "lacks"
    assert (
        m.loc[("PFS1", "PFS3"), "lacks_cnset"] == "PFS1:12-16" and m.loc[("PFS1", "PFS3"), "lag_count"] == 0
    )
    assert m.loc[("PFS1", "PFS1"), "state"] == "owned" and m.loc[("PFS1", "PFS1"), "last_sent_cn"] == 16


def test_who_knows_what_marks_missing_rows_unknown() -> None:
    cells = f.cells_at(SEED_004, ts("2026-11-02T02:00:00"))
    m = f.who_knows_what(cells, observers=["PFS1", "PFS2", "PFS3"]).set_index(["observer", "subject"])
    assert m.loc[("PFS2", "PFS1"), "state"] == "unknown"


def candidates(rows: list[dict]) -> pd.DataFrame:
    base = {
        "entry_id": "E",
        "attempt": 1,
        "algorithm": "2003+",
        "down": False,
        "unavailable": False,
        "preferred": False,
        "cost": 0,
        "version": "2007",
        "holds_count": 5,
        "group": None,
        "chosen": False,
    }
    return pd.DataFrame([{**base, **r} for r in rows])


def test_explain_candidates_names_the_deciding_key() -> None:
    c = candidates(
        [
            {"rank": 1, "candidate": "P", "preferred": True, "cost": 10},
            {"rank": 2, "candidate": "A", "cost": 0},
            {"rank": 3, "candidate": "B", "cost": 5},
            {"rank": 4, "candidate": "C", "cost": 5, "version": "2003"},
            {"rank": 5, "candidate": "D", "cost": 5, "version": "2003", "holds_count": 2},
            {"rank": 6, "candidate": "E", "cost": 5, "version": "2003", "holds_count": 2},
            {"rank": 7, "candidate": "F", "cost": None},
            {"rank": 8, "candidate": "G", "down": True},
        ]
    )
    why = list(f.explain_candidates(c)["decided_by"])
    assert why[0] == "first in the sort order"
    assert [w.split(":")[0] for w in why[1:]] == [
        "preferred",
        "cost",
        "version",
        "holds_count",
        "candidate",
        "cost",
        "status",
    ]


def test_explain_candidates_2000_uses_groups() -> None:
    c = candidates(
        [
            {"rank": 1, "candidate": "A", "algorithm": "2000", "group": 1},
            {"rank": 2, "candidate": "B", "algorithm": "2000", "group": 2},
        ]
    )
    assert f.explain_candidates(c)["decided_by"].iloc[1] == "search group 2 comes after group 1"


def test_entry_timeline_marks_and_the_mark_limit() -> None:
    entries = pd.DataFrame(
        [
            {
                "entry_id": f"R/1-2/{i}",
                "observer": "R",
                "fid": "1-2",
                "locality": "remote" if i % 2 else "local",
                "opened_at": ts("2026-11-02") + pd.Timedelta(hours=i),
                "cnset_opened": "A:1",
                "cnset_remaining": "",
                "state": "satisfied",
                "closed_at": ts("2026-11-03") + pd.Timedelta(hours=i),
                "requests": 1,
                "next_due_at": pd.NaT,
            }
            for i in range(30)
        ]
    )
    requests = pd.DataFrame(
        [
            {
                "entry_id": f"R/1-2/{i}",
                "observer": "R",
                "fid": "1-2",
                "attempt": 1,
                "kind": "observed" if i % 3 else "expected",
                "at": ts("2026-11-02T12:00") + pd.Timedelta(hours=i),
                "due_at": ts("2026-11-02T11:00") + pd.Timedelta(hours=i),
                "source": "S",
                "cnset": "A:1",
            }
            for i in range(30)
        ]
    )
    marks = f.entry_timeline_marks(entries, requests)
    assert set(marks["event"]) == {"opened", "request", "due", "satisfied"}
    assert len(marks) == 30 * 4
    fig, left_off = f.fig_entry_timeline(marks)
    assert left_off == 0
    names = {t.name for t in fig.data}
    assert {"request (expected)", "request (observed)", "local entry", "remote entry"} <= names
    small, left_off = f.fig_entry_timeline(marks, max_marks=60)
    assert left_off == 20  # 10 entries of 4 marks (+2 line points) fit in 60
    assert sum(len(t.x) for t in small.data if t.mode == "markers") == 40


def test_request_options_and_responders() -> None:
    requests = pd.DataFrame(
        {
            "entry_id": ["E1", "E1", ""],
            "attempt": [1, 1, 1],
            "observer": ["R", "R", "R"],
            "at": [ts("2026-11-02")] * 3,
            "kind": ["expected"] * 3,
            "source": ["B", "A", "C"],
        }
    )
    opts = f.request_options(requests)
    assert [o["value"] for o in opts] == ["E1:1"] and opts[0]["label"].endswith("→ A, B")
    resp = pd.DataFrame(
        {
            "sent_at": [ts("2026-11-02")] * 3,
            "msg": ["m"] * 3,
            "requester": ["R"] * 3,
            "responder": ["A", "B", "C"],
            "position": [1, 2, None],
            "group": ["1", "oldest", None],
            "expected": [True, True, False],
            "observed": [True, False, True],
            "should_respond": [True] * 3,
        }
    )
    assert list(f.responder_rows(resp)["agreement"]) == ["model and log name it", "model only", "log only"]


def test_partners_behind_and_requests_by_source() -> None:
    st = pd.DataFrame(
        {
            "observer": ["R"] * 4,
            "fid": ["1-2", "1-2", "1-3", "1-3"],
            "subject": ["R", "A", "R", "A"],
            "is_self": [True, False, True, False],
            "cnset": ["R:1-10", "R:1-7", "R:1-3", "R:1-3"],
            "lag_count": [None, 0, None, 2],
        }
    )
    behind = f.partners_behind(st)
    assert behind.to_dict("records") == [
        {
            "subject": "A",
            "folders_behind": 1,
            "cns_behind": 3,
            "folders": 2,
            "real_lag_count": 2,
            "derived_folders": 0,
        }
    ]
    derived = f.partners_behind(st.assign(derived=[True, True, False, False]))
    assert derived["derived_folders"].tolist() == [1]
    req = pd.DataFrame(
        {
            "source": ["A", "A", "B", ""],
            "kind": ["observed", "observed", "expected", "expected"],
            "at": [ts("2026-11-02")] * 4,
            "cnset_count": [3, 4, 1, 9],
        }
    )
    by = f.requests_by_source(req)
    assert by.to_dict("records") == [
        {"source": "A", "kind": "observed", "requests": 2, "cns": 7},
        {"source": "B", "kind": "expected", "requests": 1, "cns": 1},
    ]
    assert len(f.fig_requests_by_source(by).data) == 2


def test_formatting_and_windows() -> None:
    assert f.fmt_time(ts("2026-11-02T08:15:00")) == "2026-11-02 08:15:00Z" and f.fmt_time(pd.NaT) == ""
    assert (f.fmt_age(90061), f.fmt_age(3700), f.fmt_age(61), f.fmt_age(5)) == (
        "1 d 1 h",
        "1 h 1 min",
        "1 min",
        "5 s",
    )
    page = f.window(pd.DataFrame({"x": range(1200)}), 1000, 500)
    assert (len(page.rows), page.total, page.offset, page.rows["x"].iloc[0]) == (200, 1200, 1000, 1000)


def test_lag_heatmap_keeps_under_the_mark_limit() -> None:
    names = [f"S{i:03d}" for i in range(120)]
    pairs = pd.DataFrame(
        [
            {"observer": a, "subject": b, "lag_count": (i * 7 + j) % 13}
            for i, a in enumerate(names)
            for j, b in enumerate(names)
            if a != b
        ]
    )
    fig = f.fig_lag_heatmap(f.lag_heatmap_frame(pairs, names), max_marks=10_000)
    z = fig.data[0].z
    assert len(z) * len(z[0]) <= 10_000 and len(z) == 100
    assert "of 120" in fig.layout.title.text


def test_derived_rows_stay_derived_through_history_and_the_matrix() -> None:
    hist = SEED_004.assign(derived=[True, False, False, True, False])  # PFS3 on PFS1: derived, then read
    early = f.who_knows_what(f.cells_at(hist, ts("2026-11-02T01:30:00"))).set_index(["observer", "subject"])
    late = f.who_knows_what(f.cells_at(hist, ts("2026-11-02T02:00:00"))).set_index(["observer", "subject"])
    assert early.loc[("PFS3", "PFS1"), "derived"] and not late.loc[("PFS3", "PFS1"), "derived"]
    assert late.loc[("PFS1", "PFS1"), "derived"] and not late.loc[("PFS1", "PFS3"), "derived"]


def test_runs_without_the_derived_column_read_as_not_derived() -> None:
    assert not f.cells_at(SEED_004, ts("2026-11-02T02:00:00"))["derived"].any()
    table = pd.DataFrame(
        {
            "observer": ["A"],
            "subject": ["A"],
            "cnset": ["A:1"],
            "cnset_count": [1],
            "last_message_at": [pd.NaT],
            "last_sent_cn": [1],
        }
    )
    now = f.cells_now(table)
    assert now["derived"].tolist() == [False]
    assert f.who_knows_what(now)["derived"].tolist() == [False]


# -- backfill trend (hand-computed) ---------------------------------------------------------


def _trend_entries() -> pd.DataFrame:
    """Store A: a opens 00:00, second request 02:30, satisfied 03:00; b opens 01:00, requests at
    04:00 (attempt 2, from its rows) and 05:00 (its last), still open. Store B: c opens 02:00,
    one request, still open. Store C: no entry."""
    return pd.DataFrame(
        {
            "entry_id": ["a", "b", "c"],
            "observer": ["A", "A", "B"],
            "opened_at": [ts("2026-11-02T00:00"), ts("2026-11-02T01:00"), ts("2026-11-02T02:00")],
            "closed_at": [ts("2026-11-02T03:00"), pd.NaT, pd.NaT],
            "requests": [2, 3, 1],
            "last_request_at": [ts("2026-11-02T02:30"), ts("2026-11-02T05:00"), ts("2026-11-02T02:15")],
        }
    )


def test_overdue_since_is_the_second_request() -> None:
    entries = _trend_entries()
    attempts = pd.DataFrame(
        {
            "entry_id": ["a", "a", "b", "b", "c"],
            "attempt": [1, 2, 2, 3, 1],
            "at": [
                ts("2026-11-02T00:10"),
                ts("2026-11-02T02:30"),
                ts("2026-11-02T04:00:00.123457"),
                ts("2026-11-02T05:00"),
                ts("2026-11-02T02:15"),
            ],
        }
    )
    since = f.overdue_since(entries, attempts)
    assert list(since)[:2] == [ts("2026-11-02T02:30"), ts("2026-11-02T04:00:00.123457")]  # to the microsecond
    assert pd.isna(since.iloc[2])  # one request: not overdue
    # the second attempt left no row (no candidate): the entry's last request bounds it
    since = f.overdue_since(entries, attempts[attempts["attempt"] != 2])
    assert list(since)[:2] == [ts("2026-11-02T02:30"), ts("2026-11-02T05:00")]


def test_backfill_trend_counts_open_and_overdue_at_every_change() -> None:
    entries = _trend_entries()
    entries["overdue_at"] = [ts("2026-11-02T02:30"), ts("2026-11-02T04:00"), pd.NaT]
    trend = f.backfill_trend(entries, ["A", "B", "C"], end=ts("2026-11-02T06:00"))
    times = [ts(f"2026-11-02T{t}") for t in ("00:00", "01:00", "02:00", "02:30", "03:00", "04:00", "06:00")]
    a = trend[trend["store"] == "A"]
    assert list(a["at"]) == times
    assert list(a["open"]) == [1, 2, 2, 2, 1, 1, 1]
    assert list(a["overdue"]) == [0, 0, 0, 1, 0, 1, 1]
    b = trend[trend["store"] == "B"]
    assert list(b["open"]) == [0, 0, 1, 1, 1, 1, 1] and set(b["overdue"]) == {0}
    c = trend[trend["store"] == "C"]  # a store without entries is drawn at zero
    assert len(c) == len(times) and set(c["open"]) == set(c["overdue"]) == {0}


def test_backfill_trend_samples_evenly_when_there_are_too_many_changes() -> None:
    entries = _trend_entries()
    entries["overdue_at"] = [ts("2026-11-02T02:30"), ts("2026-11-02T04:00"), pd.NaT]
    trend = f.backfill_trend(entries, ["A"], end=ts("2026-11-02T06:00"), max_points=3)
    a = trend[trend["store"] == "A"]
    assert list(a["at"]) == [ts("2026-11-02T00:00"), ts("2026-11-02T03:00"), ts("2026-11-02T06:00")]
    assert list(a["open"]) == [1, 1, 1] and list(a["overdue"]) == [0, 0, 1]  # a closes at 03:00 itself


def test_a_lag_the_observer_holds_itself_reads_healthy_not_amber() -> None:
    cells = pd.DataFrame(
        {
            "observer": ["A", "A", "B", "B", "C", "C"],
            "subject": ["A", "B", "B", "A", "C", "A"],
            # B received C:1-2 after its last message to A; A holds C:1-2 itself. C was not told of A:2
            # and lacks it.
            "cnset": ["A:1-2;C:1-2", "B:1", "B:1;C:1-2", "A:1-2;C:1-2", "A:1;C:1-2", "A:1"],
            "cnset_count": [4, 1, 3, 4, 3, 1],
            "heard_at": [pd.NaT] * 6,
            "derived": [False] * 6,
        }
    )
    m = f.who_knows_what(cells).set_index(["observer", "subject"])
    assert m.loc[("A", "B"), "state"] == "told_later" and m.loc[("A", "B"), "lag_cnset"] == "C:1-2"
    assert m.loc[("C", "A"), "state"] == "not_told" and m.loc[("C", "A"), "lag_cnset"] == "A:2;C:1-2"
    assert f.CELL_COLOURS["told_later"] != f.CELL_COLOURS["not_told"]
    assert f.CELL_LABELS["told_later"][1] in f.GLOSSARY


def test_next_request_texts_name_each_store_by_rank_and_say_when_it_waits() -> None:
    import pandas as pd

    from pfscope.app.figures import NO_SOURCE, next_request_texts, with_next_request

    nxt = pd.DataFrame(
        [
            {"entry_id": "R/1-2/1", "rank": 2, "source": "PFS3", "cnset": "PFS2:5", "waiting": False},
            {"entry_id": "R/1-2/1", "rank": 1, "source": "PFS2", "cnset": "PFS2:1-4", "waiting": False},
            {"entry_id": "D/1-2/1", "rank": 1, "source": "PFS1", "cnset": "PFS1:7", "waiting": True},
        ]
    )
    assert next_request_texts(nxt) == {
        "R/1-2/1": "PFS2 for PFS2:1-4; PFS3 for PFS2:5",
        "D/1-2/1": "PFS1 for PFS1:7 (waits: the store is down)",
    }
    entries = pd.DataFrame(
        {"entry_id": ["R/1-2/1", "X/1-2/1", "C/1-2/1"], "state": ["open", "open", "satisfied"]}
    )
    assert with_next_request(entries, nxt)["next_request"].tolist() == [
        "PFS2 for PFS2:1-4; PFS3 for PFS2:5",
        NO_SOURCE,
        "",
    ]
    assert next_request_texts(nxt.iloc[0:0]) == {}


def test_down_text_says_since_when_and_for_how_long() -> None:
    import pandas as pd

    from pfscope.app.figures import down_text

    since, as_of = pd.Timestamp("2026-11-07T00:00:00Z"), pd.Timestamp("2026-11-08T23:59:49Z")
    assert down_text(since, as_of) == "since 2026-11-07 00:00:00Z (1 d 23 h)"
    assert down_text(None, as_of) == "" and down_text(pd.NaT, as_of) == ""


def test_an_older_runs_notice_names_the_figures_it_lacks_first_and_other_columns_after() -> None:
    from pfscope.app.figures.older_run import older_run_figures, older_run_notice

    figures = older_run_figures(
        {"replicas": ["at_risk_count", "lacks_count"], "transits": ["sender"], "summary": ["refresh"]}
    )
    assert figures[0] == "content at risk as it really is"
    assert figures[1].startswith("what each replica lacks")
    assert any("transit" in t for t in figures)
    assert figures[-1] == "other columns (summary.refresh)"
    notice = older_run_notice({"store_periods": ["store", "down_at", "up_at"]})
    assert notice is not None and "the periods stores were down" in notice


def test_cell_states_have_one_wording_in_the_glossary_and_everywhere() -> None:
    anchors = {state: anchor for state, (_, anchor) in f.CELL_LABELS.items() if anchor}
    for state, anchor in anchors.items():
        assert f.GLOSSARY[anchor][0] == f.cell_label(state)
    assert f.cell_label("told_later") == "not told, holds them" and f.cell_label("not_told") == "not told yet"
    assert f.cell_label("something_new") == "something new"
