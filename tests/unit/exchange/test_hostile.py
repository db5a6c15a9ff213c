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

from pfscope.spark_jobs.exchange import run_ingest
from pfscope.spark_jobs.model.events import Reject, parse_line
from pfscope.spark_jobs.model.topology import load_topology
from tests.unit.exchange import three_servers as fx
from tests.unit.exchange.exports import event_xml, write_export_csv

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
    (tmp / "replids.csv").write_text(fx.REPLIDS_CSV, encoding="utf-8")
    out = tmp / "out"
    summary = run_ingest([str(logs)], out, replids=str(tmp / "replids.csv"))
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
    assert summary["records_read"] == (
        summary["used"] + summary["errors_kept"] + summary["duplicates"] + summary["rejected"]
    )
    assert len(_rows(out / "ingest_rejects.jsonl")) == summary["rejected"]
    assert len(_rows(out / "ingest_errors.jsonl")) == summary["errors_kept"]
    topo = load_topology(str(out / "topology.json"))
    for seq, line in enumerate((out / "events.jsonl").read_text(encoding="utf-8").splitlines()):
        try:
            parse_line(line, topo, seq)
        except Reject as e:  # pragma: no cover - the failure says which line
            pytest.fail(f"ingest wrote a line its own reader refuses ({e}): {line[:300]}")
    for p in out.rglob("*"):  # the events by folder too
        if p.is_file():
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
    _s, out = _ingest(
        tmp_path, "ex07.xml", _one_changed("CNSET: 1-300,1-300", "CNSET: 1-1000000000000,1-1000000000000")
    )
    assert any("number out of range in field CNSET" in r for r in _reasons(out)), _reasons(out)


RECORD_FIELD_CASES = {
    "EventRecordID of 5,000 digits": (
        "<EventRecordID>2</EventRecordID>",
        "<EventRecordID>" + "9" * 5000 + "</EventRecordID>",
    ),
    "EventRecordID 2**64": (
        "<EventRecordID>2</EventRecordID>",
        "<EventRecordID>18446744073709551616</EventRecordID>",
    ),
    "EventRecordID negative": ("<EventRecordID>2</EventRecordID>", "<EventRecordID>-5</EventRecordID>"),
    "EventRecordID in other digits": (
        "<EventRecordID>2</EventRecordID>",
        "<EventRecordID>\u00b2\u0663</EventRecordID>",
    ),
    "EventID of 5,000 digits": (">3020</EventID>", ">" + "9" * 5000 + "</EventID>"),
    "EventID in other digits": (">3020</EventID>", ">\u00b3\u0660\u0662\u0660</EventID>"),
}


@pytest.mark.parametrize("case", sorted(RECORD_FIELD_CASES))
def test_record_numbers_out_of_range(tmp_path: Path, base: dict, case: str) -> None:
    old, new = RECORD_FIELD_CASES[case]
    s, _out = _ingest(tmp_path, "ex07.xml", _one_changed(old, new))
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


# --- XML entities: never expanded, never read ---------------------------------------------------


def _laughs(levels: int = 9) -> str:
    ents = '<!ENTITY l0 "lol">' + "".join(
        f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, levels + 1)
    )
    return f'<?xml version="1.0"?><!DOCTYPE Event [{ents}]>'


def _xxe(secret: Path) -> str:
    return f'<?xml version="1.0"?><!DOCTYPE Event [<!ENTITY x SYSTEM "file://{secret}">]>'


ENTITY_CASES = {
    "billion laughs": lambda secret: _laughs() + GOOD_XML.replace("Type: 0x2", "Type: 0x2 &l9;", 1),
    "external entity": lambda secret: _xxe(secret) + GOOD_XML.replace("Type: 0x2", "Type: 0x2 &x;", 1),
    "external entity, /etc/passwd": lambda secret: GOOD_XML.replace(
        "<Level>4</Level>", "<Level>&x;</Level>", 1
    ).join(['<!DOCTYPE Event [<!ENTITY x SYSTEM "file:///etc/passwd">]>', ""]),
    "external entity after records": lambda secret: (
        GOOD_XML
        + _xxe(secret).split("?>")[1]
        + event_xml(fx.EX07_EVENTS[0], 99, rendered=True).replace("Type: 0x2", "Type: 0x2 &x;")
    ),
    "entity without a DOCTYPE": lambda secret: (
        GOOD_XML + event_xml(fx.EX07_EVENTS[0], 99, rendered=True).replace("Type: 0x2", "Type: 0x2 &x;")
    ),
}


