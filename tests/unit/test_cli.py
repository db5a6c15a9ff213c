"""The console script: summaries on stdout, operator errors as one line and exit status 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pfscope.app.cli import main


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
    code = main(
        ["replay", "--topology", str(worked / "topology.json"), "--events", str(worked / "events.jsonl")]
    )
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
    assert err[0].startswith("pfscope replay: ") and str(bad) in err[0] and "not in 'sites'" in err[0]


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


# --------------------------------------------------------------------------------------------
# replay on small hand-written inputs
# --------------------------------------------------------------------------------------------
TOPOLOGY = {
    "sites": ["Redmond", "Dublin"],
    "costs": [{"a": "Redmond", "b": "Dublin", "cost": 10}],
    "stores": [
        {"name": "PFS1", "server": "EX1", "site": "Redmond", "version": "2003"},
        {"name": "PFS2", "server": "EX2", "site": "Dublin", "version": "2007"},
    ],
    "folders": [{"fid": "1-ABC", "path": "IPM_SUBTREE\\F", "parent": "1-1", "replicas": ["PFS1", "PFS2"]}],
}
TOPOLOGY_YAML = """\
sites: [Redmond, Dublin]
costs: [{a: Redmond, b: Dublin, cost: 10}]
stores:
  - {name: PFS1, server: EX1, site: Redmond, version: 2003}
  - {name: PFS2, server: EX2, site: Dublin, version: 2007}
folders:
  - {fid: 1-abc, path: 'IPM_SUBTREE\\F', parent: 1-1, replicas: [PFS1, PFS2]}
