"""Reading exports: XML with and without a root, rendered or not, UTF-8 and UTF-16; CSV from Event
Viewer and Export-Csv with quoting and CR LF inside descriptions; real .evtx files through
pyevtx-rs (written by our own minimal EVTX writer); times; paths."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pfscope.spark_jobs.exchange.formats import (
    InputError,
    expand_log_paths,
    parse_event_time,
    read_records,
    sniff,
)
from pfscope.spark_jobs.model.timeutil import parse_ts
from tests.unit.exchange import three_servers as fx
from tests.unit.exchange.exports import (
    write_event_viewer_csv,
    write_events_xml,
    write_evtx,
    write_export_csv,
    write_wevtutil_xml,
)

QUOTED = fx.rec(
    fx.EX07,
    3092,
    "2026-11-02T12:00:00Z",
    'Error "0x8004010F" processing "IPM_SUBTREE\\A, B"\r\nsecond line\r\n\r\nafter an empty line',
)
RECORDS = [*fx.EX07_EVENTS, QUOTED]


def _norm(s: str | None) -> str:
    return (s or "").replace("\r\n", "\n")


def test_wevtutil_rendered_xml_without_a_root(tmp_path: Path) -> None:
    p = tmp_path / "ex07.xml"
    write_wevtutil_xml(RECORDS, p)
    got = list(read_records(str(p)))
    assert [r.record for r in got] == list(range(1, len(RECORDS) + 1))
    assert [r.event_id for r in got] == [r.event_id for r in RECORDS]
    assert all(r.server == fx.EX07 for r in got)
    assert got[0].provider == "MSExchangeIS Public Store" and got[-2].provider == "MSExchangeTransport"
    assert [_norm(r.message) for r in got] == [_norm(r.message) for r in RECORDS]
    assert got[0].record_id == 1 and got[0].time_text == "2026-11-02T08:00:00.0000000Z"


def test_event_viewer_xml_with_a_root_in_utf16_and_unrendered(tmp_path: Path) -> None:
    recs = [fx.rec(fx.EX07, 3020, "2026-11-02T08:10:00Z", "")]
    recs[0].strings = ["0x4", "<A2@EX07.corp.example>", "(1-4B1C) " + fx.LONG, "1-300", "1-302", "0", "{0}"]
    p = tmp_path / "saved.xml"
    write_events_xml(recs, p, rendered=False)
    assert p.read_bytes()[:2] == b"\xff\xfe"
    (r,) = list(read_records(str(p)))
    assert r.message is None and r.strings == tuple(recs[0].strings)


def test_event_viewer_csv_quotes_and_crlf_inside_descriptions(tmp_path: Path) -> None:
    p = tmp_path / "LDNPF1.csv"
    write_event_viewer_csv([*fx.LDN_EVENTS, QUOTED], p, offset_min=60)
    raw = p.read_bytes()
    assert b'""0x8004010F""' in raw and b"second line\r\n\r\nafter" in raw
    got = list(read_records(str(p)))
    assert len(got) == len(fx.LDN_EVENTS) + 1
    assert got[-1].message == QUOTED.message  # CR LF kept, quotes undoubled
    assert got[0].server is None and got[0].event_id == 3028
    assert got[0].time_text == "11/2/2026 9:03:00 AM"  # local time, one hour ahead of UTC
    assert parse_event_time(got[0].time_text or "", 60) == (parse_ts("2026-11-02T08:03:00Z"), False)


def test_export_csv_with_type_line_and_machine_names(tmp_path: Path) -> None:
    p = tmp_path / "par.csv"
    write_export_csv(fx.PAR_EVENTS, p)
    assert p.read_text(encoding="utf-8-sig").startswith("#TYPE ")
    got = list(read_records(str(p)))
    assert [r.server for r in got] == [fx.PAR] * len(fx.PAR_EVENTS)
    assert [r.message for r in got] == [r.message for r in fx.PAR_EVENTS]
    assert parse_event_time(got[1].time_text or "") == (fx.PAR_EVENTS[1].ts, True)


def test_a_csv_without_time_or_event_id_columns_is_an_operator_error(tmp_path: Path) -> None:
    p = tmp_path / "x.csv"
    p.write_text("Name,Value\r\na,b\r\n", encoding="utf-8")
    with pytest.raises(InputError, match="needs a time and an event ID column"):
        list(read_records(str(p)))


def test_evtx_written_by_our_writer_is_read_by_pyevtx_rs(tmp_path: Path) -> None:
    recs = []
    for i in range(450):  # three chunks
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
    p = tmp_path / "PARPF2.evtx"
    write_evtx(recs, p)
    assert p.read_bytes()[:8] == b"ElfFile\x00" and sniff(str(p)) == "evtx"
    assert int.from_bytes(p.read_bytes()[42:44], "little") >= 3  # records span several chunks
    got = list(read_records(str(p)))
    assert len(got) == 450 and all(r.problem is None for r in got)
    assert [r.record_id for r in got] == list(range(1, 451))
    assert [r.strings for r in got] == [tuple(r.strings) for r in recs]
    assert {r.server for r in got} == {fx.PAR} and got[7].event_id == 3030
    assert [parse_event_time(r.time_text or "")[0] for r in got] == [r.ts for r in recs]
    assert got[0].provider == "MSExchangeIS Public Store"


def test_a_broken_evtx_is_an_operator_error(tmp_path: Path) -> None:
    p = tmp_path / "bad.evtx"
    p.write_bytes(b"ElfFile\x00" + b"\x00" * 100)
    with pytest.raises(InputError, match=r"not a readable \.evtx file"):
        list(read_records(str(p)))


@pytest.mark.parametrize(
    ("text", "offset", "expected", "own"),
    [
        ("2026-11-02T08:03:00.1234567Z", 0, "2026-11-02T08:03:00.123456Z", True),
        ("2026-11-02T09:03:00+01:00", 0, "2026-11-02T08:03:00Z", True),
        ("11/2/2026 8:03:00 PM", -300, "2026-11-03T01:03:00Z", False),
        ("2026-11-02 08:03:00", 0, "2026-11-02T08:03:00Z", False),
        ("02.11.2026 08:03:00", 120, "2026-11-02T06:03:00Z", False),
    ],
)
def test_times(text: str, offset: int, expected: str, own: bool) -> None:
    assert parse_event_time(text, offset) == (parse_ts(expected), own)


def test_local_times_in_a_time_zone_follow_daylight_saving() -> None:
    from zoneinfo import ZoneInfo

    paris = ZoneInfo("Europe/Paris")
    assert parse_event_time("10/24/2026 9:00:00 AM", zone=paris) == (parse_ts("2026-10-24T07:00:00Z"), False)
    assert parse_event_time("10/26/2026 9:00:00 AM", zone=paris) == (parse_ts("2026-10-26T08:00:00Z"), False)
    # a time with its own offset ignores the zone
    assert parse_event_time("2026-10-24T09:00:00Z", zone=paris) == (parse_ts("2026-10-24T09:00:00Z"), True)


def test_paths_folders_and_globs(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    for name in ("a/EX1.xml", "a/EX2.CSV", "a/notes.txt", "b.evtx"):
        (tmp_path / name).write_text("x")
    found = expand_log_paths([str(tmp_path / "a"), str(tmp_path / "*.evtx"), str(tmp_path / "a" / "EX1.xml")])
    assert [Path(f).name for f in found] == ["EX1.xml", "EX2.CSV", "b.evtx"]
    for bad, why in ((tmp_path / "nope", "no such file"), (tmp_path / "*.zip", "no file matches")):
        with pytest.raises(InputError, match=why):
            expand_log_paths([str(bad)])
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match=r"no \.xml, \.csv or \.evtx"):
        expand_log_paths([str(tmp_path / "empty")])


def test_a_large_xml_export_is_streamed_across_pieces(tmp_path: Path) -> None:
    recs = []
    for i in range(2500):
        r = fx.rec(
            fx.EX07, 3020, "2026-11-02T08:00:00Z", fx.EX07_EVENTS[1].message.replace("<A2@", f"<N{i}@")
        )
        recs.append(r)
    for write, name in ((write_wevtutil_xml, "big.xml"), (write_events_xml, "big-utf16.xml")):
        p = tmp_path / name
        write(recs, p)
        assert p.stat().st_size > 3 * (1 << 20)  # several 1 MB pieces
        got = list(read_records(str(p)))
        assert [r.record for r in got] == list(range(1, 2501))
        assert [_norm(r.message) for r in got] == [_norm(r.message) for r in recs]


def test_event_viewer_tab_delimited_text(tmp_path: Path) -> None:
    import csv as _csv

    p = tmp_path / "LDNPF1.txt"
    with open(p, "w", encoding="utf-16", newline="") as fh:
        w = _csv.writer(fh, delimiter="\t", lineterminator="\r\n")
        w.writerow(["Level", "Date and Time", "Source", "Event ID", "Task Category"])
        for r in fx.LDN_EVENTS:
            w.writerow(
                ["Information", "11/2/2026 9:03:00 AM", r.provider, r.event_id, "Replication", r.message]
            )
    got = list(read_records(str(p)))
    assert sniff(str(p)) == "csv" and [r.message for r in got] == [r.message for r in fx.LDN_EVENTS]


@pytest.mark.parametrize("write", [write_wevtutil_xml, write_export_csv])
def test_values_records_repeat_are_one_object(tmp_path: Path, write: Any) -> None:
    """A server's name, its provider, a database, a Server line and a folder's path, repeated by
    record after record, are one object each: the kept records' pickles hold each once."""
    import pickle

    from pfscope.spark_jobs.exchange.classify import classify_one

    path = tmp_path / ("ex07.xml" if write is write_wevtutil_xml else "ex07.csv")
    write(fx.EX07_EVENTS, path)
    kept = [(r, classify_one(r, 0, None)) for r in read_records(str(path))]
    parsed = [o.parsed for _, o in kept if o.parsed is not None]
    assert len(parsed) > 3
    for values in (
        [r.server for r, _ in kept],
        [r.provider for r, _ in kept],
        [p.server for p in parsed],
        [p.ev.database for p in parsed if p.ev.database],
        [p.ev.server_dn for p in parsed if p.ev.server_dn],
        [p.sender for p in parsed if p.sender],
    ):
        assert len(values) > 1
        for v in set(values):
            assert len({id(x) for x in values if x == v}) == 1, v
    paths = [path for p in parsed for _, path in p.ev.folders if path]
    assert len(paths) > 1 and all(a is b for a in paths for b in paths if a == b)
    again = pickle.loads(pickle.dumps(kept, protocol=pickle.HIGHEST_PROTOCOL))
    assert again[0][0].server is again[-1][0].server == kept[0][0].server