@pytest.mark.parametrize("case", sorted(ENTITY_CASES))
def test_xml_entities_are_never_expanded_nor_read(tmp_path: Path, base: dict, case: str) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET + "\n", encoding="utf-8")
    started = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    s, out = _ingest(tmp_path, "ex07.xml", ENTITY_CASES[case](secret).encode("utf-8"))
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - started < 100 * 1024  # KB: nothing expanded
    passwd = Path("/etc/passwd").read_text(encoding="utf-8", errors="replace").splitlines()[:1]
    for p in (p for p in out.rglob("*") if p.is_file()):
        text = p.read_text(encoding="utf-8")
        assert "lollollol" not in text and all(x not in text for x in passwd if len(x) > 8), p.name
    broken = s["files_broken"]
    assert len(broken) == 1 and broken[0]["file"].endswith("ex07.xml")
    if "after" in case or "without" in case:  # the records before it count
        assert broken[0]["complete_records"] == N_GOOD_XML and s["used"] == base["used"]
    else:  # the file is one reject, saying why
        assert "DOCTYPE" in broken[0]["reason"] and broken[0]["complete_records"] == 0


def test_the_xml_parser_is_the_stdlib_expat_fed_inside_a_root() -> None:
    """A DOCTYPE can only come first in a document; ingest feeds its own root element first, so
    expat refuses any DOCTYPE as not well-formed and never reads a declaration (defusedxml is
    not needed, nor installed); a record of an ``.evtx`` with one is refused before parsing."""
    import pfscope.spark_jobs.exchange.xml_format as xf
    from pfscope.spark_jobs.exchange.evtx_format import _evtx_records

    assert xf.ET.XMLPullParser.__module__.startswith("xml.etree")
    recs = list(
        _evtx_records(
            iter(
                [
                    {"data": _laughs() + "<Event>&l9;</Event>", "event_record_id": 7},
                    {"data": _xxe(Path("/etc/passwd")) + "<Event>&x;</Event>"},
                ]
            ),
            "x.evtx",
        )
    )
    assert [r.record for r in recs] == [1, 2]
    assert all("DOCTYPE" in (r.problem or "") for r in recs) and recs[0].record_id == 7


# --- invalid encodings ---------------------------------------------------------------------------


def _rec_xml(old: str = "", new: str = "") -> str:
    """EX07's first record again (a re-export), with ``old`` changed to ``new``."""
    x = event_xml(fx.EX07_EVENTS[0], 99, rendered=True)
    assert old in x
    return x.replace(old, new, 1) if old else x


XML_BREAKS = {  # good records, then a record that breaks the file: the records before it count
    "invalid UTF-8 bytes": GOOD_XML.encode()
    + _rec_xml("Type: 0x2", "Type: 0x2 @@").encode().replace(b"@@", b"\xff\xfe"),
    "a NUL byte": GOOD_XML.encode() + b"\x00" + _rec_xml().encode(),
    "a lone surrogate reference": (GOOD_XML + _rec_xml("Type: 0x2", "Type: 0x2 &#xD800;")).encode(),
    "a control character": (GOOD_XML + _rec_xml("Type: 0x2", "Type: 0x2 \x01\x1b")).encode(),
    "a control character reference": (GOOD_XML + _rec_xml("Type: 0x2", "Type: 0x2 &#x1;")).encode(),
    "a truncated multi-byte character at the end": GOOD_XML.encode() + "\u00e9".encode()[:1],
    "UTF-16, a truncated character at the end": GOOD_XML.encode("utf-16") + b"\x3c",
    "a lone surrogate in UTF-16": GOOD_XML.encode("utf-16")
    + "<Event>".encode("utf-16-le")
    + b"\x00\xd8"
    + "</Event>".encode("utf-16-le"),
}


@pytest.mark.parametrize("case", sorted(XML_BREAKS))
def test_xml_with_bad_text_keeps_the_records_before_it(tmp_path: Path, base: dict, case: str) -> None:
    s, _out = _ingest(tmp_path, "ex07.xml", XML_BREAKS[case])
    assert s["status"] == "partial" and s["used"] == base["used"]
    (b,) = s["files_broken"]
    assert b["complete_records"] == N_GOOD_XML and b["reason"].startswith(
        f"unreadable after record {N_GOOD_XML}:"
    )


def test_xml_in_utf16_without_a_bom_is_read(tmp_path: Path, base: dict) -> None:
    for enc in ("utf-16-le", "utf-16-be"):
        s, _ = _ingest(tmp_path / enc, "ex07.xml", GOOD_XML.encode(enc))
        assert s["status"] == "complete" and s["used"] == base["used"]


