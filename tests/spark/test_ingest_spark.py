"""Ingest on Spark against the reference (``run_ingest``): the same five outputs on a varied share
(the committed samples, every published text, the worked example simulated and rendered in every
format, re-exports, conflicting copies, broken, empty and hostile files, XML read in many pieces),
then incrementally on a share that grows, and its exit statuses on the command line."""

from __future__ import annotations

import json
import re
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from pfscope.app.cli import main
from pfscope.spark_jobs.exchange import run_ingest
from pfscope.spark_jobs.exchange.event_files import EVENTS_FOLDER
from pfscope.spark_jobs.ingest import build_cache
from pfscope.spark_jobs.ingest.job import IngestSettings, run_ingest_spark
from pfscope.spark_jobs.model.timeutil import parse_ts
from pfscope.spark_jobs.model.topology import load_topology
from tests.benchmarks.bench_ingest import render
from tests.render import ExportRecord, render_log
from tests.unit.exchange import three_servers as fx
from tests.unit.exchange.exports import NS, event_xml, write_events_xml, write_export_csv, write_wevtutil_xml
from tests.unit.exchange.test_build import odd_messages
from tests.unit.exchange.test_published import PUBLISHED
from tests.unit.exchange.test_roundtrip import WRITERS

SAMPLES = Path(__file__).resolve().parents[1] / "unit" / "exchange" / "fixtures"
OUTPUTS = ("events.jsonl", "ingest_rejects.jsonl", "ingest_errors.jsonl", "topology.json")
TIMING = ("seconds", "records_per_second")
SPLIT = 16_000  # the larger XML exports of the varied share are read in two or three pieces
PER_PART = 20  # the varied share's build steps (87 kept records) run in four partitions, each merging its own


def _same_outputs(reference: Path, spark: Path) -> None:
    for name in OUTPUTS:
        assert (spark / name).read_text(encoding="utf-8") == (reference / name).read_text(encoding="utf-8"), (
            name
        )
    # the log by day and folder: the reference's from its log, Spark's placed as each line is made
    by_file = {p.name: p.read_bytes() for p in (reference / EVENTS_FOLDER).iterdir()}
    assert by_file and {p.name: p.read_bytes() for p in (spark / EVENTS_FOLDER).iterdir()} == by_file
    a = json.loads((reference / "ingest_summary.json").read_text(encoding="utf-8"))
    b = json.loads((spark / "ingest_summary.json").read_text(encoding="utf-8"))
    for k in TIMING:
        a.pop(k), b.pop(k)
    assert list(b) == list(a) and b == a


def _stamps(out: Path) -> dict[Path, int]:
    """Each output file's modification time (the log by folder's included)."""
    return {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file() and ".ingest_state" not in p.parts}


def _worked_example_records() -> dict[str, list[ExportRecord]]:
    """The worked example's events rendered as Exchange records, by server."""
    folder = SAMPLES / "worked-example"
    topo = load_topology(folder / "topology.json")
    r = render_log(topo, (folder / "simulated-events.jsonl").read_text(encoding="utf-8").splitlines())
    by_server: dict[str, list[ExportRecord]] = defaultdict(list)
    for rec in r.records:
        by_server[rec.server.split(".")[0]].append(rec)
    return by_server


def _worked_example(logs: Path) -> None:
    """The worked example's events rendered as each server logs them, in every export format."""
    by_server = _worked_example_records()
    for fmt, write in WRITERS.items():
        d = logs / f"sim-{fmt}"
        d.mkdir()
        for server, recs in sorted(by_server.items()):
            write(recs, d, server)


