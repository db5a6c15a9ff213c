"""What is wrong, at a glance: the headline counts, the absolute lag scale, attention-first order,
the glossary and the words on screen (pure functions on small frames built here)."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pandas as pd
import plotly.colors
import pytest

from pfscope.app import figures as f

ROOT = Path(__file__).resolve().parents[3]


def ts(text: str) -> pd.Timestamp:
    return pd.Timestamp(text, tz="UTC")


def test_counts_agree_with_their_nouns() -> None:
    assert [f.plural(n, "CN") for n in (0, 1, 2, 1234)] == ["0 CNs", "1 CN", "2 CNs", "1,234 CNs"]
    assert f.plural(1, "duplicate") == "1 duplicate" and f.plural(None, "line") == "0 lines"
    assert f.plural(2, "entry", "entries") == "2 entries" and f.plural(float("nan"), "CN") == "0 CNs"


def test_flags_read_yes_or_no_never_false() -> None:
    assert [f.yes_no(v) for v in (True, False, 1, 0, None, float("nan"), pd.NA)] == [
        "yes",
        "no",
        "yes",
        "no",
        "",
        "",
        "",
    ]


def test_the_hierarchy_has_a_name_instead_of_no_path() -> None:
    assert f.folder_label("1-1", None) == "public folder hierarchy"
    assert f.folder_label("1-2", "IPM_SUBTREE\\A") == "IPM_SUBTREE\\A" and f.folder_label("1-2", None) == ""


def test_entry_ids_sort_as_numbers() -> None:
    ids = ["S/1-2/10", "S/1-2/2", "S/1-2/1", "R/1-2/3"]
    assert sorted(ids, key=f.natural_key) == ["R/1-2/3", "S/1-2/1", "S/1-2/2", "S/1-2/10"]


def test_a_down_store_does_not_claim_in_sync() -> None:
    assert f.health_text("in_sync") == "in sync"
    assert f.health_text("in_sync", store_down=True) == "in sync (store down)"
    assert f.health_text("delete_pending", store_down=True) == "delete pending"


def test_responder_groups_say_what_chose_the_store() -> None:
    assert f.responder_group_text("5") == "group 5: other site, no cost, known transit"
    assert f.responder_group_text(1.0) == "group 1: same site, backfilled from before"
    assert f.responder_group_text("oldest") == "oldest copy (fewest CNs)"
    assert f.responder_group_text(None) == "" and f.responder_group_text(float("nan")) == ""


def test_headline_counts_link_to_the_filtered_views() -> None:
    stores = pd.DataFrame({"store": ["A", "B", "C"], "status": ["up", "down", "up"]})
    replicas = pd.DataFrame(
        {
            "store": ["A", "A", "B", "C", "C"],
            "health": ["overdue", "in_sync", "overdue", "delete_pending", "delete_pending"],
            "unique_count": [0, 0, 0, 5, 1],
            # what is so: C's second replica only believes its CN is only there
            "at_risk_count": [0, 0, 0, 5, 0],
        }
    )
    entries = pd.DataFrame({"entry_id": ["e1", "e2", "e3"]})
    got = {h.key: h for h in f.headline_counts(stores, replicas, entries, 7)}
    assert [h.key for h in f.headline_counts(stores, replicas, entries, 7)] == [
        "stores-down",
        "overdue",
        "at-risk",
        "open-entries",
        "rejected",
    ]
    assert {k: h.count for k, h in got.items()} == {
        "stores-down": 1,
        "overdue": 2,
        "at-risk": 5,
        "open-entries": 3,
        "rejected": 7,
    }
    assert got["overdue"].href == "/backfill?overdue=1" and got["rejected"].href == "/rejects"
    assert got["at-risk"].href == "/replicas?at_risk=1" and got["stores-down"].href.startswith(
        "/?status=down"
    )
    assert got["stores-down"].label == "store down" and got["overdue"].label == "overdue replicas"
    quiet = f.headline_counts(stores.assign(status="up"), replicas.iloc[0:0], entries.iloc[0:0], 0)
    assert not any(h.alarm for h in quiet) and all(h.count == 0 for h in quiet)
    for h in quiet:
        assert h.term is None or h.term in f.GLOSSARY


def _colour_at(z: float, fig) -> tuple[int, int, int]:  # type: ignore[no-untyped-def]
    trace = fig.data[0]
    t = (z - trace.zmin) / (trace.zmax - trace.zmin)
    scale = [(float(a), b) for a, b in trace.colorscale]
    for (a, ca), (b, cb) in itertools.pairwise(scale):
        if a <= t <= b:
            mix = plotly.colors.find_intermediate_color(
                plotly.colors.hex_to_rgb(ca), plotly.colors.hex_to_rgb(cb), (t - a) / (b - a) if b > a else 0
            )
            return tuple(round(x) for x in mix)  # type: ignore[return-value]
    raise AssertionError(t)


def _lightness(rgb: tuple[int, int, int]) -> float:
    return (0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2]) / 255


def test_lag_heatmap_is_absolute_so_a_small_lag_stays_pale() -> None:
    small = f.lag_heatmap_frame(
        pd.DataFrame({"observer": ["A", "B"], "subject": ["B", "A"], "lag_count": [13, 2]}), ["A", "B"]
    )
    big = f.lag_heatmap_frame(
        pd.DataFrame({"observer": ["A", "B"], "subject": ["B", "A"], "lag_count": [13, 5000]}), ["A", "B"]
    )
    fig_small, fig_big = f.fig_lag_heatmap(small), f.fig_lag_heatmap(big)
    # the scale does not follow the run's maximum: 13 CNs is drawn the same in both runs, and pale
    assert (
        (fig_small.data[0].zmin, fig_small.data[0].zmax)
        == (fig_big.data[0].zmin, fig_big.data[0].zmax)
        == (0, f.LAG_ALARM)
    )
    assert _lightness(_colour_at(13, fig_small)) > 0.85
    assert _lightness(_colour_at(f.LAG_ALARM, fig_small)) < 0.45
    # the raw lag stays the data (hover, reports); the diagonal says "self"
    assert fig_small.data[0].z[0][1] == 13 and fig_small.data[0].text[0][0] == "self"
    assert fig_small.data[0].text[1][1] == "self" and fig_small.data[0].text[0][1] == "13"
    assert list(fig_small.data[0].customdata[0][1])[:2] == ["A", "B"]
    diagonal = fig_small.data[1]
    assert diagonal.z[0][0] == 1.0 and diagonal.z[0][1] is None and diagonal.showscale is False


def test_a_heatmap_click_opens_the_observer() -> None:
    assert f.lag_click_target({"x": "B", "y": "A", "customdata": ["A", "B"]}) == "/store/A#pf-behind-section"
    assert f.lag_click_target({"x": "B", "y": "A b"}) == "/store/A%20b#pf-behind-section"
    assert f.lag_click_target(None) is None


def test_the_glossary_defines_every_word_linked_to_it() -> None:
    with pytest.raises(KeyError):
        f.glossary_href("no-such-word")
    assert f.glossary_href("overdue") == "/glossary#overdue"
    assert all(re.fullmatch(r"[a-z0-9-]+", k) for k in f.GLOSSARY)
    used: set[str] = set()
    for path in (ROOT / "app").rglob("*.py"):
        text = path.read_text()
        used |= set(re.findall(r'term_link\(\s*"([a-z0-9-]+)"', text))
        used |= set(re.findall(r'with_term\([^()]*?,\s*"([a-z0-9-]+)"\)', text))
        used |= set(re.findall(r'\bterm="([a-z0-9-]+)"', text))
    assert {
        "overdue",
        "not-told",
        "really-lacks",
        "derived",
        "responder-groups",
        "unavailable",
        "delete-pending",
    } <= used
    assert used <= set(f.GLOSSARY), used - set(f.GLOSSARY)
    assert set(f.HEALTH_TERMS.values()) <= set(f.GLOSSARY)
    assert {t for _, t in f.CELL_LABELS.values() if t} <= set(f.GLOSSARY)
    # the legend does not say a state's name twice ("not told: not told yet")
    for state, meaning in f.CELL_STATES.items():
        assert not meaning.startswith(f.CELL_LABELS[state][0])


def test_backfill_rows_put_the_overdue_first_then_the_longest_open() -> None:
    as_of = ts("2026-11-08T00:00:00")
    entries = pd.DataFrame(
        {
            "entry_id": ["A/1-2/10", "A/1-2/2", "B/1-3/1", "B/1-3/2"],
            "observer": ["A", "A", "B", "B"],
            "fid": ["1-2", "1-2", "1-3", "1-1"],
            "opened_at": [
                ts("2026-11-07T16:25:00"),
                ts("2026-11-05T20:00:00"),
                ts("2026-11-07T23:00:00"),
                ts("2026-11-06T00:00:00"),
            ],
            "locality": ["local"] * 4,
            "new_replica": [False, True, False, False],
            "requests": [0, 0, 2, 3],
            "cnset_remaining_count": [1, 2, 3, 4],
            "cnset_remaining": ["A:1"] * 4,
            "next_due_at": [ts("2026-11-08T06:00:00")] * 4,
        }
    )
    folders = pd.DataFrame({"fid": ["1-1", "1-2", "1-3"], "path": [None, "P2", "P3"]})
    replicas = pd.DataFrame(
        {
            "store": ["A", "B", "B"],
            "fid": ["1-2", "1-3", "1-1"],
            "health": ["backfilling", "overdue", "overdue"],
        }
    )
    stores = pd.DataFrame({"store": ["A", "B"], "status": ["up", "down"]})
    rows = f.backfill_rows(entries, folders, as_of, replicas, stores)
    # overdue first (the longest open of them first), then by a real duration: 2 d 4 h before 7 h 35 min
    assert list(rows["entry_id"]) == ["B/1-3/2", "B/1-3/1", "A/1-2/2", "A/1-2/10"]
    assert list(rows["open_for"]) == ["2 d 0 h", "1 h 0 min", "2 d 4 h", "7 h 35 min"]
    assert list(rows["overdue"]) == ["yes", "yes", "no", "no"]
    assert list(rows["new_replica"]) == ["no", "no", "yes", "no"]
    assert list(rows["health"]) == [
        "overdue (store down)",
        "overdue (store down)",
        "backfilling",
        "backfilling",
    ]
    assert rows.loc[0, "path"] == "public folder hierarchy"
    assert rows["open_for_s"].tolist() == sorted(rows["open_for_s"].tolist()[:2], reverse=True) + sorted(
        rows["open_for_s"].tolist()[2:], reverse=True
    )


def test_hover_text_from_data_stays_text() -> None:
    entries = pd.DataFrame(
        {
            "entry_id": ["<b>E</b>/1"],
            "observer": ["<i>S</i>"],
            "locality": ["local"],
            "opened_at": [ts("2026-11-02")],
            "cnset_opened": ["A:1"],
            "state": ["open"],
            "closed_at": [pd.NaT],
            "next_due_at": [ts("2026-11-03")],
            "requests": [0],
            "cnset_remaining": ["A:1"],
        }
    )
    fig, _ = f.fig_entry_timeline(
        f.entry_timeline_marks(
            entries,
            pd.DataFrame(
                columns=["entry_id", "observer", "at", "kind", "attempt", "source", "cnset", "due_at"]
            ),
        )
    )
    hovers = [h for t in fig.data if t.hovertext is not None for h in t.hovertext]
    assert hovers and all("<b>" not in h and "<i>" not in h for h in hovers)
    assert any("&lt;i&gt;S&lt;/i&gt; · &lt;b&gt;E&lt;/b&gt;/1" in h for h in hovers)
    assert f.esc("a<b>&c") == "a&lt;b&gt;&amp;c"
