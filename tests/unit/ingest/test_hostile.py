"""Hostile exports: ingest never crashes, never expands or reads an entity, keeps its memory
bounded, accounts for every record (read = used + errors kept + duplicates + rejected), keeps the
good records beside the bad one, and writes no line into events.jsonl that pfscope's own reader
(``parse_line``, as ``replay`` reads it) would refuse.

Each case is one export of EX07's records (``three_servers``) with something hostile put in, in a
folder beside a clean CSV export of PARPF2: the clean file is always read whole."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from spark_jobs.ingest import run_ingest
from spark_jobs.model.events import Reject, parse_line
from spark_jobs.model.topology import load_topology

from . import three_servers as fx
from .exports import event_xml, write_export_csv

ROOT = Path(__file__).resolve().parents[3]
SECRET = "pfscope-hostile-secret-7f3a9c"
GOOD_XML = "".join(event_xml(r, i, rendered=True) for i, r in enumerate(fx.EX07_EVENTS, 1))
N_GOOD_XML = len(fx.EX07_EVENTS)


def _clean_csv(tmp: Path) -> str:
    p = tmp / "clean.csv"
    write_export_csv(fx.PAR_EVENTS, p)
    text = p.read_text(encoding="utf-8-sig")
    p.unlink()
    return text


def _ingest(tmp: Path, name: str, data: bytes, *, clean: bool = True) -> tuple[dict, Path]:
    """The hostile file (and a clean one beside it) ingested; every guarantee checked."""
    logs = tmp / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / name).write_bytes(data)
    if clean:
        write_export_csv(fx.PAR_EVENTS, logs / "par.csv")
    out = tmp / "out"
    summary = run_ingest([str(logs)], out)
    _check(summary, out)
    if clean:  # the clean file beside it is read whole
        assert summary["files"][str(logs / "par.csv")] == len(fx.PAR_EVENTS)
        assert all(b["file"] != str(logs / "par.csv") for b in summary["files_broken"])
    return summary, out


def _rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def _check(summary: dict, out: Path) -> None:
    assert summary["accounted"]
    assert summary["records_read"] == sum(summary["files"].values())
    assert summary["records_read"] == (summary["used"] + summary["errors_kept"] + summary["duplicates"]
                                       + summary["rejected"])
    assert len(_rows(out / "ingest_rejects.jsonl")) == summary["rejected"]
    assert len(_rows(out / "ingest_errors.jsonl")) == summary["errors_kept"]
    topo = load_topology(str(out / "topology.json"))
    for seq, line in enumerate((out / "events.jsonl").read_text(encoding="utf-8").splitlines()):
        try:
            parse_line(line, topo, seq)
        except Reject as e:  # pragma: no cover - the failure says which line
            pytest.fail(f"ingest wrote a line its own reader refuses ({e}): {line[:300]}")
    for p in out.iterdir():
        assert SECRET not in p.read_text(encoding="utf-8", errors="replace"), p.name


def _reasons(out: Path) -> list[str]:
    return [r["reason"] for r in _rows(out / "ingest_rejects.jsonl")]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """What the good records alone give."""
    s, _ = _ingest(tmp_path_factory.mktemp("baseline"), "ex07.xml", GOOD_XML.encode("utf-8"))
    return s


# --- numbers out of range in exported fields ------------------------------------------------------

def _one_changed(old: str, new: str) -> bytes:
    assert old in GOOD_XML
    return GOOD_XML.replace(old, new, 1).encode("utf-8")


CN_CASES = {  # the CN range of EX07's content message (A2)
    "at 2**48-1": ("CN min: 1-FFFFFFFFFFFE, CN max: 1-FFFFFFFFFFFF", None),
    "2**48": ("CN min: 1-FFFFFFFFFFFF, CN max: 1-1000000000000", "CN max"),
    "2**63": ("CN min: 1-8000000000000000, CN max: 1-8000000000000000", "CN min"),
    "2**64-1": ("CN min: 1-300, CN max: 1-FFFFFFFFFFFFFFFF", "CN max"),
}


@pytest.mark.parametrize("case", sorted(CN_CASES))
def test_cns_out_of_range_are_rejected_naming_the_field(tmp_path: Path, base: dict, case: str) -> None:
    text, field = CN_CASES[case]
    s, out = _ingest(tmp_path, "ex07.xml", _one_changed("CN min: 1-300, CN max: 1-302", text))
    if field is None:  # the largest CN there is: used
        assert s["used"] == base["used"]
        assert any('"cn":281474976710655' in x for x in (out / "events.jsonl").read_text().splitlines())
        return
    bad = [r for r in _rows(out / "ingest_rejects.jsonl") if "out of range" in r["reason"]]
    assert len(bad) == 1 and f"number out of range in field {field}" in bad[0]["reason"], _reasons(out)
    assert s["used"] == base["used"] - 1  # that one record; the others of the file are kept


def test_a_cnset_out_of_range_is_rejected_naming_the_field(tmp_path: Path) -> None:
    s, out = _ingest(tmp_path, "ex07.xml", _one_changed("CNSET: 1-300,1-300", "CNSET: 1-1000000000000,1-1000000000000"))
    assert any("number out of range in field CNSET" in r for r in _reasons(out)), _reasons(out)


RECORD_FIELD_CASES = {
    "EventRecordID of 5,000 digits": ("<EventRecordID>2</EventRecordID>", "<EventRecordID>" + "9" * 5000 + "</EventRecordID>"),
    "EventRecordID 2**64": ("<EventRecordID>2</EventRecordID>", "<EventRecordID>18446744073709551616</EventRecordID>"),
    "EventRecordID negative": ("<EventRecordID>2</EventRecordID>", "<EventRecordID>-5</EventRecordID>"),
    "EventRecordID in other digits": ("<EventRecordID>2</EventRecordID>", "<EventRecordID>\u00b2\u0663</EventRecordID>"),
    "EventID of 5,000 digits": (">3020</EventID>", ">" + "9" * 5000 + "</EventID>"),
    "EventID in other digits": (">3020</EventID>", ">\u00b3\u0660\u0662\u0660</EventID>"),
}


@pytest.mark.parametrize("case", sorted(RECORD_FIELD_CASES))
def test_record_numbers_out_of_range(tmp_path: Path, base: dict, case: str) -> None:
    old, new = RECORD_FIELD_CASES[case]
    s, out = _ingest(tmp_path, "ex07.xml", _one_changed(old, new))
    assert s["status"] == "complete" and s["files"][str(tmp_path / "logs" / "ex07.xml")] == N_GOOD_XML
    if "EventID" in case and "Record" not in case:
        assert s["used"] == base["used"] - 1
    else:
        assert s["used"] == base["used"]  # the record number is only a reference: the record is used


TIME_CASES = {
    "year 1": "0001-01-01T00:00:00.0000000Z",
    "year 1, west of UTC": "0001-01-01T00:00:00.0000000-05:00",
    "year 1, east of UTC": "0001-01-01T00:00:00.0000000+05:00",
    "year 9999": "9999-12-31T23:59:59.9999999Z",
    "year 9999, west of UTC": "9999-12-31T23:59:59.0000000-05:00",
    "year 0": "0000-01-01T00:00:00Z",
    "month 13": "2026-13-45T99:99:99Z",
    "not a time": "yesterday",
}


@pytest.mark.parametrize("case", sorted(TIME_CASES))
def test_times_out_of_range_or_unparseable(tmp_path: Path, base: dict, case: str) -> None:
    s, out = _ingest(tmp_path, "ex07.xml", _one_changed("2026-11-02T08:10:00.0000000Z", TIME_CASES[case]))
    assert s["status"] == "complete"
    bad = [r for r in _rows(out / "ingest_rejects.jsonl") if r["reason"].startswith("bad time")]
    assert len(bad) == 1 and s["used"] == base["used"] - 1, _reasons(out)
