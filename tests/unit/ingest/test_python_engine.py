"""``ingest --engine python`` keeps each export's records between runs: every run's outputs equal
a fresh reference ingest of the share as it is then (``run_ingest``), whatever came, changed, went
or broke since the run before, and each run says what it read."""

from __future__ import annotations

import json
import os
import pickle
import shutil
from pathlib import Path

import pytest

from pfscope.app.cli import main
from pfscope.spark_jobs.exchange import run_ingest
from pfscope.spark_jobs.ingest.python_engine import KEPT_STATE, kept_root
from tests.spark.test_ingest_spark import (
    _export,
    _same_outputs,
    _stamps,
    _varied_share,
    _worked_example_records,
)
from tests.unit.exchange import three_servers as fx
from tests.unit.exchange.exports import write_wevtutil_xml

WORKED = Path(__file__).resolve().parents[1] / "exchange" / "fixtures" / "worked-example"


def _ingest(logs: Path, out: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, str]:
    status = main(["ingest", "--logs", str(logs), "--out", str(out), "--engine", "python", *flags])
    return status, capsys.readouterr().out.splitlines()[0]


def _fresh(logs: Path, tmp: Path, name: str, **opts: object) -> Path:
    ref = tmp / name
    run_ingest([str(logs)], ref, **opts)  # type: ignore[arg-type]
    return ref


def _kept_for(out: Path, export: Path) -> Path:
    """The pickle that keeps ``export``'s records."""
    for p in kept_root(out).glob("*.pickle"):
        records = pickle.loads(p.read_bytes())["items"]
        if records and records[0][0].source == str(export):
            return p
    raise AssertionError(f"no records kept for {export}")


def _pickles(out: Path) -> set[str]:
    return {p.name for p in kept_root(out).iterdir() if p.name != KEPT_STATE}


