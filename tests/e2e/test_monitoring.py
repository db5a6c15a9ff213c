"""Monitoring end to end: Debian's Prometheus scrapes a live ``pfscope serve`` on the demo run and
evaluates the shipped rules; the overview draws the backfill trend. Expected values come from the
published Parquet, read here with pandas (not through the app)."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from pfscope.app.monitoring import RULES_PATH
from tests.e2e.conftest import Server, free_port, screenshot, start_server, stop_server
from tests.e2e.test_dashboard import open_page, table
from tests.unit.app.test_report import values

pytestmark = pytest.mark.e2e

HEALTH = ("in_sync", "backfilling", "overdue", "delete_pending", "deleted")


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


@pytest.fixture(scope="module")
def prometheus(demo_server: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Debian's prometheus on 127.0.0.1 (a free port, its own config and data folder), scraping
    the demo server's /metrics every 2 s and evaluating pfscope's rules."""
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.fail("prometheus is missing: run scripts/setup with PFSCOPE_PROMETHEUS=1 (scripts/test does)")
    tmp = tmp_path_factory.mktemp("prometheus")
    config = {
        "global": {"scrape_interval": "2s", "scrape_timeout": "2s", "evaluation_interval": "2s"},
        "rule_files": [str(RULES_PATH)],
        "scrape_configs": [
            {
                "job_name": "pfscope",
                "metrics_path": "/metrics",
                "static_configs": [{"targets": [demo_server.base.removeprefix("http://")]}],
            }
        ],
    }
    (tmp / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = tmp / "prometheus.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                binary,
                f"--config.file={tmp / 'prometheus.yml'}",
                f"--storage.tsdb.path={tmp / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"prometheus exited {proc.returncode}: {log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(base + "/-/ready", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"prometheus not ready within 60 s: {log.read_text()[-2000:]}")
            time.sleep(0.3)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def query(base: str, promql: str) -> list[dict[str, Any]]:
    body = _get(base + "/api/v1/query?" + urllib.parse.urlencode({"query": promql}))
    assert body["status"] == "success", body
    return body["data"]["result"]


def wait_for(check, timeout: float = 90.0) -> Any:  # type: ignore[no-untyped-def]
    """Poll ``check()`` until it returns something truthy (a scrape, an evaluation)."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up after {timeout} s")
        time.sleep(0.5)


def by(result: list[dict[str, Any]], *labels: str) -> dict[Any, float]:
    out = {}
    for r in result:
        key = tuple(r["metric"][name] for name in labels)
        out[key[0] if len(key) == 1 else key] = float(r["value"][1])
    return out


def test_prometheus_reads_the_published_tables(prometheus: str, demo_server: Server) -> None:
    wait_for(lambda: [r for r in query(prometheus, 'up{job="pfscope"}') if r["value"][1] == "1"])
    published = wait_for(lambda: query(prometheus, "pfscope_run_published"))
    assert by(published) == {(): 1.0} or [float(r["value"][1]) for r in published] == [1.0]

    stores = table(demo_server.data, "stores")
    replicas = table(demo_server.data, "replicas")
    entries = table(demo_server.data, "backfill_entries")
    names = sorted(stores["store"])

    counts = replicas.groupby(["store", "health"]).size()
    got = by(query(prometheus, "pfscope_replicas"), "store", "health")
    assert got == {(s, h): float(counts.get((s, h), 0)) for s in names for h in HEALTH}

    open_entries = entries[entries["state"] == "open"]
    open_n = open_entries.groupby("observer").size()
    overdue_n = open_entries[open_entries["requests"] >= 2].groupby("observer").size()
    assert by(query(prometheus, "pfscope_backfill_entries_open"), "store") == {
        s: float(open_n.get(s, 0)) for s in names
    }
    assert by(query(prometheus, "pfscope_backfill_entries_overdue"), "store") == {
        s: float(overdue_n.get(s, 0)) for s in names
    }
    # content at risk: what is so (the published at_risk_count), never a store's belief (unique_count)
    pending = replicas.groupby("store")["at_risk_count"].sum()
    assert by(query(prometheus, "pfscope_content_at_risk_cns"), "store") == {
        s: float(pending.get(s, 0)) for s in names
    }
    assert sum(overdue_n) > 0 and sum(pending) > 0  # the demo has both: the comparisons are not all zeros

    up = by(query(prometheus, "pfscope_store_up"), "store", "site", "version")
    assert up == {
        (r["store"], r["site"], r["version"]): float(r["status"] == "up") for r in stores.to_dict("records")
    }
    # PromQL over the series: the organisation's totals
    total = query(prometheus, "sum(pfscope_backfill_entries_open)")
    assert float(total[0]["value"][1]) == len(open_entries)


def test_prometheus_loads_the_rules_and_their_alerts_follow_the_tables(
    prometheus: str, demo_server: Server
) -> None:
    groups = _get(prometheus + "/api/v1/rules")["data"]["groups"]
    rules = [r for g in groups for r in g["rules"]]
    assert len(rules) == len(yaml.safe_load(RULES_PATH.read_text())["groups"][0]["rules"])

    def evaluated() -> list[dict[str, Any]]:
        now = [r for g in _get(prometheus + "/api/v1/rules")["data"]["groups"] for r in g["rules"]]
        return now if all(r.get("health") == "ok" for r in now) else []

    wait_for(evaluated)
    replicas = table(demo_server.data, "replicas")
    entries = table(demo_server.data, "backfill_entries")
    open_entries = entries[entries["state"] == "open"]
    overdue_stores = set(open_entries.loc[open_entries["requests"] >= 2, "observer"])
    at_risk_stores = set(replicas.loc[replicas["at_risk_count"] > 0, "store"])

    def alerting(name: str) -> set[str]:
        alerts = _get(prometheus + "/api/v1/alerts")["data"]["alerts"]
        return {a["labels"]["store"] for a in alerts if a["labels"]["alertname"] == name}

    # each alert waits its `for` (minutes), so here they are pending, for exactly these stores
    assert wait_for(lambda: alerting("PfscopeReplicaOverdue") == overdue_stores) and overdue_stores
    assert wait_for(lambda: alerting("PfscopeContentAtRisk") == at_risk_stores) and at_risk_stores
    down = set(table(demo_server.data, "stores").query("status != 'up'")["store"])
    assert alerting("PfscopeStoreDown") == down


def test_overview_draws_open_and_overdue_entries_over_time(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    open_page(page, demo_server.base + "/")
    section = page.locator("#pf-trend")
    assert section.locator("h2").inner_text() == "Backfill entries over time"
    traces = page.evaluate(
        "() => document.querySelector('#pf-trend-fig .js-plotly-plot').data.map("
        "t => ({name: t.name, x: t.x, y: t.y}))"
    )
    screenshot(page, "demo-overview-trend")
    entries = table(demo_server.data, "backfill_entries")
    open_entries = entries[entries["state"] == "open"]
    as_of = table(demo_server.data, "summary")["as_of"].iloc[0]
    # the organisation's totals: every store's open entries, and the overdue among them
    lines = {t["name"]: t for t in traces if t["name"] != "annotations"}
    assert sorted(lines) == ["open entries, all stores", "overdue entries, all stores"]
    for t in lines.values():
        t["x"], t["y"] = values(t["x"]), values(t["y"])  # plotly may send arrays base64-encoded
        assert pd.Timestamp(t["x"][-1], tz="UTC") == as_of
    assert lines["open entries, all stores"]["y"][-1] == len(open_entries)
    assert lines["overdue entries, all stores"]["y"][-1] == int((open_entries["requests"] >= 2).sum())
    # per store: a row each (the demo's ten), the last time bin at least its entries open at the as-of
    heat = page.evaluate(
        "() => { const p = document.querySelector('#pf-store-trend-fig .js-plotly-plot');"
        " return {rows: p.layout.yaxis.categoryarray,"
        " z: Array.from(p._fullData[0].z, r => Array.from(r, v => Number.isNaN(v) ? 0 : v))}; }"
    )
    stores = sorted(table(demo_server.data, "stores")["store"])
    assert sorted(heat["rows"]) == stores
    for store, row in zip(heat["rows"], heat["z"], strict=True):
        last = row[-1] or 0
        assert last >= int((open_entries["observer"] == store).sum()), store


def test_metrics_before_and_after_a_run_is_published(demo_data: Path, tmp_path: Path) -> None:
    """An empty data folder: only ``pfscope_run_published 0`` (still 200: the scrape succeeds);
    once a run is published there, the next scrape has it, without a restart."""
    data = tmp_path / "runs"
    data.mkdir()
    server = start_server(data, tmp_path / "cache", tmp_path / "serve.log")
    try:
        with urllib.request.urlopen(server.base + "/metrics", timeout=10) as r:
            assert r.status == 200 and r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            lines = [x for x in r.read().decode().splitlines() if not x.startswith("#")]
        assert lines == ["pfscope_run_published 0.0"]
        shutil.copytree(demo_data, data, dirs_exist_ok=True)
        with urllib.request.urlopen(server.base + "/metrics", timeout=30) as r:
            text = r.read().decode()
        assert "\npfscope_run_published 1.0\n" in text
        entries = table(demo_data, "backfill_entries")
        for store, n in entries[entries["state"] == "open"].groupby("observer").size().items():
            assert f'\npfscope_backfill_entries_open{{store="{store}"}} {float(n)}\n' in text
    finally:
        stop_server(server)
