"""``pfscope ingest`` on the command line: its outputs, and operator errors as one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pfscope.app.cli import main
from tests.unit.exchange import three_servers as fx
from tests.unit.exchange.exports import write_event_viewer_csv, write_export_csv, write_wevtutil_xml


def _logs(tmp_path: Path) -> Path:
    d = tmp_path / "logs"
    d.mkdir()
    write_wevtutil_xml(fx.EX07_EVENTS, d / "ex07.xml")
    write_event_viewer_csv(fx.LDN_EVENTS, d / "LDNPF1.csv", offset_min=-300)
    write_export_csv(fx.PAR_EVENTS, d / "par.csv")
    (tmp_path / "replids.csv").write_text(fx.REPLIDS_CSV, encoding="utf-8")
    return d


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.endswith("\n") and err.count("\n") == 1, err
    return err.strip()


def test_ingest_writes_the_log_topology_and_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs = _logs(tmp_path)
    out = tmp_path / "out"
    argv = [
        "ingest",
        "--logs",
        str(logs / "ex07.xml"),
        str(logs / "*.csv"),
        "--out",
        str(out),
        "--replids",
        str(tmp_path / "replids.csv"),
        "--time-offset=-05:00",
    ]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "read 20 records from 3 files" in printed and "2 rejected" in printed
    assert sorted(p.name for p in out.iterdir()) == [
        ".ingest_state",  # each export's records, kept for the next run
        "events",
        "events.jsonl",
        "ingest_errors.jsonl",
        "ingest_rejects.jsonl",
        "ingest_summary.json",
        "topology.json",
    ]
    summary = json.loads((out / "ingest_summary.json").read_text(encoding="utf-8"))
    assert summary["accounted"] and summary["notes"][0].startswith("5 times had no UTC offset")
    # the Event Viewer CSV was written five hours behind UTC and read back with --time-offset
    recv = [json.loads(x) for x in (out / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {
        "ts": "2026-11-02T08:03:00Z",
        "store": "PFLDN",
        "kind": "receive",
        "msg": "<A1@EX07.corp.example>",
    } in recv
    # the same export read with the zone of New York (UTC-5 in November) gives the same times
    assert main([*argv[:-1], "--out", str(tmp_path / "out2"), "--timezone", "America/New_York"]) == 0
    assert (tmp_path / "out2" / "events.jsonl").read_text() == (out / "events.jsonl").read_text()


@pytest.mark.parametrize(
    ("extra", "expect"),
    [
        (["--logs", "{tmp}/missing.xml"], "missing.xml: no such file or folder"),
        (["--logs", "{tmp}/logs", "--replids", "{tmp}/nope.csv"], "cannot read the REPLID table"),
        (["--logs", "{tmp}/logs", "--replids", "{tmp}/bad_replids.csv"], "is not hexadecimal"),
        (["--logs", "{tmp}/logs", "--topology", "{tmp}/bad_topology.json"], "not valid JSON"),
        (["--logs", "{tmp}/logs", "--time-offset", "CET"], "--time-offset 'CET': expected +HH:MM"),
        (["--logs", "{tmp}/odd.csv"], "needs a time and an event ID column"),
        (["--logs", "{tmp}/broken.xml"], "not well-formed XML"),
        (
            ["--logs", "{tmp}/logs", "--timezone", "Mars/Olympus"],
            "--timezone 'Mars/Olympus': no such time zone",
        ),
        (["--logs", "{tmp}/logs", "--timezone", "UTC", "--time-offset=+01:00"], "not both"),
    ],
)
def test_operator_errors_are_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], expect: str
) -> None:
    _logs(tmp_path)
    (tmp_path / "bad_replids.csv").write_text("server,replid,store\nEX07,G,PF07\n", encoding="utf-8")
    (tmp_path / "bad_topology.json").write_text("{", encoding="utf-8")
    (tmp_path / "odd.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    (tmp_path / "broken.xml").write_text("<Event><System>", encoding="utf-8")
    argv = ["ingest", "--out", str(tmp_path / "out"), *[a.format(tmp=tmp_path) for a in extra]]
    assert main(argv) == 2
    err = one_error_line(capsys)
    assert err.startswith("pfscope ingest: ") and expect in err
    assert not (tmp_path / "out" / "events.jsonl").exists()


def test_ingest_in_one_process_leaves_the_compute_job_unimported(tmp_path: Path) -> None:
    """``pfscope ingest`` (and ``refresh``'s ingest step) starts without the compute job, pyarrow
    or pandas: each hour pays its process's imports."""
    import subprocess
    import sys

    logs = _logs(tmp_path)
    heavy = ["pfscope.spark_jobs.compute.entry", "pyarrow", "pandas", "pyspark"]
    code = (
        "import sys; from pfscope.app.cli import main; "
        f"status = main(['ingest', '--engine', 'python', '--logs', {str(logs)!r}, '--out', {str(tmp_path / 'out')!r}]); "
        f"print([m for m in {heavy!r} if m in sys.modules]); sys.exit(status)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1] == "[]", done.stdout
    assert (tmp_path / "out" / "events.jsonl").stat().st_size > 0
