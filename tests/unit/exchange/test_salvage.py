"""Ingest salvages: exports cut off at many offsets give every complete record before the cut and
one reject for the rest; a file that cannot be read at all is one reject among good files; the
exit status tells partial (3) from done (0) and from an operator error (2); ``--strict`` stops.

The oracle for "complete before the cut" is the writers themselves: the export of the first k
records is (up to its closing tag) a prefix of the export of all of them, so its length is where
record k ends; for ``.evtx``, the free-space offset of the last chunk of that shorter file."""

from __future__ import annotations

import dataclasses
import json
import os
import struct
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from pfscope.app.cli import main
from pfscope.spark_jobs.exchange import run_ingest
from pfscope.spark_jobs.exchange.formats import EVTX_CHUNK, EVTX_HEADER, InputError, RawRecord, read_records
from pfscope.spark_jobs.published.runs import LOCK
from tests.render import ExportRecord
from tests.unit.exchange import three_servers as fx
from tests.unit.exchange.exports import (
    write_event_viewer_csv,
    write_events_xml,
    write_evtx,
    write_export_csv,
    write_wevtutil_xml,
)

Writer = Callable[[Sequence[ExportRecord], Path], None]


def _export_csv_utf16(records: Sequence[ExportRecord], path: Path) -> None:
    """Windows PowerShell's ``Export-Csv -Encoding Unicode``: the same CSV in UTF-16 LE."""
    write_export_csv(records, path)
    path.write_bytes(path.read_bytes().decode("utf-8-sig").encode("utf-16"))


def _evtx_records(n: int) -> list[ExportRecord]:
    recs = []
    for i in range(n):
        r = fx.rec(fx.PAR, 3030 if i % 2 else 3020, "2026-11-02T08:00:00Z", "")
        r.ts += i * 1_000_000
        r.strings = [
            "0x4",
            f"<M{i}@PARPF2.corp.example>",
            f"(7-4B1C) {fx.LONG}",
            f"7-{i + 1:X}",
            f"7-{i + 1:X}",
            "0",
            "{0}",
            fx.DN_EX07,
        ]
        recs.append(r)
    return recs


def _read(path: Path, as_source: Path) -> tuple[list[RawRecord], str | None]:
    """The records read before the reader stopped, and its InputError (any other error fails)."""
    got: list[RawRecord] = []
    try:
        for r in read_records(str(path)):
            got.append(dataclasses.replace(r, source=str(as_source)))
    except InputError as e:
        return got, str(e)
    return got, None


def _text_ends(
    write: Writer, records: Sequence[ExportRecord], tmp: Path, suffix: str, closing: bytes = b""
) -> list[int]:
    """Byte offset where record k ends (k = 0: the header), from the exports of the first k."""
    ends = []
    for k in range(len(records) + 1):
        p = tmp / f"prefix{k}{suffix}"
        write(records[:k], p)
        ends.append(p.stat().st_size - len(closing))
        p.unlink()
    return ends


def _evtx_ends(records: Sequence[ExportRecord], tmp: Path) -> list[int]:
    ends = [EVTX_HEADER + 512]
    for k in range(1, len(records) + 1):
        p = tmp / "prefix.evtx"
        write_evtx(records[:k], p)
        b = p.read_bytes()
        last = EVTX_HEADER + (len(b) - EVTX_HEADER - EVTX_CHUNK)
        ends.append(last + struct.unpack_from("<I", b, last + 48)[0])  # the chunk's free-space offset
    return ends


def _cuts(size: int, ends: list[int], step: int) -> list[int]:
    near = {e + d for e in ends for d in (-4, -3, -2, -1, 0, 1)}
    return sorted({c for c in (*range(0, size, step), *near) if 0 <= c < size})