@pytest.fixture(scope="module")
def csv_base(tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp = tmp_path_factory.mktemp("csv_base")
    s, _ = _ingest(tmp, "ldn.csv", b"", clean=True)
    return s


def _csv_cases(text: str) -> dict[str, tuple[bytes, int]]:
    """name: (bytes, records lost or rejected among PARPF2's)"""
    return {
        "UTF-16 LE without a BOM": (text.encode("utf-16-le"), 0),
        "Windows-1252": (
            text.replace("PARPF2.corp.example", "PARPF2.corp.example", 1).encode("cp1252", errors="replace"),
            0,
        ),
        "Latin-1 with accents in a description": (
            text.replace("Message ID:", "Message ID (\u00e9t\u00e9):", 1).encode("latin-1", errors="replace"),
            1,
        ),
        "a stray NUL in a description": (text.replace("Type:", "Ty\x00pe:", 1).encode(), 1),
        "control characters in a description": (text.replace("Type:", "Ty\x01\x1bpe:", 1).encode(), 1),
        "a truncated multi-byte character at the end": (text.encode() + "\u00e9".encode()[:1], 0),
    }


@pytest.mark.parametrize("case", sorted(_csv_cases("")))
def test_csv_with_bad_text(tmp_path: Path, csv_base: dict, case: str) -> None:
    data, lost = _csv_cases(_clean_csv(tmp_path))[case]
    s, out = _ingest(tmp_path, "PARPF2.csv", data, clean=False)
    assert s["files"][str(tmp_path / "logs" / "PARPF2.csv")] >= len(fx.PAR_EVENTS)
    assert s["used"] + s["errors_kept"] == csv_base["used"] + csv_base["errors_kept"] - lost, _reasons(out)
    assert s["status"] == ("partial" if "truncated" in case else "complete")


# --- structure: depth, emptiness, size of an attribute ---------------------------------------------


def test_an_element_nested_100000_deep(tmp_path: Path, base: dict) -> None:
    deep = "<Event>" + "<a>" * 100_000 + "x" + "</a>" * 100_000 + "</Event>"
    s, _out = _ingest(tmp_path, "ex07.xml", (GOOD_XML + deep).encode())
    assert s["status"] == "complete" and s["used"] == base["used"] and s["rejected"] == base["rejected"] + 1
    unclosed = "<Event>" + "<a>" * 100_000
    s, _ = _ingest(tmp_path / "unclosed", "ex07.xml", (GOOD_XML + unclosed).encode())
    assert s["status"] == "partial" and s["used"] == base["used"]


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("empty.xml", b""),
        ("bom.xml", b"\xef\xbb\xbf"),
        ("bom16.xml", b"\xff\xfe"),
        ("bom16be.xml", b"\xfe\xff"),
        ("bom.csv", b"\xef\xbb\xbf"),
        ("bom16.csv", b"\xff\xfe"),
        ("blank.xml", b"\xef\xbb\xbf\r\n  \r\n"),
    ],
)
def test_an_empty_export_or_only_a_bom_is_empty_not_broken(tmp_path: Path, name: str, data: bytes) -> None:
    s, _ = _ingest(tmp_path, name, data)
    assert s["status"] == "complete" and s["files_empty"] == [str(tmp_path / "logs" / name)]


def test_a_huge_attribute(tmp_path: Path, base: dict) -> None:
    huge = _rec_xml("<Level>", "<Level x='" + "A" * 5_000_000 + "'>")
    s, _out = _ingest(tmp_path, "ex07.xml", (GOOD_XML + huge).encode())
    assert (
        s["status"] == "complete" and s["used"] == base["used"] and s["duplicates"] == base["duplicates"] + 1
    )


# --- size: one description far longer than any event's -------------------------------------------


