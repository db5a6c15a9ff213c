"""What happened, read from the demo published by the real Spark job (app/history.py): every
figure of the incidents and of the outages' effects counted again here from the Parquet itself."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from pfscope.app import history
from pfscope.app.data import RunData, require_run
from tests.published_runs import published

H = pd.Timedelta(hours=1)
EXPIRY = pd.Timedelta(hours=48)


@pytest.fixture(scope="module")
def demo() -> Path:
    return published("demo")


@pytest.fixture(scope="module")
def run(demo: Path) -> RunData:
    return RunData(require_run(demo))


def _table(run: RunData, name: str) -> pd.DataFrame:
    frame = pd.read_parquet(run.run.path / name)
    for col in frame.columns:
        if str(frame[col].dtype).startswith("datetime64"):
            frame[col] = pd.to_datetime(frame[col], utc=True)
    return frame


def test_the_incidents_group_every_event_of_the_published_tables(run: RunData) -> None:
    found = history.incidents(run)
    messages = _table(run, "messages")
    never = messages[messages["processed_at"].isna()]
    lists = _table(run, "replica_lists")
    entries = _table(run, "backfill_entries")
    periods = _table(run, "store_periods")
    assert found.events == {
        "outage": len(periods),
        "lists": int(lists["at"].notna().sum()),
        "mail": len(never),
        "overdue": int((entries["requests"] >= 2).sum()),
    }
    by_kind = {k: [x for x in found.items if x.kind == k] for k in ("outage", "lists", "mail", "overdue")}
    assert sum(x.events for x in by_kind["mail"]) == len(never)
    assert sum(x.events for x in by_kind["overdue"]) == found.events["overdue"]
    assert sorted(f for x in by_kind["lists"] for f in x.folders) == sorted(
        lists.loc[lists["at"].notna(), "fid"]
    )
    assert [x.stores for x in by_kind["outage"]] == [("PFSIN02",), ("PFJNB02",)]
    assert 10 <= len(found.items) <= 40  # a week of the demo in tens of lines
    assert [x.start for x in found.items] == sorted(x.start for x in found.items)


def test_the_50_hour_outage_says_what_it_caused(run: RunData) -> None:
    (sin,) = history.outage_effects(run, "PFSIN02")
    down, up = sin.down_at, sin.up_at
    assert (down, up) == (pd.Timestamp("2026-11-03T06:00Z"), pd.Timestamp("2026-11-05T08:00Z"))
    messages = _table(run, "messages")
    held = messages[
        (messages["recipient"] == "PFSIN02") & (messages["sent_at"] >= down) & (messages["sent_at"] < up)
    ]
    expired = held[held["processed_at"].isna() & (held["sent_at"] + EXPIRY <= up)]
    assert sin.expired == expired["msg"].nunique() > 0
    entries = _table(run, "backfill_entries")
    opened = entries[(entries["observer"] == "PFSIN02") & (entries["opened_at"] >= up)]
    assert sin.reopened == int(opened["opened_by"].isin(set(held["msg"])).sum()) > 0
    requests = _table(run, "backfill_requests")
    asked = requests[(requests["source"] == "PFSIN02") & (requests["at"] >= down) & (requests["at"] < up)]
    assert sin.asked == asked["entry_id"].nunique()
    assert sin.text(run.summary()["as_of"]).startswith(
        "down 50 h, Tue 11-03 06:00 to Thu 11-05 08:00 (UTC): "
    )
    (jnb,) = history.outage_effects(run, "PFJNB02")
    replicas = _table(run, "replicas")
    assert jnb.up_at is None and jnb.at_risk == int(
        replicas.loc[replicas["store"] == "PFJNB02", "at_risk_count"].sum()
    )
    nxt = _table(run, "next_requests")
    assert jnb.waiting == nxt.loc[nxt["observer"] == "PFJNB02", "entry_id"].nunique() > 0


def test_mail_states_follow_the_rule_on_the_demo(run: RunData) -> None:
    states = history.mail_states(run)
    as_of = pd.Timestamp(run.summary()["as_of"])
    age = as_of - states["sent_at"]
    assert (states.loc[states["state"] == "expired", "sent_at"] + EXPIRY <= as_of).all()
    assert (age[states["state"] != "expired"] < EXPIRY).all()
    transit = pd.to_timedelta(states["transit_s"], unit="s")
    assert (age[states["state"] == "in transit"] < transit[states["state"] == "in transit"]).all()
    assert (age[states["state"] == "queued"] >= transit[states["state"] == "queued"]).all()
    assert set(states["state"]) == {"expired", "queued", "in transit"}


def test_a_run_published_before_the_tables_still_tells_what_it_can(demo: Path, tmp_path: Path) -> None:
    latest = json.loads((demo / "LATEST").read_text())
    old = tmp_path / "old"
    shutil.copytree(demo / latest["path"], old / "runs" / "OLD")
    (old / "LATEST").write_text(json.dumps({"run_id": "OLD", "path": "runs/OLD"}))
    for table in ("messages", "replica_lists", "store_periods"):
        shutil.rmtree(old / "runs" / "OLD" / table)
    data = RunData(require_run(old))
    found = history.incidents(data)
    assert {x.kind for x in found.items} == {"overdue"}
    assert found.unknown == ("outage", "lists", "mail")
    assert found.summary().endswith(
        "Unknown for this run (published by an earlier pfscope, without the tables): store down, replica lists "
        "changed, mail never processed."
    )
    assert history.outage_effects(data) == []


def test_a_run_without_transits_takes_the_longest_from_the_messages(
    demo: Path, run: RunData, tmp_path: Path
) -> None:
    latest = json.loads((demo / "LATEST").read_text())
    old = tmp_path / "old"
    shutil.copytree(demo / latest["path"], old / "runs" / "OLD")
    (old / "LATEST").write_text(json.dumps({"run_id": "OLD", "path": "runs/OLD"}))
    shutil.rmtree(old / "runs" / "OLD" / "transits")
    taken = history.pair_transits(RunData(require_run(old))).set_index(["sender", "recipient"])
    published = run.transits().set_index(["sender", "recipient"])
    assert len(published) > 10 and sorted(taken.index) == sorted(published.index)
    assert (taken["longest_transit_s"] - published.loc[taken.index, "longest_transit_s"]).abs().max() < 1e-6
