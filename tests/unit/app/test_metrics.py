"""``/metrics``: the exposition equals the published tables (read straight from Parquet), takes no
FID or path label, and is a fresh registry per scrape over a snapshot cached per run id."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from prometheus_client.parser import text_string_to_metric_families

from pfscope.app.data import RunData, require_run
from pfscope.app.metrics import METRIC_NAMES, REFRESH_METRIC_NAMES, exposition
from pfscope.spark_jobs.model.forecast.outcome import NOT_YET, OUTCOMES, STILL_LACKING
from tests.published_runs import published
from tests.unit.app.test_report import parquet

HEALTH = ("in_sync", "backfilling", "overdue", "delete_pending", "deleted")


def samples(text: bytes) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """name -> {sorted label pairs: value}, parsed by prometheus-client's own parser."""
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text.decode("utf-8")):
        for s in family.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


class DictCache:
    """A cache with flask-caching's get/set, that records its keys."""

    def __init__(self) -> None:
        self.store: dict[str, Any] = {}

    def get(self, key: str) -> Any:
        return self.store.get(key)

    def set(self, key: str, value: Any, timeout: int | None = None) -> bool:
        self.store[key] = value
        return True


@pytest.fixture(scope="module")
def demo() -> Path:
    return published("demo")


@pytest.fixture(scope="module")
def demo_metrics(demo: Path) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    return samples(exposition(RunData(require_run(demo))))


def by_store(metric: dict[tuple[tuple[str, str], ...], float]) -> dict[str, int]:
    return {dict(labels)["store"]: int(v) for labels, v in metric.items()}


def test_replicas_by_store_site_and_health_equal_the_replicas_table(demo: Path, demo_metrics) -> None:  # type: ignore[no-untyped-def]
    replicas = parquet(demo, "replicas")
    stores = parquet(demo, "stores").set_index("store")
    counts = replicas.groupby(["store", "health"]).size()
    got = demo_metrics["pfscope_replicas"]
    assert len(got) == len(stores) * len(HEALTH)  # every store and health, zeros included
    for labels, value in got.items():
        lab = dict(labels)
        assert lab["site"] == stores.at[lab["store"], "site"]
        assert value == counts.get((lab["store"], lab["health"]), 0)
    assert sum(got.values()) == len(replicas)


def test_open_overdue_and_at_risk_equal_the_tables(demo: Path, demo_metrics) -> None:  # type: ignore[no-untyped-def]
    stores = sorted(parquet(demo, "stores")["store"])
    entries = parquet(demo, "backfill_entries", state="open")
    replicas = parquet(demo, "replicas")
    open_n = entries.groupby("observer").size()
    overdue_n = entries[entries["requests"] >= 2].groupby("observer").size()
    # content at risk: what is so (the published at_risk_count), never a store's belief (unique_count)
    pending = replicas.groupby("store")["at_risk_count"].sum()
    assert by_store(demo_metrics["pfscope_backfill_entries_open"]) == {
        s: int(open_n.get(s, 0)) for s in stores
    }
    assert by_store(demo_metrics["pfscope_backfill_entries_overdue"]) == {
        s: int(overdue_n.get(s, 0)) for s in stores
    }
    assert by_store(demo_metrics["pfscope_content_at_risk_cns"]) == {
        s: int(pending.get(s, 0)) for s in stores
    }
    # the demo has both, so these comparisons are not all zeros
    assert sum(by_store(demo_metrics["pfscope_backfill_entries_overdue"]).values()) > 0
    assert sum(by_store(demo_metrics["pfscope_content_at_risk_cns"]).values()) > 0
    # an overdue entry means an overdue replica of that store (the health's rule, the same threshold)
    overdue_replicas = replicas[replicas["health"] == "overdue"].groupby("store").size()
    assert {s for s, n in by_store(demo_metrics["pfscope_backfill_entries_overdue"]).items() if n} == set(
        overdue_replicas.index
    )