def _long_description_xml(path: Path, chars: int) -> None:
    """EX07's export with ``chars`` characters of lines added to one description, written in pieces."""
    head, tail = GOOD_XML.split("RFIs: 0", 1)
    line = "x" * 99 + "\n"
    with path.open("w", encoding="utf-8") as fh:
        fh.write(head + "RFIs: 0&#13;\n")
        for _ in range(chars // len(line)):
            fh.write(line)
        fh.write(tail)


def _long_description_csv(path: Path, chars: int, clean: str) -> None:
    head, tail = clean.split("RFIs: 0", 1)
    line = "x" * 99 + "\r\n"
    with path.open("w", encoding="utf-8", newline="") as fh:
        fh.write(head + "RFIs: 0\r\n")
        for _ in range(chars // len(line)):
            fh.write(line)
        fh.write(tail)


def _size_case(tmp: Path, fmt: str, chars: int) -> tuple[dict, Path, int]:
    logs = tmp / "logs"
    logs.mkdir(parents=True)
    if fmt == "xml":
        _long_description_xml(logs / "ex07.xml", chars)
        write_export_csv(fx.PAR_EVENTS, logs / "par.csv")
    else:
        _long_description_csv(logs / "PARPF2.csv", chars, _clean_csv(tmp))
    (tmp / "replids.csv").write_text(fx.REPLIDS_CSV, encoding="utf-8")
    started = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    s = run_ingest([str(logs)], tmp / "out", replids=str(tmp / "replids.csv"))
    grew_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - started
    _check(s, tmp / "out")
    assert all(p.stat().st_size < 1_000_000 for p in (tmp / "out").rglob("*"))  # quoted only in part
    return s, tmp / "out", grew_kb


def _assert_size_handled(s: dict, out: Path, fmt: str, base: dict) -> None:
    reasons = _reasons(out)
    if fmt == "xml":  # the record is rejected, saying why; every other record of the file is used
        assert s["status"] == "complete" and s["used"] == base["used"] - 1
        assert any("longer than any event's" in r for r in reasons), reasons
    else:  # the CSV reader cannot find its place after such a field: the file breaks there
        (b,) = s["files_broken"]
        assert "a field longer than" in b["reason"] and b["complete_records"] >= 0


@pytest.mark.parametrize("fmt", ["xml", "csv"])
def test_a_description_longer_than_any_event(tmp_path: Path, base: dict, fmt: str) -> None:
    s, out, _ = _size_case(tmp_path, fmt, 300_000)
    _assert_size_handled(s, out, fmt, base)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["xml", "csv"])
def test_a_100_mb_description_is_rejected_in_bounded_memory(tmp_path: Path, base: dict, fmt: str) -> None:
    s, out, grew_kb = _size_case(tmp_path, fmt, 100_000_000)
    _assert_size_handled(s, out, fmt, base)
    assert grew_kb < 600 * 1024, f"peak RSS grew by {grew_kb // 1024} MB"


# --- the command line: an exit status, a few lines on stderr, never a traceback ------------------


def test_the_command_line_on_every_hostile_export(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET, encoding="utf-8")
    files = {f"entity{i}.xml": f(secret).encode() for i, f in enumerate(ENTITY_CASES.values())}
    files |= {f"break{i}.xml": b for i, b in enumerate(XML_BREAKS.values())}
    files |= {f"PARPF{i}.csv": b for i, (b, _) in enumerate(_csv_cases(_clean_csv(tmp_path)).values())}
    files |= {
        "empty.xml": b"",
        "bom.xml": b"\xef\xbb\xbf",
        "utf16.xml": GOOD_XML.encode("utf-16-le"),
        "deep.xml": (GOOD_XML + "<Event>" + "<a>" * 100_000).encode(),
        "numbers.xml": GOOD_XML.replace("CN max: 1-302", "CN max: 1-1000000000000")
        .replace("<EventRecordID>2<", "<EventRecordID>" + "9" * 5000 + "<")
        .replace("2026-11-02T09:05:00.0000000Z", "9999-12-31T23:59:59.0000000-05:00")
        .encode(),
    }
    for name, data in files.items():
        (logs / name).write_bytes(data)
    _long_description_xml(logs / "long.xml", 300_000)
    _long_description_csv(logs / "PARPF9.csv", 300_000, _clean_csv(tmp_path))
    (tmp_path / "replids.csv").write_text(fx.REPLIDS_CSV, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "pfscope.app.cli",
                "ingest",
                "--logs",
                str(logs),
                "--out",
                str(tmp_path / "out"),
                "--replids",
                str(tmp_path / "replids.csv"),
                *extra,
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )

    p = run()
    assert p.returncode == 3, p.stderr  # partial: some files could not be read whole
    assert "Traceback" not in p.stderr and 0 < len(p.stderr.splitlines()) <= 2 + len(files) + 2, p.stderr
    summary = json.loads((tmp_path / "out" / "ingest_summary.json").read_text(encoding="utf-8"))
    _check(summary, tmp_path / "out")
    assert summary["used"] > 0 and summary["status"] == "partial"
    p = run("--strict")  # all or nothing: exit 2, one line
    assert p.returncode == 2 and "Traceback" not in p.stderr and len(p.stderr.splitlines()) == 1, p.stderr