"""
CHANGE = '{"ts": "2026-11-02T08:00:00Z", "store": "PFS1", "kind": "change", "fid": "1-ABC", "cn": 1}'
SEND = (
    '{"ts": "2026-11-02T08:00:01Z", "store": "PFS1", "kind": "send", "msg": "m1", "type": "content", '
    '"fid": "1-ABC", "to": ["PFS2"], "cnset": "PFS1:1", "changes": {"PFS1": [[1, 1]]}}'
)
RECEIVE = '{"ts": "2026-11-02T08:00:02Z", "store": "PFS2", "kind": "receive", "msg": "m1"}'


def inputs(tmp_path: Path, *lines: str) -> tuple[str, str]:
    topo = tmp_path / "topology.json"
    topo.write_text(json.dumps(TOPOLOGY), encoding="utf-8")
    events = tmp_path / "events.jsonl"
    events.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return str(topo), str(events)


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and captured.err.endswith("\n"), captured.err
    assert "Traceback" not in captured.err
    return lines[0]


def test_replay_of_a_small_clean_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    topo, events = inputs(tmp_path, CHANGE, SEND, RECEIVE)
    assert main(["replay", "--topology", topo, "--events", events]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    first = captured.out.splitlines()[0]
    assert first.startswith(
        "as of 2026-11-02T08:00:02Z: 3 lines read, 3 accepted, 0 duplicates, 0 rejected ("
    )
    assert "rejected 1" not in captured.out
    assert "backfill entries: none" in captured.out and "status requests: 0" in captured.out


def test_replay_counts_duplicates_and_rejects(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    again = RECEIVE.replace("08:00:02", "08:00:09")
    topo, events = inputs(tmp_path, CHANGE, SEND, "{oops", RECEIVE, RECEIVE, "", CHANGE, again)
    assert main(["replay", "--topology", topo, "--events", events]) == 0
    out = capsys.readouterr().out
    assert "8 lines read, 3 accepted, 2 duplicates, 3 rejected (" in out
    reject_lines = sorted(x.strip() for x in out.splitlines() if x.startswith("  rejected"))
    assert reject_lines == [
        "rejected 1: empty line",
        "rejected 1: message already received by this store",
        "rejected 1: not JSON",
    ]
    # the second receive names the first, the line that made it a reject
    assert f"    first: {events}:8 conflicts with accepted {events}:4\n" in out


def test_replay_with_a_yaml_topology_several_files_and_an_as_of(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    topo = tmp_path / "topology.yaml"
    topo.write_text(TOPOLOGY_YAML, encoding="utf-8")
    (tmp_path / "a-pfs2.jsonl").write_text(RECEIVE + "\n", encoding="utf-8")  # read first: before its send
    (tmp_path / "b-pfs1.jsonl").write_text(CHANGE + "\n" + SEND + "\n", encoding="utf-8")
    code = main(
        [
            "replay",
            "--topology",
            str(topo),
            "--events",
            str(tmp_path / "b-pfs1.jsonl"),
            str(tmp_path / "a-pfs2.jsonl"),
            "--as-of",
            "2026-11-02T10:00:00+01:00",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("as of 2026-11-02T09:00:00Z: 3 lines read, 3 accepted, 0 duplicates, 0 rejected (")


def test_replay_of_a_folder_and_a_glob(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "pfs1.jsonl").write_text(CHANGE + "\n" + SEND + "\n", encoding="utf-8")
    (logs / "pfs2.jsonl").write_text(RECEIVE + "\n" + "oops\n", encoding="utf-8")
    topo, _ = inputs(tmp_path)
    assert main(["replay", "--topology", topo, "--events", str(logs)]) == 0
    assert main(["replay", "--topology", topo, "--events", str(logs / "*.jsonl")]) == 0
    out = capsys.readouterr().out.splitlines()
    summaries = [x for x in out if x.startswith("as of")]
    assert len(summaries) == 2
    assert all("4 lines read, 3 accepted, 0 duplicates, 1 rejected (" in x for x in summaries)


BROKEN = [
    ("bad-json", "topology.json", '{"sites": ["A"],', "not valid JSON"),
    (
        "unknown-site",
        "topology.json",
        '{"sites": ["A"], "stores": [{"name": "X", "site": "B", "version": "2003"}]}',
        "not in 'sites'",
    ),
    ("bad-yaml", "topology.yaml", "sites: [A\nstores: []\n", "not valid YAML"),
    (
        "self-preference",
        "topology.yml",
        "sites: [A]\nstores:\n  - {name: X, site: A, version: 2003, preferred_backfill_source: X}\n",
        "names itself as its preferred backfill source",
    ),
    ("not-utf8", "topology.json", b'{"sites": ["\xff"]}', "not UTF-8"),
]


@pytest.mark.parametrize(("name", "content", "problem"), [b[1:] for b in BROKEN], ids=[b[0] for b in BROKEN])
def test_replay_with_a_broken_topology_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, content: str | bytes, problem: str
) -> None:
    _, events = inputs(tmp_path, CHANGE)
    bad = tmp_path / name
    if isinstance(content, bytes):
        bad.write_bytes(content)
    else:
        bad.write_text(content, encoding="utf-8")
    assert main(["replay", "--topology", str(bad), "--events", events]) == 2
    err = one_error_line(capsys)
    assert err.startswith(f"pfscope replay: {bad}: ") and problem in err


def test_replay_with_a_missing_topology(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, events = inputs(tmp_path, CHANGE)
    missing = tmp_path / "nope.json"
    assert main(["replay", "--topology", str(missing), "--events", events]) == 2
    err = one_error_line(capsys)
    assert err.startswith(f"pfscope replay: {missing}: cannot read the topology")


def test_replay_with_a_missing_event_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    topo, events = inputs(tmp_path, CHANGE)
    missing = tmp_path / "other.jsonl"
    assert main(["replay", "--topology", topo, "--events", events, str(missing)]) == 2
    err = one_error_line(capsys)
    assert err == f"pfscope replay: {missing}: no such event log"


@pytest.mark.parametrize("as_of", ["tomorrow", "2026-11-02T08:00:00", "2026-11-02"])
def test_replay_with_a_bad_as_of(tmp_path: Path, capsys: pytest.CaptureFixture[str], as_of: str) -> None:
    topo, events = inputs(tmp_path, CHANGE)
    assert main(["replay", "--topology", topo, "--events", events, "--as-of", as_of]) == 2
    err = one_error_line(capsys)
    assert err.startswith("pfscope replay: timestamp ") and repr(as_of) in err


def test_compute_with_a_broken_topology_is_one_line_and_starts_no_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, events = inputs(tmp_path, CHANGE)
    bad = tmp_path / "broken.json"
    bad.write_text("[]", encoding="utf-8")
    out = tmp_path / "published"
    assert main(["compute", "--topology", str(bad), "--events", events, "--out", str(out)]) == 2
    err = one_error_line(capsys)
    assert err.startswith(f"pfscope compute: {bad}: ") and "must be an object" in err
    assert not out.exists()


def test_a_missing_required_option_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["replay", "--events", "x.jsonl"])
    assert e.value.code == 2
    assert "--topology" in capsys.readouterr().err


def _crashing(args: object) -> int:
    raise RuntimeError("unexpected state")


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_a_crash_with_debug_prints_its_traceback(
    how: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pfscope.app import cli

    monkeypatch.setitem(cli._COMMANDS, "rules", _crashing)
    if how == "environment":
        monkeypatch.setenv("PFSCOPE_DEBUG", "1")
    assert main(["rules", *(["--debug"] if how == "flag" else [])]) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "_crashing" in err
    assert (
        err.splitlines()[-1]
        == "pfscope rules: failed (RuntimeError): unexpected state; the traceback is above"
    )


def test_a_crash_without_debug_says_where_its_traceback_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pfscope.app import cli
    from pfscope.spark_jobs.runtime import command

    monkeypatch.setattr(command, "crash_folder", lambda: tmp_path)
    monkeypatch.setitem(cli._COMMANDS, "rules", _crashing)
    monkeypatch.delenv("PFSCOPE_DEBUG", raising=False)
    assert main(["rules"]) == 1
    err = capsys.readouterr().err
    (written,) = tmp_path.iterdir()
    assert err == (
        f"pfscope rules: failed (RuntimeError): unexpected state; the whole text: {written} "
        "(or run again with --debug)\n"
    )
    assert "_crashing" in written.read_text(encoding="utf-8")


def test_a_bad_debug_setting_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PFSCOPE_DEBUG", "maybe")
    assert main(["rules", "--path"]) == 2
    assert capsys.readouterr().err == "pfscope rules: PFSCOPE_DEBUG='maybe' is not 1/true/yes or 0/false/no\n"