def test_stores_up_and_the_run(demo: Path, demo_metrics) -> None:  # type: ignore[no-untyped-def]
    stores = parquet(demo, "stores")
    want = {
        (r["store"], r["site"], r["version"]): (1.0 if r["status"] == "up" else 0.0)
        for r in stores.to_dict("records")
    }
    got = {
        (d["store"], d["site"], d["version"]): v
        for d, v in ((dict(k), v) for k, v in demo_metrics["pfscope_store_up"].items())
    }
    assert got == want
    summary = parquet(demo, "summary").iloc[0]
    assert demo_metrics["pfscope_run_published"] == {(): 1.0}
    assert (
        demo_metrics["pfscope_run_as_of_timestamp_seconds"][()] == pd.Timestamp(summary["as_of"]).timestamp()
    )
    lines = {dict(k)["outcome"]: int(v) for k, v in demo_metrics["pfscope_input_lines"].items()}
    assert lines == {
        "read": summary["lines_read"],
        "accepted": summary["accepted"],
        "duplicate": summary["duplicates"],
        "rejected": summary["rejected"],
    }
    assert lines["read"] == lines["accepted"] + lines["duplicate"] + lines["rejected"]
    # the demo's second run (scripts/demo, compute's --engine auto: the replay in its own process)
    # goes on from the kept fold states of the run a day before: a refresh's figures too
    assert summary["refresh"] == "incremental" and demo_metrics["pfscope_run_incremental"] == {(): 1.0}
    assert set(demo_metrics) == set(METRIC_NAMES) | set(REFRESH_METRIC_NAMES)
    assert demo_metrics["pfscope_run_folders_from_start"] == {(): summary["folders_from_start"]}


def test_run_age_is_now_minus_the_finish_time(demo: Path) -> None:
    finished = pd.Timestamp(parquet(demo, "summary").iloc[0]["finished_at"])
    data = RunData(require_run(demo))
    for hours in (0.5, 30):
        got = samples(exposition(data, now=finished + pd.Timedelta(hours=hours)))
        assert got["pfscope_run_age_seconds"][()] == pytest.approx(hours * 3600)


def test_no_label_takes_a_fid_or_a_path(demo: Path, demo_metrics) -> None:  # type: ignore[no-untyped-def]
    names = {k for metric in demo_metrics.values() for labels in metric for k, _ in labels}
    assert names == {"store", "site", "health", "version", "outcome"}
    folders = parquet(demo, "folders")
    values = {v for metric in demo_metrics.values() for labels in metric for _, v in labels}
    assert not values & (set(folders["fid"]) | set(folders["path"]))


def test_no_published_run_is_published_zero_only() -> None:
    assert samples(exposition(None)) == {"pfscope_run_published": {(): 0.0}}


def test_snapshot_is_cached_per_run_id_and_each_scrape_is_fresh(we_data: Path) -> None:
    cache = DictCache()
    data = RunData(require_run(we_data), cache)
    t0 = pd.Timestamp("2026-12-01T00:00:00Z")
    first = exposition(data, now=t0)
    assert [k for k in cache.store if ":metrics:" in k] == [f"pfscope:{data.run_id}:metrics:"]
    second = exposition(data, now=t0 + pd.Timedelta(seconds=90))  # same snapshot, a new age
    a, b = samples(first), samples(second)
    assert b["pfscope_run_age_seconds"][()] - a["pfscope_run_age_seconds"][()] == pytest.approx(90)
    assert {k: v for k, v in a.items() if k != "pfscope_run_age_seconds"} == {
        k: v for k, v in b.items() if k != "pfscope_run_age_seconds"
    }
    # the hostile worked example's rejected lines are counted
    assert a["pfscope_input_lines"][(("outcome", "rejected"),)] > 0