CASES = {
    # name: (writer, records, file suffix, bytes that close the file after its last record, line break)
    "wevtutil-xml": (write_wevtutil_xml, fx.EX07_EVENTS, ".xml", b"", b""),
    "event-viewer-xml-utf16": (
        write_events_xml,
        fx.EX07_EVENTS,
        ".xml",
        "</Events>".encode("utf-16-le"),
        b"",
    ),
    "event-viewer-csv": (write_event_viewer_csv, fx.LDN_EVENTS, ".csv", b"", b"\r\n"),
    "export-csv": (write_export_csv, fx.PAR_EVENTS, ".csv", b"", b"\r\n"),
    "export-csv-utf16": (_export_csv_utf16, fx.PAR_EVENTS, ".csv", b"", "\r\n".encode("utf-16-le")),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_text_export_cut_anywhere_keeps_every_complete_record(tmp_path: Path, case: str) -> None:
    write, records, suffix, closing, eol = CASES[case]
    full_path = tmp_path / f"full{suffix}"
    write(records, full_path)
    data = full_path.read_bytes()
    full, err = _read(full_path, full_path)
    assert err is None and len(full) == len(records) and all(r.problem is None for r in full)
    ends = _text_ends(write, records, tmp_path, suffix, closing)
    unit = 2 if "utf16" in case else 1
    # no reject where the cut loses nothing: after a record's line break, or (CSV) between its CR
    # and LF; a CSV row is whole once its CR is there (every exporter ends rows with CR LF)
    whole = {e - j * unit for e in ends[1:] for j in range(max(1, len(eol) // unit))}
    if eol:  # a header line and nothing else is an empty export
        whole |= {ends[0] - j * unit for j in range(len(eol) // unit)}
    cr = max(0, len(eol) - unit)  # bytes after the CR
    cut_path = tmp_path / f"cut{suffix}"
    for cut in _cuts(len(data), ends, max(5, len(data) // 1000)):
        cut_path.write_bytes(data[:cut])
        got, err = _read(cut_path, full_path)
        k = max(i for i, e in enumerate(ends) if e - cr <= cut or i == 0)
        assert got == full[:k], (case, cut)  # nothing before the cut is lost, nothing invented
        enc = "utf-16-le" if "utf16" in case else "utf-8"
        no_text = cut == 0 or (
            suffix == ".csv" and not data[:cut].decode(enc, "ignore").strip("\ufeff \r\n\t")
        )
        if no_text:  # a file with nothing in it is an empty export (a quiet server), not a fault
            assert got == [] and err is None, (case, cut, err)
        elif closing or cut not in whole:
            assert err is not None, (case, cut)  # the broken tail is said
            assert str(cut_path) in err
            if cut and k:
                assert "cut off" in err or "not well-formed" in err, err
        else:
            assert err is None, (case, cut, err)


def test_an_evtx_cut_anywhere_keeps_every_complete_record(tmp_path: Path) -> None:
    """pyevtx-rs passes over a cut chunk without a word: the reader reads its whole records itself."""
    records = _evtx_records(70)
    full_path = tmp_path / "PARPF2.evtx"
    write_evtx(records, full_path)
    data = full_path.read_bytes()
    assert (len(data) - EVTX_HEADER) // EVTX_CHUNK == 3  # the records fill three chunks
    full, err = _read(full_path, full_path)
    assert err is None and [r.record_id for r in full] == list(range(1, 71))
    ends = _evtx_ends(records, tmp_path)
    assert ends == sorted(ends)
    cut_path = tmp_path / "cut.evtx"
    chunk_starts = [EVTX_HEADER + i * EVTX_CHUNK for i in range(3)]
    cuts = _cuts(len(data), ends + chunk_starts, 997)
    assert len(cuts) > 500
    for cut in cuts:
        cut_path.write_bytes(data[:cut])
        got, err = _read(cut_path, full_path)
        k = max(i for i, e in enumerate(ends) if e <= cut or i == 0)
        assert got == full[:k], cut
        if cut == 0:  # nothing at all: an empty export, not a fault
            assert err is None
            continue
        assert err is not None and str(cut_path) in err, cut  # an .evtx cut short is never whole
        if cut >= EVTX_HEADER:
            assert f"the file ends at byte {cut:,}" in err and f"after record {k} " in err, err


def test_garbage_in_the_middle_of_an_xml_export(tmp_path: Path) -> None:
    full_path = tmp_path / "ex07.xml"
    write_wevtutil_xml(fx.EX07_EVENTS, full_path)
    full, _ = _read(full_path, full_path)
    data = full_path.read_bytes()
    third = data.index(b"<Event ", data.index(b"</Event>") + 1)
    third = data.index(b"<Event ", data.index(b"</Event>", third) + 1)  # where record 3 begins
    bad = tmp_path / "bad.xml"
    at = data.index(b"<System>", third) + 8
    bad.write_bytes(data[:at] + b"\xff\xfe\x00garbage" + data[at:])
    got, err = _read(bad, full_path)
    assert got == full[:2] and err is not None and f"not UTF-8 text at byte {at:,}" in err
    assert "inside record 3" in err
    bad.write_bytes(data[:third] + b"<Event><<" + data[third:])
    got, err = _read(bad, full_path)
    assert got == full[:2] and err is not None and "not well-formed XML at line" in err


def _good_logs(d: Path) -> list[Path]:
    d.mkdir(exist_ok=True)
    write_wevtutil_xml(fx.EX07_EVENTS, d / "ex07.xml")
    write_event_viewer_csv(fx.LDN_EVENTS, d / "LDNPF1.csv", offset_min=-300)
    write_export_csv(fx.PAR_EVENTS, d / "par.csv")
    return [d / "ex07.xml", d / "LDNPF1.csv", d / "par.csv"]


def _bad_logs(d: Path) -> dict[str, str]:
    """Files that cannot be read at all, and what their reject says."""
    (d / "noise.evtx").write_bytes(os.urandom(3000))
    (d / "PARPF9.csv").write_bytes(b"\x00\x01\x02" + os.urandom(3000))
    (d / "notes.csv").write_text("Name,Value\r\nowner,ops\r\n", encoding="utf-8")
    os.symlink(d / "moved-away.xml", d / "gone.xml")  # a file that went between listing and reading
    return {
        "noise.evtx": "no ElfFile signature",
        "PARPF9.csv": "binary data",
        "notes.csv": "needs a time and an event ID column",
        "gone.xml": "cannot read: No such file",
    }


def _out(out: Path, name: str) -> list[dict]:
    return [json.loads(x) for x in (out / name).read_text(encoding="utf-8").splitlines()]


def test_unreadable_files_among_good_ones_are_rejected_and_the_rest_ingested(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "replids.csv").write_text(fx.REPLIDS_CSV, encoding="utf-8")
    common = ["--replids", str(tmp_path / "replids.csv"), "--time-offset=-05:00"]
    good = _good_logs(tmp_path / "good")
    assert main(["ingest", "--logs", *map(str, sorted(good)), "--out", str(tmp_path / "alone"), *common]) == 0
    alone = json.loads((tmp_path / "alone" / "ingest_summary.json").read_text(encoding="utf-8"))
    assert alone["status"] == "complete" and alone["files_broken"] == []

    mixed = tmp_path / "mixed"
    _good_logs(mixed)
    bad = _bad_logs(mixed)
    capsys.readouterr()
    assert main(["ingest", "--logs", str(mixed), "--out", str(tmp_path / "out"), *common]) == 3
    err = capsys.readouterr().err
    assert err.startswith(
        f"pfscope ingest: partial: {len(bad)} of {len(bad) + 3} files could not be read whole"
    )
    out = tmp_path / "out"
    # every good file ingested exactly as alone
    assert (out / "events.jsonl").read_text() == (tmp_path / "alone" / "events.jsonl").read_text()
    s = json.loads((out / "ingest_summary.json").read_text(encoding="utf-8"))
    assert s["status"] == "partial" and s["accounted"]
    assert s["records_read"] == alone["records_read"] + len(bad)
    assert s["rejected"] == alone["rejected"] + len(bad)
    assert s["reject_reasons"]["unreadable file"] == len(bad)
    broken = {Path(b["file"]).name: b for b in s["files_broken"]}
    assert set(broken) == set(bad)
    rejects = {
        Path(r["source"]).name: r
        for r in _out(out, "ingest_rejects.jsonl")
        if r["reason"].startswith("unreadable")
    }
    assert set(rejects) == set(bad)
    for name, why in bad.items():
        assert why in broken[name]["reason"] and broken[name]["complete_records"] == 0
        assert rejects[name]["reason"] == broken[name]["reason"] and rejects[name]["record"] == 1
        assert f"{mixed / name}: unreadable file: " in err


def test_empty_exports_are_a_quiet_server_not_a_fault(tmp_path: Path) -> None:
    (tmp_path / "replids.csv").write_text(fx.REPLIDS_CSV, encoding="utf-8")
    common = ["--replids", str(tmp_path / "replids.csv"), "--time-offset=-05:00"]
    good = _good_logs(tmp_path / "good")
    assert main(["ingest", "--logs", *map(str, sorted(good)), "--out", str(tmp_path / "alone"), *common]) == 0
    logs = tmp_path / "logs"
    _good_logs(logs)
    (logs / "quiet.xml").write_bytes(b"")  # wevtutil qe when no event matched
    (logs / "quiet.csv").write_text("\r\n\r\n", encoding="utf-8")
    assert main(["ingest", "--logs", str(logs), "--out", str(tmp_path / "out"), *common]) == 0
    s = json.loads((tmp_path / "out" / "ingest_summary.json").read_text(encoding="utf-8"))
    assert s["status"] == "complete" and s["files_broken"] == []
    assert sorted(Path(f).name for f in s["files_empty"]) == ["quiet.csv", "quiet.xml"]
    assert (tmp_path / "out" / "events.jsonl").read_text() == (
        tmp_path / "alone" / "events.jsonl"
    ).read_text()


def test_strict_keeps_all_or_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logs = tmp_path / "logs"
    _good_logs(logs)
    write_evtx(_evtx_records(40), logs / "PARPF2.evtx")
    data = (logs / "PARPF2.evtx").read_bytes()
    (logs / "PARPF2.evtx").write_bytes(data[: EVTX_HEADER + EVTX_CHUNK + 9000])  # a wevtutil killed
    out = tmp_path / "out"
    assert main(["ingest", "--logs", str(logs), "--out", str(out), "--strict"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(
        f"pfscope ingest: {logs / 'PARPF2.evtx'}: the file ends at byte"
    )
    assert "--strict: nothing written" in err
    assert not out.exists()
    # without --strict: partial, the records of the whole chunk and of the cut one are in
    assert main(["ingest", "--logs", str(logs), "--out", str(out)]) == 3
    s = json.loads((out / "ingest_summary.json").read_text(encoding="utf-8"))
    [b] = s["files_broken"]
    assert b["file"] == str(logs / "PARPF2.evtx") and b["complete_records"] > 29
    assert s["files"][b["file"]] == b["complete_records"] + 1 and s["accounted"]


def test_when_no_file_can_be_read_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    more = len(_bad_logs(logs)) - 1
    out = tmp_path / "out"
    assert main(["ingest", "--logs", str(logs), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1
        and f"(and {more} more unreadable files); no file could be read, nothing written" in err
    )
    assert not out.exists()


@pytest.mark.parametrize("case", ["wevtutil-xml", "export-csv-utf16", "evtx"])
def test_cut_exports_keep_the_accounting(tmp_path: Path, case: str) -> None:
    """Through run_ingest, with a good file beside: the cut file's complete records and its one
    reject are read, the summary's identity holds, the good file is whole."""
    if case == "evtx":
        write: Writer = write_evtx
        records: Sequence[ExportRecord] = _evtx_records(40)
        suffix = ".evtx"
    else:
        write, records, suffix = CASES[case][:3]
    logs = tmp_path / "logs"
    good = _good_logs(logs)[0]
    full = tmp_path / f"full{suffix}"
    write(records, full)
    data = full.read_bytes()
    cut_path = logs / f"PARPF2{suffix}"
    step = max(1, len(data) // 23)
    for cut in range(step, len(data), step):
        cut_path.write_bytes(data[:cut])
        expected, err = _read(cut_path, cut_path)
        s = run_ingest([str(logs)], tmp_path / "out")
        assert s["accounted"], cut
        assert s["files"][str(good)] == len(fx.EX07_EVENTS)
        if err is None:
            assert s["status"] == "complete" and s["files"].get(str(cut_path), 0) == len(expected)
            continue
        assert s["status"] == "partial"
        [b] = s["files_broken"]
        assert b["file"] == str(cut_path) and b["complete_records"] == len(expected)
        assert s["files"][str(cut_path)] == len(expected) + 1
        tail = [
            r
            for r in _out(tmp_path / "out", "ingest_rejects.jsonl")
            if r["source"] == str(cut_path) and r["reason"].startswith("unreadable")
        ]
        assert [r["record"] for r in tail] == [len(expected) + 1]
        assert tail[0]["reason"] == b["reason"] and err.removeprefix(f"{cut_path}: ") in b["reason"]


def _files(out: Path) -> dict[Path, bytes]:
    """Every file under ``out`` and its bytes, but the lock's (it names the run that holds it)."""
    return {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file() and p.name != LOCK}


def test_a_write_that_fails_part_way_leaves_the_previous_output_whole(tmp_path: Path) -> None:
    """A full disk on the fourth file must not leave a new log beside an old topology."""
    (tmp_path / "replids.csv").write_text(fx.REPLIDS_CSV, encoding="utf-8")
    common = ["--replids", str(tmp_path / "replids.csv"), "--time-offset=-05:00"]
    good = sorted(_good_logs(tmp_path / "logs"))
    out = tmp_path / "out"
    assert main(["ingest", "--logs", str(good[0]), "--out", str(out), *common]) == 0
    before = _files(out)
    assert any(p.parts[0] == "events" for p in before)  # the events by folder are kept too
    (out / "topology.json.partial").mkdir()  # writing the fourth file fails
    assert main(["ingest", "--logs", *map(str, good), "--out", str(out), *common]) != 0
    (out / "topology.json.partial").rmdir()
    assert _files(out) == before  # nothing renamed in, nothing left beside, nothing kept
