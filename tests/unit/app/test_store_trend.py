"""Backfill entries per store over time, readable at 200 stores (app/figures/store_trend.py): the
peaks per time bin, worst stores first, distinct labels, outages and overdue stretches per row."""

from __future__ import annotations

import numpy as np
import pandas as pd

from pfscope.app import figures as f
from pfscope.app.figures import store_trend as st

T = pd.Timestamp
H = pd.Timedelta(hours=1)
START = T("2026-11-02T00:00Z")
NAT = np.iinfo(np.int64).min


def _ns(*times: pd.Timestamp | None) -> np.ndarray:
    return np.array([NAT if t is None else t.value for t in times], dtype="int64")


def test_peaks_are_the_most_open_at_once_in_each_bin() -> None:
    edges = pd.DatetimeIndex([START + H * i for i in range(4)]).asi8
    # bin 0: two open at once for a moment; bin 1: one still open; bin 2: it closed at the bin's start
    start = _ns(START + 0.1 * H, START + 0.2 * H)
    stop = _ns(START + 2 * H, START + 0.3 * H)
    assert st.peaks(start, stop, edges).tolist() == [2, 1, 0]
    # a close and an open at the same time: the state just after it (one), never two
    start = _ns(START + 0.5 * H, START + 1.5 * H)
    stop = _ns(START + 1.5 * H, None)
    assert st.peaks(start, stop, edges).tolist() == [1, 1, 1]
    assert st.peaks(_ns(), _ns(), edges).tolist() == [0, 0, 0]


def _entries(rows: list[tuple[str, float, float | None, float | None]]) -> pd.DataFrame:
    def at(h: float | None) -> pd.Timestamp:
        return START + h * H if h is not None else pd.NaT

    return pd.DataFrame(
        {
            "observer": [r[0] for r in rows],
            "opened_at": [at(r[1]) for r in rows],
            "closed_at": [at(r[2]) for r in rows],
            "overdue_at": [at(r[3]) for r in rows],
        }
    )


def test_stores_come_worst_first_and_every_store_has_a_row() -> None:
    entries = _entries(
        [
            ("B", 1, None, None),
            ("B", 2, None, None),
            ("B", 3, None, None),
            ("C", 1, 20, 10),  # one overdue: worse than three open
            ("A", 5, 6, None),
        ]
    )
    periods = pd.DataFrame({"store": ["D"], "down_at": [START + 4 * H], "up_at": [pd.NaT]})
    trend = st.store_trend(entries, ["A", "B", "C", "D", "E"], periods, START + 24 * H, rows=None)
    assert trend.stores == ("C", "B", "A", "D", "E") and trend.hidden == 0
    # from the first entry's hour to the as-of, an hour a bin
    assert trend.edges[0] == START + H and trend.open_peak.shape == (5, 23) and trend.bin == H
    assert trend.open_peak[1].max() == 3 and trend.overdue_peak[0].max() == 1
    overdue = trend.overdue_peak[0].tolist()
    assert overdue[8] == 0 and overdue[9] == 1 and overdue[18] == 1 and overdue[19] == 0
    assert trend.down == (("D", START + 4 * H, None),)
    top = st.store_trend(entries, ["A", "B", "C", "D", "E"], periods, START + 24 * H, rows=2)
    # the two worst, and the store that was down: its outage is drawn on its row
    assert top.stores == ("C", "B", "D") and top.hidden == 2 and top.down == (("D", START + 4 * H, None),)


def test_bins_keep_the_cells_under_the_mark_limit() -> None:
    assert st.bin_size(pd.Timedelta(days=5), 40) == H
    assert st.bin_size(pd.Timedelta(days=7), 200) * (f.MAX_MARKS // 200) >= pd.Timedelta(days=7)
    assert st.bin_size(pd.Timedelta(days=7), 200) == 4 * H


def test_the_heatmap_at_200_stores_has_a_distinct_label_per_store_and_no_repeated_style() -> None:
    rng = np.random.default_rng(3)
    stores = [f"PF{i:04d}" for i in range(1, 201)]
    opened = rng.uniform(0, 7 * 24, 3000)
    entries = _entries(
        [
            (
                str(rng.choice(stores)),
                float(o),
                float(o + rng.uniform(1, 30)),
                float(o + 12) if rng.random() < 0.2 else None,
            )
            for o in opened
        ]
    )
    periods = pd.DataFrame({"store": ["PF0100"], "down_at": [START + 48 * H], "up_at": [START + 78 * H]})
    trend = st.store_trend(entries, stores, periods, START + 7 * 24 * H, rows=None)
    fig = st.fig_store_trend(trend, START + 7 * 24 * H).to_plotly_json()
    labels = st.row_labels(fig)
    assert len(labels) == 200 and len(set(labels)) == 200 and set(labels) == set(stores)
    heat = [t for t in fig["data"] if t["type"] == "heatmap"]
    assert len(heat) == 1 and np.asarray(heat[0]["z"]).size <= f.MAX_MARKS
    # three traces in all (cells, overdue stretches, outages), each named: no style repeats
    assert [t.get("name") for t in fig["data"]] == ["open entries", st.OVERDUE_NAME, st.DOWN_NAME]
    down = fig["data"][2]
    assert list(down["y"]) == ["PF0100"]
    # the default view: the worst 40 and the store that was down, in the same order
    top = st.store_trend(entries, stores, periods, START + 7 * 24 * H)
    assert "PF0100" not in trend.stores[: st.ROWS]
    assert top.stores == tuple(s for s in trend.stores if s in trend.stores[: st.ROWS] or s == "PF0100")
    assert top.hidden == 159


def test_markup_in_a_store_name_is_text_on_the_chart() -> None:
    entries = _entries([("<b>X</b>", 1, None, None)])
    trend = st.store_trend(entries, [], pd.DataFrame(columns=["store", "down_at", "up_at"]), START + 5 * H)
    fig = st.fig_store_trend(trend).to_plotly_json()
    assert st.row_labels(fig) == ["&lt;b&gt;X&lt;/b&gt;"]


def test_org_totals_count_every_stores_entries() -> None:
    entries = _entries([("A", 1, None, None), ("B", 2, 3, None), ("B", 2.5, None, 4)])
    totals = st.org_totals(entries, START + 5 * H)
    last = totals.iloc[-1]
    assert (int(last["open"]), int(last["overdue"])) == (2, 1)
    assert int(totals["open"].max()) == 3
    fig = st.fig_org_totals(totals).to_plotly_json()
    assert [t["name"] for t in fig["data"]] == ["open entries, all stores", "overdue entries, all stores"]
    assert st.fig_store_trend(
        st.store_trend(entries.iloc[0:0], [], pd.DataFrame(columns=["store", "down_at", "up_at"]), None)
    ).layout.annotations