def _varied_share(tmp: Path) -> Path:
    logs = tmp / "logs"
    logs.mkdir()
    for name in ("EX07.xml", "LDNPF1_application.csv", "PARPF2.csv", "replids.csv"):  # replids.csv: no export
        shutil.copy(SAMPLES / name, logs / name)
    for evtx in sorted((SAMPLES / "worked-example").glob("*.evtx")):
        shutil.copy(evtx, logs / f"we-{evtx.name}")
    recs = [
        ExportRecord(
            f"PF{i % 3}.example.test",
            f["event_id"],
            parse_ts(f"2026-11-02T08:{i:02d}:00Z"),
            f["text"].replace("\n", "\r\n"),
            [],
            f["provider"],
        )
        for i, f in enumerate(PUBLISHED)
    ]
    write_wevtutil_xml(recs, logs / "published.xml")
    cut = (logs / "published.xml").read_bytes()
    (logs / "published-cut.xml").write_bytes(cut[: len(cut) * 2 // 3])  # in pieces, then read whole
    write_export_csv(recs, logs / "published.csv")
    _worked_example(logs)
    ex07 = fx.EX07_EVENTS
    write_wevtutil_xml(ex07, logs / "EX07-again.xml")  # a re-export: duplicates
    changed = [
        ExportRecord(r.server, r.event_id, r.ts, r.message.replace("CN max: 1-", "CN max: 1-F"), r.strings)
        for r in ex07
    ]
    write_wevtutil_xml(changed, logs / "EX07-changed.xml")  # the same messages saying otherwise: rejects
    whole = (logs / "EX07.xml").read_bytes()
    (logs / "EX07-cut.xml").write_bytes(whole[: len(whole) * 2 // 3])  # cut off inside a record
    (logs / "EX07-garbage.xml").write_bytes(whole[:900] + b"\x00garbage" + whole[900:])
    write_events_xml(ex07, logs / "EX07-saved.xml")  # Event Viewer: an <Events> root, UTF-16
    (logs / "EX07-quiet.xml").write_bytes(b"")
    (logs / "gone.xml").symlink_to(logs / "moved-away.xml")  # went between listing and reading
    (logs / "EX07-junk.xml").write_text(  # text between records: read whole, as the reference reads it
        event_xml(ex07[0], 1, rendered=True) + "junk" + event_xml(ex07[1], 2, rendered=True), encoding="utf-8"
    )
    trap = (
        f"<Event xmlns='{NS}'><System><Provider Name='MSExchangeIS Public Store'/><EventID>3020</EventID>"
        "<TimeCreated SystemTime='2026-11-02T08:00:00Z'/><Computer>EX07</Computer></System><RenderingInfo>"
        f"<Message><![CDATA[not a boundary: </Event><Event xmlns='{NS}'>]]></Message></RenderingInfo></Event>"
    )
    (logs / "EX07-cdata.xml").write_text(trap + event_xml(ex07[2], 2, rendered=True), encoding="utf-8")
    write_wevtutil_xml(odd_messages(), logs / "odd.xml")
    return logs


def test_spark_ingest_equals_the_reference_on_a_varied_share(spark: Any, tmp_path: Path) -> None:
    logs = _varied_share(tmp_path)
    opts: dict[str, Any] = {"replids": str(SAMPLES / "replids.csv"), "default_offset_min": 60}
    ref = run_ingest([str(logs)], tmp_path / "ref", **opts)
    assert ref["status"] == "partial" and ref["duplicates"] and ref["files_empty"]
    assert any("another event for the same message" in r for r in ref["reject_reasons"])
    build_reasons = {
        "internal Message ID and no Server line: the sender is unknown",
        "content event without a Folder line",
        "incoming event stamped before its outgoing event (clock skew between servers?)",
        "incoming event on the message's own sender",
        "the same Message ID is logged as sent by another server",
        "no outgoing event, no Server line, and the Message ID names no known server",
        "outgoing event with no matching incoming event and no known replica to send to",
        f"CN range of {0xFFFFF:,} own CNs is wider than 100,000",
    }
    assert build_reasons <= set(ref["reject_reasons"])  # every step of the build rejects some record
    got = run_ingest_spark(
        IngestSettings(
            logs=(str(logs),),
            out=str(tmp_path / "spark"),
            split_bytes=SPLIT,
            build_records_per_part=PER_PART,
            **opts,
        )
    )
    assert got.mode.startswith("full ingest: no state") and got.new_files == ref["formats"].__len__()
    _same_outputs(tmp_path / "ref", tmp_path / "spark")


def _export(recs: list[ExportRecord], path: Path, first_id: int) -> None:
    """A wevtutil export whose EventRecordIDs start at ``first_id`` (a later export of one log)."""
    path.write_text(
        "".join(event_xml(r, first_id + i, rendered=True) for i, r in enumerate(recs)), encoding="utf-8"
    )


def test_a_growing_share_is_read_incrementally_and_equals_a_fresh_ingest(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = SAMPLES / "worked-example"
    by_server = _worked_example_records()
    logs, out, ref = tmp_path / "logs", tmp_path / "out", tmp_path / "ref"
    logs.mkdir()
    servers = sorted(by_server)
    first = {s: len(by_server[s]) // 2 for s in servers}
    for s in servers:  # each server's export of the first half of its log
        _export(by_server[s][: first[s]], logs / f"{s}-1.xml", 1)
    argv = [
        "ingest",
        "--logs",
        str(logs),
        "--out",
        str(out),
        "--topology",
        str(folder / "topology.json"),
        "--engine",
        "spark",
    ]
    assert main(argv) == 0
    assert capsys.readouterr().out.startswith("full ingest: no state of an earlier ingest")

    # the later exports overlap the earlier ones by a few records (the same EventRecordIDs)
    for s in servers:
        start = first[s] - 3
        _export(by_server[s][start:], logs / f"{s}-2.xml", start + 1)
    new = sum(len(by_server[s]) - first[s] + 3 for s in servers)
    old = sum(first.values())
    assert main(argv) == 0
    printed = capsys.readouterr().out
    said, built = printed.splitlines()[0].rsplit("; ", 1)
    assert said == (
        f"incremental: {len(servers)} new files, {new - 3 * len(servers):,} new "
        f"records, {3 * len(servers)} already read; {len(servers)} files "
        f"({old:,} records) not read again"
    )
    # the message steps ran over the groups the new records reach, the others' rows kept
    again = re.fullmatch(
        r"built again (\d+) message keys and (\d+) of (\d+) folders, the others kept from 1 earlier run\(s\)",
        built,
    )
    layers = json.loads((out / ".ingest_state" / "state.json").read_text(encoding="utf-8"))["build"]["layers"]
    rows = out / ".ingest_state" / "rows"
    keys = {
        k
        for x in layers
        for k in pq.read_table(rows / x["dataset"] / "groups", columns=["msg_key"]).column(0).to_pylist()
    }
    assert again is not None and 0 < int(again[1]) < len(keys - {None}), built
    assert 0 < int(again[2]) <= int(again[3]), built
    run_ingest([str(logs)], ref, topology=str(folder / "topology.json"))
    _same_outputs(ref, out)
    summary = json.loads((out / "ingest_summary.json").read_text(encoding="utf-8"))
    assert summary["duplicates"] == 3 * len(servers) and summary["accounted"]

    # a run that dies before its outputs are complete leaves the last outputs and state as they were
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    state = (out / ".ingest_state" / "state.json").read_bytes()
    rows = sorted(p.name for p in (out / ".ingest_state" / "rows").iterdir())
    (logs / "EX04-1.xml").write_bytes((logs / f"{servers[0]}-1.xml").read_bytes())
    (out / "ingest_summary.json.partial").mkdir()  # the summary cannot be written
    assert main(argv) == 2
    assert "ingest_summary.json.partial: Is a directory" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    assert (out / ".ingest_state" / "state.json").read_bytes() == state
    assert sorted(p.name for p in (out / ".ingest_state" / "rows").iterdir()) == rows  # its rows removed
    (out / "ingest_summary.json.partial").rmdir()
    (logs / "EX04-1.xml").unlink()

    # nothing new: nothing read, built or written, said on one line
    reused = f"0 new files, 0 new records, 0 already read; {2 * len(servers)} files ({old + new:,} records) not read again"
    written = _stamps(out)
    assert main(argv) == 0
    assert capsys.readouterr().out == f"incremental: {reused}; nothing new: the outputs stay as they are\n"
    assert _stamps(out) == written
    _same_outputs(ref, out)
    # the same files, but another --topology (none), or an output gone: built again from the rows
    # kept; the message steps whole when --topology changed, else not at all
    no_topology = [a for a in argv if a not in ("--topology", str(folder / "topology.json"))]
    whole = "built whole: --replids, --topology or --strict changed"
    kept = r"built again 0 message keys and 0 of \d+ folders, the others kept from 1 earlier run\(s\)"
    for args, gone, how in (
        (no_topology, None, whole),
        (no_topology, out / "events", kept),
        (argv, None, whole),
    ):
        if gone is not None:
            shutil.rmtree(gone)
        assert main(args) == 0
        said = capsys.readouterr().out.splitlines()[0]
        assert re.fullmatch(
            re.escape(f"incremental: {reused}; ") + (how if how is kept else re.escape(how)), said
        )
        run_ingest([str(logs)], ref, topology=str(folder / "topology.json") if args is argv else None)
        _same_outputs(ref, out)
        assert (out / "events").is_dir()
    assert main(argv) == 0
    assert capsys.readouterr().out.endswith("; nothing new: the outputs stay as they are\n")
    assert main([*argv, "--time-offset=+01:00"]) == 0
    assert capsys.readouterr().out.startswith("full ingest: --time-offset changed")


def test_spark_ingest_exit_statuses(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Partial is 3 with each broken file on stderr; ``--strict`` and no readable file are 2, nothing written."""
    logs = tmp_path / "logs"
    logs.mkdir()
    write_wevtutil_xml(fx.EX07_EVENTS, logs / "ex07.xml")
    (logs / "cut.xml").write_bytes((logs / "ex07.xml").read_bytes()[:-30])
    out = tmp_path / "out"
    base = ["ingest", "--logs", str(logs), "--out", str(out), "--engine", "spark"]
    assert main([*base, "--strict"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cut.xml" in err and "--strict: nothing written" in err
    assert not out.exists() or not (out / "events.jsonl").exists()
    assert main(base) == 3
    err = capsys.readouterr().err
    assert (
        "partial: 1 of 2 files could not be read whole" in err and "cut.xml: unreadable after record" in err
    )
    assert main(base) == 3  # nothing new: still partial, said again
    got = capsys.readouterr()
    assert got.out.endswith("nothing new: the outputs stay as they are\n") and got.err == err
    (logs / "ex07.xml").write_bytes(b"\x00\x01 not an export")
    (logs / "cut.xml").write_bytes(b"<Event")
    before = (out / "events.jsonl").read_bytes()
    assert main(base) == 2
    assert "no file could be read, nothing written" in capsys.readouterr().err
    assert (out / "events.jsonl").read_bytes() == before


def test_a_later_export_read_again_whole_counts_what_it_repeats_once(spark: Any, tmp_path: Path) -> None:
    """A new export read in pieces that turns out not to be plain is read again whole, into a folder
    of its own: the rows its pieces wrote first are no rows of the share, neither as records nor
    as records repeated from an earlier export."""
    recs = [r for rs in _worked_example_records().values() for r in rs]
    server = recs[0].server
    mine = [r for r in recs if r.server == server]
    assert len(mine) >= 6
    logs, out, ref = tmp_path / "logs", tmp_path / "out", tmp_path / "ref"
    logs.mkdir()
    _export(mine[:4], logs / "a-1.xml", 1)
    settings = IngestSettings(logs=(str(logs),), out=str(out), split_bytes=1_500)
    assert run_ingest_spark(settings).mode.startswith("full ingest")
    # the later export repeats the first's last two records, and has text before its last record:
    # its first pieces are read (and their rows written) before the one that is not plain
    later = [event_xml(r, 3 + i, rendered=True) for i, r in enumerate(mine[2:])]
    (logs / "a-2.xml").write_text("".join(later[:-1]) + "junk" + later[-1], encoding="utf-8")
    other = [r for r in recs if r.server != server][:3]
    _export(other, logs / "b-1.xml", 1)  # a plain new export: its rows share the run's folder
    got = run_ingest_spark(settings)
    assert got.mode == (
        f"incremental: 2 new files, {len(mine) - 4 + 3:,} new records, 2 already read; "
        "1 files (4 records) not read again; built whole: the share names new servers"
    )
    run_ingest([str(logs)], ref)
    _same_outputs(ref, out)


def test_an_export_that_leaves_the_share_and_comes_back_is_read_once(spark: Any, tmp_path: Path) -> None:
    """Its first rows stay in the first run's dataset (another file's rows live there too); when
    it comes back it is read again into a dataset of its own, and only those rows are its."""
    by_server = _worked_example_records()
    logs, out, ref, away = tmp_path / "logs", tmp_path / "out", tmp_path / "ref", tmp_path / "away"
    logs.mkdir()
    away.mkdir()
    a, b = sorted(by_server)[:2]
    _export(by_server[a], logs / "a.xml", 1)
    _export(by_server[b], logs / "b.xml", 1)
    settings = IngestSettings(logs=(str(logs),), out=str(out))
    assert run_ingest_spark(settings).mode.startswith("full ingest")
    (logs / "b.xml").rename(away / "b.xml")
    assert run_ingest_spark(settings).mode.startswith("incremental: 0 new files")
    (away / "b.xml").rename(logs / "b.xml")  # the same path, size and time: the same file key
    got = run_ingest_spark(settings)
    assert got.mode.startswith(f"incremental: 1 new files, {len(by_server[b]):,} new records, 0 already read")
    run_ingest([str(logs)], ref)
    _same_outputs(ref, out)


def test_later_exports_build_on_the_layers_of_the_runs_before(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each run equals a fresh ingest of the share as it is: the message steps over the groups the
    new exports reach, on two layers (a new export that sorts before the old ones, its overlap
    kept as its copy), then written as one layer when they would be too many; and whole when the
    files are named otherwise or come in another order."""
    by_server = _worked_example_records()
    logs, out, ref = tmp_path / "logs", tmp_path / "out", tmp_path / "ref"
    logs.mkdir()
    servers = sorted(by_server)
    third = {s: len(by_server[s]) // 3 for s in servers}

    def ingest(*paths: str) -> str:
        mode = run_ingest_spark(IngestSettings(logs=paths, out=str(out))).mode
        run_ingest(list(paths), ref)
        _same_outputs(ref, out)
        return mode.rsplit("; ", 1)[-1]

    for s in servers:
        _export(by_server[s][: third[s]], logs / f"{s}-1.xml", 1)
    assert ingest(str(logs)).startswith("full ingest")
    for s in servers:  # overlapping the first by two records each
        _export(by_server[s][third[s] - 2 : 2 * third[s]], logs / f"{s}-2.xml", third[s] - 1)
    assert re.fullmatch(
        r"built again [1-9]\d* message keys and [1-9]\d* of \d+ folders, the others kept from 1 earlier run\(s\)",
        ingest(str(logs)),
    )
    for s in servers:  # named to sort before the others
        _export(by_server[s][2 * third[s] - 2 :], logs / f"{s}-0.xml", 2 * third[s] - 1)
    assert re.fullmatch(
        r"built again [1-9]\d* message keys and [1-9]\d* of \d+ folders, the others kept from 2 earlier run\(s\)",
        ingest(str(logs)),
    )
    layers = json.loads((out / ".ingest_state" / "state.json").read_text(encoding="utf-8"))["build"]["layers"]
    assert [x["whole"] for x in layers] == [True, False, False]

    # the run that would keep MAX_LAYERS writes every row it used as one layer, which the next
    # run builds on; the other layers' folders are removed
    monkeypatch.setattr(build_cache, "MAX_LAYERS", 4)
    s = servers[0]
    _export(by_server[s][-3:], logs / f"{s}-9.xml", len(by_server[s]) - 2)
    assert re.fullmatch(
        r"built again \d+ message keys and \d+ of \d+ folders, the others kept from 3 earlier "
        r"run\(s\), all written as one layer",
        ingest(str(logs)),
    )
    state = json.loads((out / ".ingest_state" / "state.json").read_text(encoding="utf-8"))["build"]
    assert [x["whole"] for x in state["layers"]] == [True]
    rows = out / ".ingest_state" / "rows"
    assert not [p for p in rows.iterdir() if p.name.endswith("-build")]
    assert {p.name for p in (rows / state["layers"][0]["dataset"]).iterdir()} == {
        "groups",
        "messages",
        "derived",
        "folders",
    }
    s = servers[1]
    _export(by_server[s][-3:], logs / f"{s}-9.xml", len(by_server[s]) - 2)
    assert re.fullmatch(
        r"built again \d+ message keys and \d+ of \d+ folders, the others kept from 1 earlier run\(s\)",
        ingest(str(logs)),
    )

    _export(by_server[servers[0]][-2:], logs / "again.xml", len(by_server[servers[0]]) - 1)
    assert ingest(str(logs / ".." / "logs")) == "built whole: the files are named otherwise (--logs)"
    files = sorted(str(p) for p in logs.iterdir())
    assert ingest(*reversed(files)) == "built whole: the files are in another order"


FOLDERS_AGAIN = re.compile(
    r"built again ([1-9]\d*) message keys and ([1-9]\d*) of (\d+) folders, the others kept from (\d) earlier run\(s\)"
)


def test_a_small_export_derives_again_only_the_folders_it_reaches(spark: Any, tmp_path: Path) -> None:
    """In an organisation of 40 folders, an export of a few records of one server derives again
    only the folders of the messages they reach, the others' lines kept from the layers: each run
    equal to a fresh ingest, also when the new export sorts before the old ones (every kept line's
    place moved) and when the rest of every server's records arrive."""
    _, by_server = render(tmp_path / "sim", 4, 40, 1)
    logs, out, ref = tmp_path / "logs", tmp_path / "out", tmp_path / "ref"
    logs.mkdir()
    servers = sorted(by_server)
    cut = {s: int(len(recs) * 0.9) for s, recs in by_server.items()}

    def ingest() -> str:
        mode = run_ingest_spark(IngestSettings(logs=(str(logs),), out=str(out))).mode
        run_ingest([str(logs)], ref)
        _same_outputs(ref, out)
        return mode.rsplit("; ", 1)[-1]

    for s in servers:
        _export(by_server[s][: cut[s]], logs / f"{s}-1.xml", 1)
    assert ingest().startswith("full ingest")
    # a few records of one server, then of another, in an export named to sort before all others
    for n, (s, name) in enumerate([(servers[1], f"{servers[1]}-2.xml"), (servers[2], f"0-{servers[2]}.xml")]):
        _export(by_server[s][cut[s] : cut[s] + 4], logs / name, cut[s] + 1)
        said = FOLDERS_AGAIN.fullmatch(ingest())
        assert said is not None and int(said[2]) < int(said[3]) // 2 and int(said[4]) == n + 1, said
        cut[s] += 4
    for s in servers:  # the rest of every server's records
        _export(by_server[s][cut[s] :], logs / f"{s}-3.xml", cut[s] + 1)
    assert FOLDERS_AGAIN.fullmatch(ingest())


def test_the_engines_taking_turns_equal_a_fresh_ingest(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """In this process, then on Spark, then here again: Spark reads the whole share (the outputs
    are not its own), and a run here reads what it has not kept and removes what Spark kept."""
    by_server = _worked_example_records()
    servers = sorted(by_server)
    logs, out = tmp_path / "logs", tmp_path / "out"
    logs.mkdir()
    cut = {s: (len(by_server[s]) // 3, 2 * len(by_server[s]) // 3) for s in servers}

    def ingest(engine: str) -> str:
        assert main(["ingest", "--logs", str(logs), "--out", str(out), "--engine", engine]) == 0
        return capsys.readouterr().out.splitlines()[0]

    def fresh(name: str) -> Path:
        run_ingest([str(logs)], tmp_path / name)
        return tmp_path / name

    for s in servers:
        _export(by_server[s][: cut[s][0]], logs / f"{s}-1.xml", 1)
    assert ingest("python").startswith("full ingest: no records kept")
    for s in servers:
        _export(by_server[s][cut[s][0] : cut[s][1]], logs / f"{s}-2.xml", cut[s][0] + 1)
    assert ingest("spark") == f"full ingest: no state of an earlier ingest in {out}"
    _same_outputs(fresh("ref2"), out)
    assert (out / ".ingest_state" / "rows").is_dir()
    for s in servers:
        _export(by_server[s][cut[s][1] :], logs / f"{s}-3.xml", cut[s][1] + 1)
    said = ingest("python")
    assert said.startswith(f"incremental: {2 * len(servers)} new files, "), said  # Spark's files, and the new
    assert said.endswith(
        f"; {len(servers)} files ({sum(c[0] for c in cut.values()):,} records) not read again"
    )
    _same_outputs(fresh("ref3"), out)
    assert (
        not (out / ".ingest_state" / "rows").exists() and not (out / ".ingest_state" / "state.json").exists()
    )


def test_a_topology_with_its_stores_in_another_order_is_built_again(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A server's own store is the first of its stores in the file: the same stores in another
    order make other outputs, so neither the outputs nor the layers of the build are kept."""
    folder = SAMPLES / "worked-example"
    by_server = _worked_example_records()
    logs, out = tmp_path / "logs", tmp_path / "out"
    logs.mkdir()
    for s in sorted(by_server):
        _export(by_server[s], logs / f"{s}.xml", 1)
    topo = json.loads((folder / "topology.json").read_text(encoding="utf-8"))
    extra = {**topo["stores"][0], "name": "PFS0"}  # a second store on the first store's server
    path = tmp_path / "topology.json"
    argv = ["ingest", "--logs", str(logs), "--out", str(out), "--topology", str(path), "--engine", "spark"]
    path.write_text(json.dumps({**topo, "stores": [*topo["stores"], extra]}), encoding="utf-8")
    assert main(argv) == 0
    path.write_text(json.dumps({**topo, "stores": [extra, *topo["stores"]]}), encoding="utf-8")
    assert main(argv) == 0
    assert "nothing new" not in capsys.readouterr().out
    run_ingest([str(logs)], tmp_path / "ref", topology=str(path))
    _same_outputs(tmp_path / "ref", out)
