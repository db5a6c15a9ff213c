"""``pfscope compute`` on an ingested log: Exchange events (EVTX and rendered XML, each server with
its own REPLIDs) -> ``pfscope ingest`` -> the Spark job publishes every table, equal to the replay of
the same ingested log, and the ``derived`` markers pass the Spark reader like the replay's."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pfscope.app.cli import main
from pfscope.spark_jobs.model.events import read_event_log
from pfscope.spark_jobs.model.replay import replay
from pfscope.spark_jobs.model.tables import PUBLISHED, TABLES
from pfscope.spark_jobs.model.topology import load_topology
from pfscope.spark_jobs.published.runs import read_latest
from tests.spark.test_compute import ordered
from tests.unit.exchange.test_roundtrip import simulate_render_ingest


@pytest.mark.slow
def test_compute_publishes_an_ingested_log(spark, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    options = {"stores": 5, "sites": 2, "folders": 12, "replicas": 3, "days": 2.0}
    _sim, ingested, s = simulate_render_ingest(
        tmp_path, "scale", ["evtx", "rendered-xml"], seed=5, options=options
    )
    assert s["rejected"] == 0 and s["used"] > 300
    events = ingested / "events.jsonl"
    assert '"derived":["cnset"]' in events.read_text(encoding="utf-8")
    out = tmp_path / "runs"
    assert (
        main(
            [
                "compute",
                "--topology",
                str(ingested / "topology.json"),
                "--events",
                str(events),
                "--out",
                str(out),
                "--master",
                "local[2]",
                "--partitions",
                "2",
            ]
        )
        == 0
    )
    assert "published run" in capsys.readouterr().out
    latest = read_latest(out)
    assert latest is not None and set(latest["tables"]) == set(PUBLISHED)

    topo = load_topology(ingested / "topology.json")
    expected = replay(topo, read_event_log([events], topo)).tables
    for table in TABLES:
        got = pq.read_table(out / latest["path"] / table).to_pylist()
        assert ordered(table, got) == ordered(table, expected[table]), table
    summary = pq.read_table(out / latest["path"] / "summary").to_pylist()[0]
    assert summary["rejected"] == 0 and summary["accepted"] == summary["lines_read"]
    state = pq.read_table(out / latest["path"] / "state_table").to_pylist()
    assert state and any(r["derived"] for r in state) and not all(r["derived"] for r in state)
