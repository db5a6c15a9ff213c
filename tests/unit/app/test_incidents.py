"""The organisation's incidents from published tables (app/figures/incidents.py): runs, grouping,
outages, replica-list changes, overdue entries, and a 200-store week told in tens of lines."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd

from pfscope.app import figures as f
from pfscope.app.figures import incidents as inc
from pfscope.app.figures import mail

T = pd.Timestamp
AS_OF = T("2026-11-08T23:59:59Z")
H = pd.Timedelta(hours=1)


def test_span_text_says_a_day_once() -> None:
    assert f.span_text(T("2026-11-03T06:00Z"), T("2026-11-05T08:00Z")) == "Tue 11-03 06:00 to Thu 11-05 08:00"
    assert f.span_text(T("2026-11-08T00:15Z"), T("2026-11-08T05:46Z")) == "Sun 11-08 00:15 to 05:46"
    assert f.span_text(T("2026-11-08T00:15Z"), T("2026-11-08T00:15:30Z")) == "Sun 11-08 00:15"
    assert f.span_text(None, None) == ""


def test_runs_split_on_a_gap_and_on_a_long_span() -> None:
    base = T("2026-11-02T00:00Z")
    times = [base, base + 0.5 * H, base + 3 * H, base + 3.5 * H]
    assert inc.runs(times).tolist() == [0, 0, 1, 1]
    # a steady trickle every 30 min for two days is told day by day, not as one run
    trickle = [base + 0.5 * H * i for i in range(96)]
    numbers = inc.runs(trickle)
    assert numbers.max() == 1 and numbers.tolist().count(0) == 49
    assert inc.runs([]).tolist() == []


def test_keyed_runs_are_per_key_and_distinct_across_keys() -> None:
    base = T("2026-11-02T00:00Z")
    frame = pd.DataFrame(
        {"store": ["A", "B", "A", "A"], "at": [base, base, base + 0.5 * H, base + 5 * H]},
        index=[10, 11, 12, 13],
    )
    labels = inc.keyed_runs(frame, "store", "at")
    assert (
        labels[10] == labels[12] and labels[13] != labels[10] and labels[11] not in (labels[10], labels[13])
    )


def test_merge_spans_joins_overlapping_runs_of_several_stores() -> None:
    base = T("2026-11-02T00:00Z")
    spans = pd.DataFrame(
        {
            "start": [base, base + 0.5 * H, base + 10 * H],
            "end": [base + 2 * H, base + 2.5 * H, base + 11 * H],
        }
    )
    assert inc.merge_spans(spans).tolist() == [0, 0, 1]


def test_an_outage_line_says_what_it_caused_and_outages_together_are_one() -> None:
    periods = pd.DataFrame(
        {
            "store": ["PFSIN02", "PFJNB02", "S1", "S2"],
            "down_at": [
                T("2026-11-03T06:00Z"),
                T("2026-11-07T00:00Z"),
                T("2026-11-04T10:00Z"),
                T("2026-11-04T10:05Z"),
            ],
            "up_at": [T("2026-11-05T08:00Z"), pd.NaT, T("2026-11-04T12:00Z"), T("2026-11-04T11:00Z")],
        }
    )
    caused = {("PFSIN02", T("2026-11-03T06:00Z")): "31 messages sent to it while it was down expired"}
    found = inc.outage_incidents(periods, AS_OF, caused)
    assert [x.stores for x in found] == [("PFSIN02",), ("S1", "S2"), ("PFJNB02",)]
    sin, site, jnb = found
    assert sin.text == (
        "PFSIN02 down 50 h, Tue 11-03 06:00 to Thu 11-05 08:00: 31 messages sent to it while it was down expired"
    )
    assert sin.tier == "warning" and sin.end == T("2026-11-05T08:00Z") and sin.href == "/store/PFSIN02"
    assert jnb.ongoing and jnb.tier == "critical"
    assert jnb.text == "PFJNB02 down since Sat 11-07 00:00, still down at the as-of (47 h 59 min)"
    assert site.text == "2 stores down together (S1, S2)" and site.events == 2
    assert site.parts == (
        "S1 down 2 h, Wed 11-04 10:00 to 12:00",
        "S2 down 55 min, Wed 11-04 10:05 to 11:00",
    )
    assert site.end == T("2026-11-04T12:00Z")


def _lists(rows: list[tuple[str, str | None, int, list[str]]]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "fid": [r[0] for r in rows],
            "at": [T(r[1]) if r[1] else pd.NaT for r in rows],
            "seq": [r[2] for r in rows],
            "replicas": [r[3] for r in rows],
        }
    )


def test_a_list_change_is_told_against_the_list_before_it() -> None:
    lists = _lists(
        [
            ("1-2A40", None, 0, ["PFRED02", "PFRED03", "PFSIN01"]),
            ("1-2A40", "2026-11-05T10:00Z", 19656, ["PFRED03", "PFDUB01", "PFSIN01"]),
            ("1-2BFF", None, 0, ["PFSIN02", "PFRED03", "PFJNB01"]),
            ("1-2BFF", "2026-11-08T20:00Z", 38621, ["PFSIN02", "PFRED03"]),
        ]
    )
    changes = inc.list_changes(lists)
    assert changes[["fid", "added", "removed"]].to_dict("records") == [
        {"fid": "1-2A40", "added": ["PFDUB01"], "removed": ["PFRED02"]},
        {"fid": "1-2BFF", "added": [], "removed": ["PFJNB01"]},
    ]
    found = inc.list_incidents(changes, {"1-2A40": "IPM_SUBTREE\\Departments"})
    assert [x.text for x in found] == [
        "Replica list of 1-2A40 (IPM_SUBTREE\\Departments) changed: added PFDUB01; removed PFRED02",
        "Replica list of 1-2BFF changed: removed PFJNB01",
    ]
    assert found[0].href == "/folder/1-2A40" and found[0].stores == ("PFDUB01", "PFRED02")


def test_many_folders_changed_at_once_are_one_incident() -> None:
    rows: list[tuple[str, str | None, int, list[str]]] = []
    for k in range(30):
        fid = f"1-{0x10000 + k:X}"
        rows.append((fid, None, 0, ["PF0009", "PF0010", f"PF{k + 11:04d}"]))
        new = "PF0001" if k < 26 else "PF0002"
        rows.append(
            (
                fid,
                (T("2026-10-03T12:00Z") + pd.Timedelta(minutes=k)).isoformat(),
                1000 + k,
                ["PF0010", f"PF{k + 11:04d}", new],
            )
        )
    found = inc.list_incidents(inc.list_changes(_lists(rows)))
    assert len(found) == 1
    (x,) = found
    assert x.events == 30 and len(x.folders) == 30 and x.href is None
    assert x.start == T("2026-10-03T12:00Z") and x.end == T("2026-10-03T12:29Z")
    assert x.text == (
        "Replica lists of 30 folders changed: added PF0001 (26 folders), PF0002 (4 folders); "
        "removed PF0009 (30 folders)"
    )


def test_overdue_entries_in_runs_per_store_merged_when_at_the_same_time() -> None:
    base = T("2026-11-08T00:15Z")
    entries = pd.DataFrame(
        {
            "entry_id": ["R2/a/1", "R2/b/1", "R3/c/1", "R3/d/1", "D2/e/1"],
            "observer": ["R2", "R2", "R3", "R3", "D2"],
            "fid": ["a", "b", "c", "d", "e"],
            "overdue_at": [base, base + 5 * H, base + 2 * H, base + 3 * H, base + 18 * H],
            "state": ["satisfied", "satisfied", "satisfied", "open", "open"],
        }
    )
    sources = pd.DataFrame(
        {
            "entry_id": ["R2/a/1", "R2/b/1", "R3/c/1", "R3/d/1", "D2/e/1"],
            "source": ["D3", "D3", "D3", "D2", "D1"],
        }
    )
    found = inc.overdue_incidents(entries, sources)
    assert [x.stores for x in found] == [("R2", "R3"), ("D2",)]
    night, evening = found
    assert night.text == (
        "4 entries at 2 stores (R2, R3) became overdue (second request): the first request, to D3 (3 of them), "
        "D2, did not fill them; 1 still open at the as-of"
    )
    assert night.parts == (
        "R2: 2 entries, Sun 11-08 00:15 to 05:15, first asked D3 (2 of them)",
        "R3: 2 entries, Sun 11-08 02:15 to 03:15, first asked D2, D3",
    )
    assert night.events == 4 and night.tier == "warning"
    assert evening.text == (
        "1 entry of D2 became overdue (second request): the first request, to D1, did not fill it; "
        "1 still open at the as-of"
    )
    assert evening.href == "/backfill?overdue=1&observer=D2"
    done = entries.assign(state="satisfied")
    assert inc.overdue_incidents(done, sources)[1].text.endswith("none still open at the as-of")
    assert inc.overdue_incidents(entries.assign(overdue_at=pd.NaT), sources) == []


def test_first_request_sources_are_attempt_one() -> None:
    requests = pd.DataFrame(
        {
            "entry_id": ["e", "e", "e"],
            "attempt": [1, 1, 2],
            "source": ["A", "B", "C"],
            "at": [T("2026-11-02")] * 3,
        }
    )
    assert inc.first_request_sources(requests).to_dict("records") == [
        {"entry_id": "e", "source": "A"},
        {"entry_id": "e", "source": "B"},
    ]


def test_the_summary_counts_incidents_and_what_they_group() -> None:
    x = inc.Incident("outage", T("2026-11-03T06:00Z"), None, "down")
    y = inc.Incident("mail", T("2026-11-04T06:00Z"), T("2026-11-04T07:00Z"), "lost", events=40)
    found = inc.timeline([y, x], {"outage": 1, "mail": 40, "lists": 0})
    assert [i.kind for i in found.items] == ["outage", "mail"]
    assert [i.kind for i in found.newest_first()] == ["mail", "outage"]
    assert found.summary() == (
        "2 incidents, grouped from 41 events: 1 outage, 1 burst of mail never processed (40 deliveries)."
    )
    assert inc.timeline([], {}).summary() == (
        "Nothing happened in the log, up to the as-of: no store was down, no replica list changed, every message "
        "was processed, no entry became overdue."
    )


def test_what_a_run_cannot_tell_is_said_unknown_not_nothing() -> None:
    unknown = inc.unknown_kinds(["store_periods", "messages"])
    assert unknown == ("outage", "mail")
    assert inc.timeline([], {}, unknown).summary() == (
        "Nothing happened in the log, up to the as-of: no replica list changed, no entry became overdue. Unknown "
        "for this run (published by an earlier pfscope, without the tables): store down, mail never processed."
    )


def _week_of_200_stores(seed: int = 7) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """A synthetic 200-store week: steady lost mail (0.1 %), a two-hour loss window to every store,
    thousands of overdue entries spread over the week, a 30-hour outage."""
    rng = np.random.default_rng(seed)
    start = T("2026-10-01T00:00Z")
    stores = [f"PF{i:04d}" for i in range(1, 201)]
    n = 3000
    sent = start + pd.to_timedelta(rng.uniform(0, 7 * 86400, n), unit="s")
    window = start + pd.to_timedelta(4.2 * 86400 + rng.uniform(0, 7200, 2000), unit="s")
    never = pd.DataFrame(
        {
            "msg": [f"<m{i}>" for i in range(n + 2000)],
            "fid": [f"1-{i % 900:X}" for i in range(n + 2000)],
            "sender": rng.choice(stores, n + 2000),
            "type": "content",
            "sent_at": list(sent) + list(window),
            "recipient": rng.choice(stores, n + 2000),
        }
    )
    entries = pd.DataFrame(
        {
            "entry_id": [f"e{i}" for i in range(4000)],
            "observer": rng.choice(stores, 4000),
            "fid": [f"1-{i % 900:X}" for i in range(4000)],
            "overdue_at": start + pd.to_timedelta(rng.uniform(0, 7 * 86400, 4000), unit="s"),
            "state": rng.choice(["open", "satisfied"], 4000),
        }
    )
    periods = pd.DataFrame(
        {"store": ["PF0100"], "down_at": [start + 2 * 24 * H], "up_at": [start + 3 * 24 * H + 6 * H]}
    )
    return never, entries, periods


def test_a_200_store_week_reads_in_tens_of_lines_and_says_how_many_it_groups() -> None:
    never, entries, periods = _week_of_200_stores()
    as_of = T("2026-10-08T00:00Z")
    states = mail.mail_states(
        never, pd.DataFrame(columns=["sender", "recipient", "longest_transit_s"]), as_of
    )
    lost, deliveries = mail.mail_incidents(states, periods)
    overdue = inc.overdue_incidents(entries)
    found = inc.timeline(
        [*inc.outage_incidents(periods, as_of), *lost, *overdue],
        {"outage": 1, "mail": deliveries, "overdue": len(entries)},
    )
    assert deliveries == 5000
    assert 5 <= len(found.items) <= 60, Counter(x.kind for x in found.items)
    assert sum(x.events for x in found.items if x.kind == "mail") == 5000
    assert sum(x.events for x in found.items if x.kind == "overdue") == 4000
    # the loss window is one burst incident naming how many stores and deliveries
    window = [x for x in lost if x.events > 1000]
    assert len(window) == 1 and len(window[0].stores) > 150 and window[0].tier == "warning"
    assert "grouped from 9,001 events" in found.summary()
