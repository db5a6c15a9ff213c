"""The committed sample exports in ``fixtures/`` (static bytes, not written at test time): the
three-server log as rendered XML, Event Viewer CSV (local times, UTC+1) and Export-Csv; and the
worked example as three ``.evtx`` files, one per server, each with its own REPLIDs."""

from __future__ import annotations

import json
from pathlib import Path

from pfscope.app.cli import main
from pfscope.spark_jobs.model.events import read_event_log
from pfscope.spark_jobs.model.replay import replay
from pfscope.spark_jobs.model.topology import load_topology
from tests.unit.exchange.test_roundtrip import _derived_exactly_where_ingest_derived, _flag_only_rows

FIXTURES = Path(__file__).parent / "fixtures"


def _rows(rows: list[dict], drop: tuple[str, ...] = ()) -> list[str]:
    return sorted(json.dumps({k: v for k, v in r.items() if k not in drop}, sort_keys=True) for r in rows)


def test_three_server_samples(tmp_path: Path) -> None:
    out = tmp_path / "out"
    glob_all = [
        "ingest",
        "--logs",
        str(FIXTURES / "EX07.xml"),
        str(FIXTURES / "*.csv"),
        "--out",
        str(out),
        "--replids",
        str(FIXTURES / "replids.csv"),
        "--time-offset=+01:00",
    ]
    assert main([*glob_all, "--strict"]) == 2  # replids.csv is no export
    assert main(glob_all) == 3  # ... so it is rejected whole and the rest ingested: partial
    s = json.loads((out / "ingest_summary.json").read_text(encoding="utf-8"))
    assert [b["file"] for b in s["files_broken"]] == [str(FIXTURES / "replids.csv")] and s["accounted"]
    assert (
        main(
            [
                "ingest",
                "--logs",
                str(FIXTURES / "EX07.xml"),
                str(FIXTURES / "LDNPF1_application.csv"),
                str(FIXTURES / "PARPF2.csv"),
                "--out",
                str(out),
                "--replids",
                str(FIXTURES / "replids.csv"),
                "--time-offset=+01:00",
            ]
        )
        == 0
    )
    s = json.loads((out / "ingest_summary.json").read_text(encoding="utf-8"))
    assert (s["records_read"], s["used"], s["errors_kept"], s["duplicates"], s["rejected"]) == (
        20,
        15,
        3,
        0,
        2,
    )
    assert s["messages"]["total"] == 8 and s["replids"]["conflicts"] == []
    events = [json.loads(x) for x in (out / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {
        "ts": "2026-11-02T08:03:00Z",
        "store": "PFLDN",
        "kind": "receive",
        "msg": "<A1@EX07.corp.example>",
    } in events


def test_worked_example_evtx_samples_replay_like_the_simulation(tmp_path: Path) -> None:
    we = FIXTURES / "worked-example"
    out = tmp_path / "out"
    assert (
        main(["ingest", "--logs", str(we), "--out", str(out), "--topology", str(we / "topology.json")]) == 0
    )
    s = json.loads((out / "ingest_summary.json").read_text(encoding="utf-8"))
    assert s["records_read"] == s["used"] == 50 and set(s["formats"].values()) == {"evtx"}
    assert len(s["replids"]["inferred"]) == 9  # three servers x three stores, no table given
    topo = load_topology(we / "topology.json")
    a = replay(topo, read_event_log([we / "simulated-events.jsonl"], topo)).tables
    topo_b = load_topology(out / "topology.json")
    b = replay(topo_b, read_event_log([out / "events.jsonl"], topo_b)).tables
    # the committed samples carry derived CN sets: marked exactly there, equal to the simulation otherwise
    _derived_exactly_where_ingest_derived(a, b, out)
    b["state_history"], _ = _flag_only_rows(b["state_history"])
    for table in (
        "state_table",
        "backfill_entries",
        "backfill_requests",
        "backfill_candidates",
        "replicas",
        "folders",
        "stores",
    ):
        assert _rows(a[table], ("derived",)) == _rows(b[table], ("derived",)), table
    assert _rows(a["state_history"], ("at", "derived")) == _rows(b["state_history"], ("at", "derived"))