def test_a_growing_share_reads_only_its_new_exports_and_equals_a_fresh_ingest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    by_server = _worked_example_records()
    servers = sorted(by_server)
    logs, out = tmp_path / "logs", tmp_path / "out"
    logs.mkdir()
    first = {s: len(by_server[s]) // 2 for s in servers}
    for s in servers:
        _export(by_server[s][: first[s]], logs / f"{s}-1.xml", 1)
    flags = ("--topology", str(WORKED / "topology.json"))
    assert _ingest(logs, out, capsys, *flags) == (
        0,
        "full ingest: no records kept by an earlier run in this process",
    )
    _same_outputs(_fresh(logs, tmp_path, "ref1", topology=str(WORKED / "topology.json")), out)
    assert len(_pickles(out)) == len(servers)

    for s in servers:  # each server's later export, overlapping the first by three records
        _export(by_server[s][first[s] - 3 :], logs / f"{s}-2.xml", first[s] - 2)
    new = sum(len(by_server[s]) - first[s] + 3 for s in servers)
    status, said = _ingest(logs, out, capsys, *flags)
    assert status == 0 and said == (
        f"incremental: {len(servers)} new files, {new:,} new records; {len(servers)} files "
        f"({sum(first.values()):,} records) not read again"
    )
    _same_outputs(_fresh(logs, tmp_path, "ref2", topology=str(WORKED / "topology.json")), out)

    stamps = _stamps(out)
    status, said = _ingest(logs, out, capsys, *flags)
    assert status == 0 and said.endswith("nothing new: the outputs stay as they are")
    assert _stamps(out) == stamps  # nothing written
    status, said = _ingest(logs, out, capsys)  # without --topology: built again from the kept records
    assert status == 0 and said.startswith(
        f"incremental: 0 new files, 0 new records; {2 * len(servers)} files"
    )
    _same_outputs(_fresh(logs, tmp_path, "ref3"), out)


def test_a_rewritten_a_removed_a_broken_and_a_spoiled_kept_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The varied share (every format, re-exports, conflicting copies, broken, empty and hostile
    files), then a file rewritten, one gone, a kept pickle spoiled: each run equals a fresh one,
    and a file that could not be read whole is read again every run, never kept."""
    logs = _varied_share(tmp_path)
    out = tmp_path / "out"
    opts = {"replids": str(logs / "replids.csv"), "default_offset_min": 60}
    flags = ("--replids", str(logs / "replids.csv"), "--time-offset", "+01:00")
    status, said = _ingest(logs, out, capsys, *flags)
    assert status == 3 and said.startswith("full ingest: no records kept")  # partial: broken files
    _same_outputs(_fresh(logs, tmp_path, "ref1", **opts), out)
    # not read whole: cut off, garbage inside, gone before it was read, and replids.csv (no export)
    broken = {"EX07-cut.xml", "EX07-garbage.xml", "published-cut.xml", "gone.xml", "replids.csv"}
    files = [p for p in logs.rglob("*") if p.is_file() or p.is_symlink()]
    exports = [p for p in files if p.suffix.lower() in (".xml", ".csv", ".evtx")]
    assert len(_pickles(out)) == len(exports) - len(broken)

    write_wevtutil_xml(fx.EX07_EVENTS[:3], logs / "EX07-again.xml")  # rewritten: fewer records
    (logs / "odd.xml").unlink()
    spoiled = _kept_for(out, logs / "PARPF2.csv")
    spoiled.write_bytes(spoiled.read_bytes()[:100])
    status, said = _ingest(logs, out, capsys, *flags)
    assert status == 3 and said.startswith("incremental: 7 new files,"), said  # 5 broken, rewritten, spoiled
    _same_outputs(_fresh(logs, tmp_path, "ref2", **opts), out)
    assert len(_pickles(out)) == len(exports) - 1 - len(broken)  # the removed file's pickle is gone

    status, said = _ingest(logs, out, capsys, *flags, "--full")
    assert status == 3 and said == "full ingest: --full"
    status, said = _ingest(logs, out, capsys, "--replids", str(logs / "replids.csv"))
    assert status == 3 and said == "full ingest: --time-offset changed"
    _same_outputs(_fresh(logs, tmp_path, "ref3", replids=str(logs / "replids.csv")), out)


def test_strict_and_unreadable_shares_leave_the_last_outputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs, out = tmp_path / "logs", tmp_path / "out"
    logs.mkdir()
    write_wevtutil_xml(fx.EX07_EVENTS, logs / "ex07.xml")
    assert _ingest(logs, out, capsys)[0] == 0
    before = (out / "events.jsonl").read_bytes()
    shutil.copy(logs / "ex07.xml", tmp_path / "whole.xml")
    (logs / "cut.xml").write_bytes((tmp_path / "whole.xml").read_bytes()[:-30])
    assert main(["ingest", "--logs", str(logs), "--out", str(out), "--engine", "python", "--strict"]) == 2
    assert "--strict: nothing written" in capsys.readouterr().err
    assert (out / "events.jsonl").read_bytes() == before
    assert len(_pickles(out)) == 1 and not list(kept_root(out).glob("*.partial"))  # nothing kept either
    status, said = _ingest(logs, out, capsys)  # the kept export is not read again
    assert status == 3 and said.startswith("incremental: 1 new files, "), said


def test_auto_reads_a_share_under_the_bound_here_and_spark_flags_choose_spark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pfscope.spark_jobs.ingest import entry
    from pfscope.spark_jobs.ingest.job import IngestSettings

    write_wevtutil_xml(fx.EX07_EVENTS, tmp_path / "ex07.xml")
    share = IngestSettings(logs=(str(tmp_path),), out=str(tmp_path / "out"))
    size = (tmp_path / "ex07.xml").stat().st_size
    assert entry.choose_engine("auto", share) == "python"
    assert entry.choose_engine("auto", IngestSettings(**{**share.__dict__, "full": True})) == "python"
    assert entry.choose_engine("auto", IngestSettings(**{**share.__dict__, "master": "local[2]"})) == "spark"
    assert entry.choose_engine("auto", IngestSettings(**{**share.__dict__, "conf": ("a=b",)})) == "spark"
    assert entry.choose_engine("spark", share) == "spark" and entry.choose_engine("python", share) == "python"
    monkeypatch.setattr(entry, "AUTO_SPARK_BYTES", size)  # a share of the bound or more: Spark
    assert entry.choose_engine("auto", share) == "spark"
    monkeypatch.setattr(entry, "AUTO_SPARK_BYTES", size + 1)
    assert entry.choose_engine("auto", share) == "python"


def test_what_a_fresh_run_would_write_differently_is_never_nothing_new(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The share named another way (the records name their file as given), the topology's stores
    in another order (the first store of a server is its own), a rewrite that puts the size and
    time back, a kept pickle of another shape: each run reads again what it must, and equals a
    fresh ingest."""
    monkeypatch.chdir(tmp_path)
    logs = tmp_path / "logs"
    logs.mkdir()
    by_server = _worked_example_records()
    for s in sorted(by_server):
        _export(by_server[s], logs / f"{s}.xml", 1)
    topo = json.loads((WORKED / "topology.json").read_text(encoding="utf-8"))
    extra = {**topo["stores"][0], "name": "PFS0"}  # a second store on the first store's server
    path = tmp_path / "topology.json"
    path.write_text(json.dumps({**topo, "stores": [*topo["stores"], extra]}), encoding="utf-8")

    def run(given: str) -> str:
        assert (
            main(["ingest", "--logs", given, "--out", "out", "--topology", str(path), "--engine", "python"])
            == 0
        )
        return capsys.readouterr().out.splitlines()[0]

    def same(given: str, name: str) -> None:
        run_ingest([given], tmp_path / name, topology=str(path))
        _same_outputs(tmp_path / name, tmp_path / "out")

    run("logs")
    assert run("./logs") == "full ingest: no file of the share was read before"  # records name ./logs/...
    same("./logs", "ref1")
    path.write_text(json.dumps({**topo, "stores": [extra, *topo["stores"]]}), encoding="utf-8")
    assert not run("./logs").endswith("nothing new: the outputs stay as they are")
    same("./logs", "ref2")
    assert (
        json.loads((tmp_path / "out" / "ingest_summary.json").read_text())["stores"]
        != json.loads((tmp_path / "ref1" / "ingest_summary.json").read_text())["stores"]
    )  # the order made a difference, and the run saw it

    export = logs / f"{sorted(by_server)[0]}.xml"
    before = export.stat()
    text = export.read_text(encoding="utf-8")
    export.write_text(text.replace("EX0", "EX9", 1), encoding="utf-8")  # the same length
    os.utime(export, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert export.stat().st_size == before.st_size
    assert run("./logs").startswith("incremental: 1 new files")
    same("./logs", "ref3")

    for kept in kept_root(tmp_path / "out").glob("*.pickle"):
        kept.write_bytes(pickle.dumps([1]))  # loads, but holds no records
    os.utime(logs / f"{sorted(by_server)[1]}.xml")
    assert run("./logs").startswith("full ingest: no file of the share was read before")
    same("./logs", "ref4")
