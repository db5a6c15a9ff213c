"""``/metrics``: the published run in Prometheus text exposition format, for the ops team's alerts.

The figures come from the published tables (never recomputed) and are cached per run id like the
pages; only the run's age is computed per scrape. Each scrape builds a fresh
``CollectorRegistry`` around a collector of that run's snapshot, so nothing is shared between
runs or requests. No label ever takes a FID or a folder path: an organisation's 100,000 folders
would explode the number of series. Labels are stores, sites, versions, health states and input
outcomes only.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
from flask import Flask, Response
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from pfscope.app.chain import read_record
from pfscope.app.data import RunData
from pfscope.app.figures import at_risk_cns
from pfscope.app.runtime import current_data, settings
from pfscope.spark_jobs.model.forecast.outcome import OUTCOMES
from pfscope.spark_jobs.model.rules.health import HEALTH_STATES, OVERDUE_REQUESTS

#: the ``outcome`` label of ``pfscope_input_lines`` and the summary column it reads
INPUT_OUTCOMES: tuple[tuple[str, str], ...] = (
    ("read", "lines_read"),
    ("accepted", "accepted"),
    ("duplicate", "duplicates"),
    ("rejected", "rejected"),
)

#: every metric name /metrics can expose (the alert rules' test holds the rules to these)
METRIC_NAMES: tuple[str, ...] = (
    "pfscope_run_published",
    "pfscope_replicas",
    "pfscope_backfill_entries_open",
    "pfscope_backfill_entries_overdue",
    "pfscope_content_at_risk_cns",
    "pfscope_backfill_requests_waiting",
    "pfscope_store_up",
    "pfscope_run_age_seconds",
    "pfscope_run_as_of_timestamp_seconds",
    "pfscope_input_lines",
    "pfscope_run_incremental",
    "pfscope_run_lines_new",
    "pfscope_forecast_replicas_lacking",
    "pfscope_forecast_blocked_replicas",
    "pfscope_forecast_in_sync_timestamp_seconds",
    "pfscope_forecast_latest_in_sync_timestamp_seconds",
    "pfscope_forecast_record_forecasts",
)
#: said only where ``pfscope refresh`` publishes (its ``DIR/refresh.json``, ``chain.read_record``)
CHAIN_METRIC_NAMES: tuple[str, ...] = (
    "pfscope_refresh_duration_seconds",
    "pfscope_refresh_status",
    "pfscope_refresh_timestamp_seconds",
    "pfscope_refresh_next_timestamp_seconds",
)
#: said only by an incremental run
REFRESH_METRIC_NAMES: tuple[str, ...] = (
    "pfscope_run_folders_refolded",
    "pfscope_run_folders_carried",
    "pfscope_run_lines_rejudged",
    "pfscope_run_folders_from_start",
)

#: the classic text format every Prometheus 2.x parses (the names here need none of 1.0.0's escaping)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _epoch(value: Any) -> float | None:
    if value is None or pd.isna(value):
        return None
    return float(pd.Timestamp(value).timestamp())


def snapshot(data: RunData) -> dict[str, Any]:
    """Everything /metrics says about one run, except its age: plain, picklable values.

    Per store: replicas by health (every health state, zeros included), open and overdue backfill
    entries, content at risk (what is so: ``replicas.at_risk_count``, never a store's belief), and
    the entries whose next request waits for the store (it is down).
    """
    summary = data.summary()
    stores = data.stores()
    replicas = data.table("replicas", ["store", "health", "at_risk_count"])
    entries = data.table("backfill_entries", ["observer", "requests"], filters={"state": "open"})

    site = {str(r["store"]): str(r["site"]) for r in stores.to_dict("records")}
    names = sorted(set(site) | set(replicas["store"].astype(str)))
    counts = replicas.groupby(["store", "health"]).size()
    at_risk = at_risk_cns(replicas).groupby(replicas["store"]).sum()
    requests = entries["requests"].fillna(0).astype("int64")
    open_n = entries.groupby("observer").size()
    overdue_n = entries[requests >= OVERDUE_REQUESTS].groupby("observer").size()
    forecast = data.table("forecast", ["store", "in_sync_at", "latest_in_sync_at"])
    nxt = data.table("next_requests", ["entry_id", "observer", "waiting"])
    waiting_n = nxt[nxt["waiting"].fillna(False).astype(bool)].groupby("observer")["entry_id"].nunique()
    return {
        "run_id": data.run_id,
        "as_of_s": _epoch(summary.get("as_of")),
        "finished_s": _epoch(summary.get("finished_at") or summary.get("as_of")),
        "input": {outcome: int(summary.get(column) or 0) for outcome, column in INPUT_OUTCOMES},
        "stores": [
            (str(r["store"]), str(r["site"]), str(r["version"]), str(r["status"]) == "up")
            for r in stores.to_dict("records")
        ],
        "replicas": [
            (s, site.get(s, ""), h, int(counts.get((s, h), 0))) for s in names for h in HEALTH_STATES
        ],
        "open": {s: int(open_n.get(s, 0)) for s in names},
        "overdue": {s: int(overdue_n.get(s, 0)) for s in names},
        "at_risk": {s: int(at_risk.get(s, 0)) for s in names},
        "waiting": {s: int(waiting_n.get(s, 0)) for s in names},
        "forecast": forecast_by_store(forecast, names),
        "record": {
            str(k): int(n) for k, n in data.forecast_record(["outcome"])["outcome"].value_counts().items()
        },
        "refresh": {
            "incremental": 1 if summary.get("refresh") == "incremental" else 0,
            "lines_new": summary.get("lines_new"),
            "folders_refolded": summary.get("folders_refolded"),
            "folders_carried": summary.get("folders_carried"),
            "lines_rejudged": summary.get("lines_rejudged"),
            "folders_from_start": summary.get("folders_from_start"),
        },
    }


def forecast_by_store(
    forecast: pd.DataFrame, names: list[str]
) -> dict[str, tuple[int, int, float | None, float | None]]:
    """Per store, from the run's forecast: its replicas that lack CNs, those of them the forecast
    says will not catch up within its horizon, and when the last of the others is in sync (as the
    world is assumed, and at the latest: the bound); None when none of them will."""
    out: dict[str, tuple[int, int, float | None, float | None]] = {}
    for store in names:
        mine = forecast[forecast["store"] == store]
        blocked = int(mine["in_sync_at"].isna().sum())
        out[store] = (
            len(mine),
            blocked,
            _epoch(mine["in_sync_at"].max()),
            _epoch(mine["latest_in_sync_at"].max()),
        )
    return out


class RunCollector(Collector):
    """One run's snapshot as gauges (``snap`` None: nothing is published)."""

    def __init__(self, snap: dict[str, Any] | None, now_s: float):
        self.snap = snap
        self.now_s = now_s

    def collect(self) -> Iterator[GaugeMetricFamily]:
        snap = self.snap
        yield GaugeMetricFamily(
            "pfscope_run_published",
            "1 when a run is published (LATEST readable), else 0",
            value=0 if snap is None else 1,
        )
        if snap is None:
            return
        yield from _store_gauges(snap)
        yield from _forecast_gauges(snap["forecast"])
        yield from _record_gauges(snap)
        yield from _run_gauges(snap, self.now_s)
        yield from _refresh_gauges(snap)


def _store_gauges(snap: dict[str, Any]) -> Iterator[GaugeMetricFamily]:
    """Each store's replicas by health, open, overdue and waiting backfill entries, content at risk."""
    g = GaugeMetricFamily(
        "pfscope_replicas",
        "Replicas of the store in this health state, as of the run",
        labels=["store", "site", "health"],
    )
    for store, site, health, n in snap["replicas"]:
        g.add_metric([store, site, health], n)
    yield g
    for name, key, text in (
        ("pfscope_backfill_entries_open", "open", "Open backfill entries of the store (as observer)"),
        (
            "pfscope_backfill_entries_overdue",
            "overdue",
            "Open backfill entries of the store that have had two requests or more (the first did not fill them)",
        ),
        (
            "pfscope_content_at_risk_cns",
            "at_risk",
            "CNs at risk, what is so (not the store's belief): CNs no other store on the list holds, of the "
            "store's delete-pending replicas, or of all its replicas while it is down",
        ),
        (
            "pfscope_backfill_requests_waiting",
            "waiting",
            "Open backfill entries of the store whose next request waits for it to come back up (a down store "
            "sends nothing)",
        ),
    ):
        g = GaugeMetricFamily(name, text, labels=["store"])
        for store, n in snap[key].items():
            g.add_metric([store], n)
        yield g


def _record_gauges(snap: dict[str, Any]) -> Iterator[GaugeMetricFamily]:
    """How the forecasts of the last 7 days came true, as this run judges them."""
    g = GaugeMetricFamily(
        "pfscope_forecast_record_forecasts",
        "Forecasts the runs of the last 7 days made, by how they came true as this run judges them "
        "(forecast_record): within its bounds, late, not yet due, still lacking as forecast, caught up "
        "though forecast not to",
        labels=["outcome"],
    )
    for outcome in OUTCOMES:
        g.add_metric([outcome], snap["record"].get(outcome, 0))
    yield g


def _run_gauges(snap: dict[str, Any], now_s: float) -> Iterator[GaugeMetricFamily]:
    """The stores up, the run's age and as-of, its input lines by outcome."""
    g = GaugeMetricFamily(
        "pfscope_store_up",
        "1 when the store's last status is up, else 0",
        labels=["store", "site", "version"],
    )
    for store, site, version, up in snap["stores"]:
        g.add_metric([store, site, version], 1 if up else 0)
    yield g
    if snap["finished_s"] is not None:
        yield GaugeMetricFamily(
            "pfscope_run_age_seconds",
            "Seconds since the published run finished",
            value=now_s - snap["finished_s"],
        )
    if snap["as_of_s"] is not None:
        yield GaugeMetricFamily(
            "pfscope_run_as_of_timestamp_seconds",
            "The published run's as-of time (Unix seconds)",
            value=snap["as_of_s"],
        )
    g = GaugeMetricFamily(
        "pfscope_input_lines",
        "Input lines of the run by outcome (read = the other three)",
        labels=["outcome"],
    )
    for outcome, n in snap["input"].items():
        g.add_metric([outcome], n)
    yield g


def _refresh_gauges(snap: dict[str, Any]) -> Iterator[GaugeMetricFamily]:
    """How the run went on from the previous one (a refresh), or read the whole log."""
    r = snap.get("refresh") or {}
    yield GaugeMetricFamily(
        "pfscope_run_incremental",
        "1 when the run went on from the previous run's state, 0 when it read the whole log",
        value=r.get("incremental", 0),
    )
    for name, key, text in (
        ("pfscope_run_lines_new", "lines_new", "Lines the run read that no earlier run had read"),
        (
            "pfscope_run_folders_refolded",
            "folders_refolded",
            "Folders with new events in an incremental run",
        ),
        (
            "pfscope_run_folders_carried",
            "folders_carried",
            "Folders an incremental run carried over (no new event: brought to the new as-of only)",
        ),
        (
            "pfscope_run_lines_rejudged",
            "lines_rejudged",
            "Lines an earlier run rejected that an incremental run judged otherwise (their message's send came late)",
        ),
        (
            "pfscope_run_folders_from_start",
            "folders_from_start",
            "Folders an incremental run folded again from their first event (no kept fold state held for them)",
        ),
    ):
        if r.get(key) is not None:
            yield GaugeMetricFamily(name, text, value=int(r[key]))


def _forecast_gauges(
    forecast: dict[str, tuple[int, int, float | None, float | None]],
) -> Iterator[GaugeMetricFamily]:
    lacking = GaugeMetricFamily(
        "pfscope_forecast_replicas_lacking",
        "Replicas of the store that lack CNs at the as-of (what is so), which the forecast plays forward",
        labels=["store"],
    )
    blocked = GaugeMetricFamily(
        "pfscope_forecast_blocked_replicas",
        "Replicas of the store that the forecast says will not be in sync within its horizon (14 days): a "
        "store that is down holds what they lack, nothing will tell them of it, or the store itself is down",
        labels=["store"],
    )
    in_sync = GaugeMetricFamily(
        "pfscope_forecast_in_sync_timestamp_seconds",
        "When the last of the store's replicas that will catch up is in sync, as the forecast plays the "
        "rules forward (no series: none lacks CNs or none will catch up)",
        labels=["store"],
    )
    latest = GaugeMetricFamily(
        "pfscope_forecast_latest_in_sync_timestamp_seconds",
        "The same, if the first backfill reply of each entry is lost: the bound to plan with",
        labels=["store"],
    )
    for store, (n, stuck, at, bound) in forecast.items():
        lacking.add_metric([store], n)
        blocked.add_metric([store], stuck)
        if at is not None:
            in_sync.add_metric([store], at)
        if bound is not None:
            latest.add_metric([store], bound)
    yield from (lacking, blocked, in_sync, latest)


class ChainCollector(Collector):
    """The last ``pfscope refresh`` of the folder served: how long each step took, its exit
    status, when it started and when the next is due (``--every``)."""

    def __init__(self, record: dict[str, Any]):
        self.record = record

    def collect(self) -> Iterator[GaugeMetricFamily]:
        r = self.record
        g = GaugeMetricFamily(
            "pfscope_refresh_duration_seconds",
            "Seconds the last pfscope refresh took, by step (ingest, compute) and in all (total)",
            labels=["step"],
        )
        for step, seconds in sorted((r.get("steps") or {}).items()):
            g.add_metric([step], float(seconds))
        g.add_metric(["total"], float(r.get("seconds", 0)))
        yield g
        yield GaugeMetricFamily(
            "pfscope_refresh_status",
            "Exit status of the last pfscope refresh (0: done)",
            value=r.get("status", 0),
        )
        for name, key, text in (
            ("pfscope_refresh_timestamp_seconds", "at", "When the last pfscope refresh started"),
            (
                "pfscope_refresh_next_timestamp_seconds",
                "next_at",
                "When the next pfscope refresh is due (--every)",
            ),
        ):
            at = _epoch(r.get(key))
            if at is not None:
                yield GaugeMetricFamily(name, text, value=at)


def exposition(
    data: RunData | None, now: pd.Timestamp | None = None, refresh: dict[str, Any] | None = None
) -> bytes:
    """The text /metrics serves: a fresh registry per call, the run's snapshot cached per run id;
    ``refresh``: the last ``pfscope refresh``'s record, where it publishes."""
    now_s = float((now if now is not None else pd.Timestamp.now(tz="UTC")).timestamp())
    snap = None if data is None else data.memo("metrics", (), lambda: snapshot(data))
    registry = CollectorRegistry(auto_describe=False)
    registry.register(RunCollector(snap, now_s))
    if refresh is not None:
        registry.register(ChainCollector(refresh))
    return generate_latest(registry)


def install_metrics_route(server: Flask) -> None:
    """``/metrics`` on the dashboard's server (behind the same credentials as the pages).

    With no run published it still answers 200, with ``pfscope_run_published 0`` only: the scrape
    succeeds (``up`` stays about pfscope itself) and an alert says what is missing.
    """

    @server.route("/metrics")
    def _metrics() -> Response:
        record = read_record(Path(settings().data_dir))
        return Response(exposition(current_data(), refresh=record), 200, {"Content-Type": CONTENT_TYPE})