def test_waiting_requests_are_the_entries_whose_next_request_waits_for_a_down_store(
    demo: Path, demo_metrics
) -> None:  # type: ignore[no-untyped-def]
    stores = parquet(demo, "stores")
    nxt = parquet(demo, "next_requests")
    waiting = nxt[nxt["waiting"]].groupby("observer")["entry_id"].nunique()
    assert by_store(demo_metrics["pfscope_backfill_requests_waiting"]) == {
        s: int(waiting.get(s, 0)) for s in sorted(stores["store"])
    }
    down = set(stores.loc[stores["status"] == "down", "store"])
    assert set(waiting.index) <= down and sum(waiting) > 0  # only a store that is down waits


def test_forecast_gauges_equal_the_forecast_table(demo: Path, demo_metrics) -> None:  # type: ignore[no-untyped-def]
    """Per store: replicas lacking CNs, those the forecast says will not catch up, and when the last
    of the others is in sync (and at the latest), from the published ``forecast`` table."""
    stores = sorted(parquet(demo, "stores")["store"])
    forecast = parquet(demo, "forecast")
    lacking = forecast.groupby("store").size()
    blocked = forecast[forecast["in_sync_at"].isna()].groupby("store").size()
    assert by_store(demo_metrics["pfscope_forecast_replicas_lacking"]) == {
        s: int(lacking.get(s, 0)) for s in stores
    }
    assert by_store(demo_metrics["pfscope_forecast_blocked_replicas"]) == {
        s: int(blocked.get(s, 0)) for s in stores
    }
    # the demo's PFJNB02 is down till the end: its replicas that lack CNs never catch up
    assert by_store(demo_metrics["pfscope_forecast_blocked_replicas"])["PFJNB02"] > 0
    last = forecast.dropna(subset=["in_sync_at"]).groupby("store")["in_sync_at"].max()
    got = {
        dict(labels)["store"]: v
        for labels, v in demo_metrics["pfscope_forecast_in_sync_timestamp_seconds"].items()
    }
    assert got == {s: pd.Timestamp(t).timestamp() for s, t in last.items()} and got
    bound = demo_metrics["pfscope_forecast_latest_in_sync_timestamp_seconds"]
    assert all(v >= got[dict(labels)["store"]] for labels, v in bound.items())


def test_the_record_by_outcome_equals_the_forecast_record(demo: Path, tmp_path: Path) -> None:
    """A run judging the demo run's forecast and record (what the next run writes): one series
    per outcome, each the record's count, zeros included."""
    import shutil

    from pfscope.spark_jobs.compute.record import write_forecast_record

    before = require_run(demo)
    copy = tmp_path / "published"
    shutil.copytree(demo, copy, symlinks=True)
    after = require_run(copy)
    shutil.rmtree(after.table_path("forecast_record"), ignore_errors=True)
    made = pd.Timestamp(RunData(before).summary()["as_of"])
    as_of = int(made.value // 1000)
    written = write_forecast_record(before.table_path("x").parent, after.table_path("x").parent, as_of + 1)
    record = parquet(copy, "forecast_record")
    # the demo's own record (its first run's forecasts), and the demo's forecasts added to it
    earlier = parquet(demo, "forecast_record")
    new = record[pd.to_datetime(record["made_at"], utc=True) == made]
    assert (
        written == len(record) == len(earlier) + len(new) and len(new) == len(parquet(demo, "forecast")) > 0
    )
    got = samples(exposition(RunData(after)))["pfscope_forecast_record_forecasts"]
    counts = record["outcome"].value_counts()
    assert {dict(labels)["outcome"]: int(v) for labels, v in got.items()} == {
        o: int(counts.get(o, 0)) for o in OUTCOMES
    }
    # the new ones judged a microsecond after they were made: the blocked still lacking, the
    # others not yet due
    fresh = new["outcome"].value_counts()
    assert set(fresh.index) <= {NOT_YET, STILL_LACKING} and fresh.get(NOT_YET, 0) > 0
