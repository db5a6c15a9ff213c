"""The console script: summaries on stdout, operator errors as one line and exit status 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.cli import main


@pytest.fixture(scope="module")
def worked(tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    out = tmp_path_factory.mktemp("we")
    assert main(["simulate", "--scenario", "worked-example", "--out", str(out), "--no-progress"]) == 0
    return out


def test_simulate_writes_both_files(worked: Path) -> None:
    topo = json.loads((worked / "topology.json").read_text())
    assert [s["name"] for s in topo["stores"]] == ["PFS1", "PFS2", "PFS3"]
    lines = (worked / "events.jsonl").read_text().splitlines()
    assert lines and all(json.loads(x)["kind"] for x in lines)
    assert not (worked / "events.jsonl.partial").exists()


def test_replay_prints_the_accounting(worked: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    n = len((worked / "events.jsonl").read_text().splitlines())
    code = main(["replay", "--topology", str(worked / "topology.json"), "--events", str(worked / "events.jsonl")])
    out = capsys.readouterr().out
    assert code == 0
    assert f"{n:,} lines read, {n:,} accepted, 0 duplicates, 0 rejected" in out
    assert "backfill entries: satisfied 1" in out


def test_replay_with_a_broken_topology(tmp_path: Path, worked: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "topology.json"
    bad.write_text('{"sites": ["A"], "stores": [{"name": "X", "site": "B", "version": "2003"}]}')
    code = main(["replay", "--topology", str(bad), "--events", str(worked / "events.jsonl")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].startswith("pfscope: ") and str(bad) in err[0] and "not in 'sites'" in err[0]


def test_missing_log_and_bad_time(worked: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    topo = str(worked / "topology.json")
    assert main(["replay", "--topology", topo, "--events", "/nonexistent/events.jsonl"]) == 2
    assert main(["replay", "--topology", topo, "--events", str(worked), "--as-of", "tomorrow"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "no such event log" in err[0] and "not RFC 3339" in err[1]


def test_unknown_scenario(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["simulate", "--scenario", "moon", "--out", str(tmp_path)]) == 2
    assert "unknown scenario 'moon'" in capsys.readouterr().err
    assert main(["simulate", "--scenario", "demo", "--stores", "4", "--out", str(tmp_path)]) == 2


def test_not_yet_built_commands_say_so(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["serve", "--data", "x"]) == 2
    assert "not built yet" in capsys.readouterr().err
