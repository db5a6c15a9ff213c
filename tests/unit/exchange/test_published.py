"""Every published description under tests/fixtures/exchange/ (KB articles, the troubleshooting
guide, Exchange team posts; 5.0 to 2010) against the expected result written next to it: the
message it describes, the error kept for the store pages, or the reject and its reason.

The expected values were checked by hand against each text; they are data, not computed here."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pfscope.spark_jobs.exchange import run_ingest
from pfscope.spark_jobs.exchange.build import Accounting, classify, guess_version, ingest_records
from pfscope.spark_jobs.exchange.formats import RawRecord
from pfscope.spark_jobs.exchange.parse import (
    Cn,
    ReplicationEvent,
    label_insertion_strings,
    parse_description,
    server_from_dn,
)
from pfscope.spark_jobs.model.timeutil import parse_ts
from tests.render import ExportRecord
from tests.unit.exchange.exports import write_export_csv, write_wevtutil_xml

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "exchange"
PUBLISHED = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(FIXTURES.glob("*.json"))]
BY_ID = {f["id"]: f for f in PUBLISHED}
MESSAGES = [f for f in PUBLISHED if f["expect"]["outcome"] == "message"]


def test_the_collection_spans_the_versions_and_kinds() -> None:
    assert len(PUBLISHED) >= 53 and len(BY_ID) == len(PUBLISHED)
    versions = {f["exchange_version"] for f in PUBLISHED}
    assert {"5.0", "5.5", "2000", "2003", "2007/2010", "2010"} <= versions
    for f in PUBLISHED:
        assert f["source_url"].startswith("http") and f["source"] and f["text"]
        assert f["kind"] in (
            "illustration",
            "template",
            "real log",
            "real log (truncated copy)",
            "damaged copy",
        )
    assert len(MESSAGES) >= 10


def _from_markdown(raw: str) -> str:
    """The troubleshooting guide's table cells: lines joined by <br/>, the Message ID in code
    backticks, '<' escaped."""
    return raw.replace("<br/>", "\n").replace("`", "").replace("\\<", "<")


@pytest.mark.parametrize("f", [f for f in PUBLISHED if "raw" in f], ids=lambda f: f["id"])
def test_texts_taken_from_markdown_are_the_source_less_its_markup(f: dict[str, Any]) -> None:
    assert f["text"] == _from_markdown(f["raw"])


def _cn(text: str) -> Cn:
    r, g = text.split("-")
    return Cn(int(r, 16), int(g, 16))


def _pairs(v: list[list[str]] | None) -> list[tuple[Cn, Cn]] | None:
    return None if v is None else [(_cn(a), _cn(b)) for a, b in v]


def _check(ev: ReplicationEvent, e: dict[str, Any]) -> None:
    assert f"0x{ev.type_code:X}" == e["type"].upper().replace("0X", "0x")
    assert ev.msg_id == e["msg_id"]
    assert ev.database == e.get("database")
    assert ev.folders == [(_cn(fid), path) for fid, path in e.get("folders", [])]
    assert ev.cn_min == (_cn(e["cn_min"]) if "cn_min" in e else None)
    assert ev.cn_max == (_cn(e["cn_max"]) if "cn_max" in e else None)
    assert ev.cnset == _pairs(e.get("cnset"))
    assert ev.cnset_fai == _pairs(e.get("cnset_fai"))
    assert ev.idcn_deleted == _pairs(e.get("idcn_deleted"))
    assert [(r.fid, r.pfid, r.offset, r.path) for r in ev.rfis] == [
        (_cn(a), _cn(b), o, p) for a, b, o, p in e.get("rfis", [])
    ]
    assert ev.server_dn == e.get("server_dn")
    if "server" in e:
        assert server_from_dn(ev.server_dn or "") == e["server"]
    assert ev.ignored == e.get("ignored", [])


@pytest.mark.parametrize("f", MESSAGES, ids=lambda f: f["id"])
def test_each_published_message_parses_to_what_it_says(f: dict[str, Any]) -> None:
    e = f["expect"]
    for text in (f["text"], f["text"].replace("\n", "\r\n")):  # as copied, and as Windows separates lines
        ev = parse_description(text)
        _check(ev, e)
        assert ev.direction in (None, e["direction"])


def _raw(f: dict[str, Any], n: int) -> RawRecord:
    return RawRecord(
        f"{f['id']}.xml",
        n,
        "xml",
        "EXPF1.example.test",
        f["provider"],
        f["event_id"],
        "2026-11-02T08:00:00Z",
        f["text"],
    )


@pytest.mark.parametrize("f", PUBLISHED, ids=lambda f: f["id"])
def test_each_published_event_is_used_kept_or_rejected_as_expected(f: dict[str, Any]) -> None:
    acc = Accounting()
    parsed, errors, rejects, dups = classify([_raw(f, 1)], 0, acc)
    e = f["expect"]
    assert dups == 0 and len(parsed) + len(errors) + len(rejects) == 1
    if e["outcome"] == "message":
        (p,) = parsed
        assert p.direction == e["direction"]
        _check(p.ev, e)
    elif e["outcome"] == "error":
        (row,) = errors
        assert row["event_id"] == f["event_id"] and row["text"] == f["text"]
        for k in ("kind", "error_code", "database", "folder", "meaning"):
            assert row.get(k) == e.get(k), k
    else:
        (row,) = rejects
        assert e["reason"] in row["reason"]
        if "line not understood" in e["reason"]:  # the line is quoted
            assert re.search(r"'.+'", row["reason"])


def test_published_exports_are_accounted_record_by_record(tmp_path: Path) -> None:
    """All the texts in a rendered-XML export and a Get-WinEvent CSV: every record is used, kept
    as an error, or rejected with its reason; no replication message is refused for its text."""
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
    logs = tmp_path / "logs"
    logs.mkdir()
    write_wevtutil_xml(recs, logs / "all.xml")
    write_export_csv(recs, logs / "all.csv")
    s = run_ingest([str(logs)], tmp_path / "out")
    n = len(PUBLISHED)
    assert s["records_read"] == 2 * n and s["accounted"]
    errors = [json.loads(x) for x in (tmp_path / "out" / "ingest_errors.jsonl").read_text().splitlines()]
    n_err = sum(f["expect"]["outcome"] == "error" for f in PUBLISHED)
    assert len(errors) == n_err  # the CSV copy of each error is a duplicate of the XML one
    assert s["duplicates"] >= n_err
    rejects = [json.loads(x) for x in (tmp_path / "out" / "ingest_rejects.jsonl").read_text().splitlines()]
    expected_rejects = {
        f["text"].replace("\n", "\r\n") for f in PUBLISHED if f["expect"]["outcome"] == "rejected"
    }
    description_rejects = {
        r["text"]
        for r in rejects
        if r["reason"].startswith(("description:", "event ID", "not an MSExchangeIS"))
    }
    assert description_rejects == expected_rejects
    ignored = [x for f in MESSAGES for x in f["expect"].get("ignored", [])]
    assert s["description_lines_ignored"]["count"] == len(ignored) and set(
        s["description_lines_ignored"]["lines"]
    ) == set(ignored)


_LINES = sorted({ln for f in PUBLISHED for ln in f["text"].splitlines()})
_IDS = sorted({f["event_id"] for f in PUBLISHED} | {3014, 3016, 3020, 3024, 3026, 3029, 3030, 3031, 3090})


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(_IDS),
            st.sampled_from(
                ["MSExchangeIS Public Store", "MSExchangeIS Public", "MSExchangeIS", "MSExchangeTransport"]
            ),
            st.lists(st.one_of(st.sampled_from(_LINES), st.text(max_size=40)), max_size=12),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_shuffled_published_lines_and_garbage_never_crash_and_are_accounted(
    recs: list[tuple[int, str, list[str]]],
) -> None:
    raws = [
        RawRecord(
            "g.xml",
            k,
            "xml",
            f"PF{k % 2}.example.test",
            prov,
            eid,
            f"2026-11-02T08:{k:02d}:00Z",
            "\r\n".join(lines),
        )
        for k, (eid, prov, lines) in enumerate(recs, 1)
    ]
    res = ingest_records(raws)
    s = res.summary
    assert s["accounted"] and s["records_read"] == len(raws)
    assert all(r["reason"] for r in res.rejects)


@pytest.mark.parametrize(
    ("fixture", "version"),
    [
        ("kb821930-3025", "2000"),
        ("kb177251-3017", "5.5"),
        ("kb177673-3027", "5.5"),
        ("guide-3018-out", "2007"),
        ("kb203170-3017-folder", "5.5"),
    ],
)
def test_the_version_guessed_from_a_published_layout(fixture: str, version: str) -> None:
    parsed, *_ = classify([_raw(BY_ID[fixture], 1)], 0, Accounting())
    assert guess_version(parsed) == version


_XP_NOT_FOUND = (
    "The description for Event ID ( 3028 ) in Source ( MSExchangeIS Public ) cannot be found. The local "
    "computer may not have the necessary registry information or message DLL files to display messages "
    "from a remote computer. You may be able to use the /AUXSOURCE= flag to retrieve this description; "
    "see Help and Support for details. The following information is part of the event: "
)
_VISTA_NOT_FOUND = (
    "The description for Event ID 3028 from source MSExchangeIS Public Store cannot be found. Either the "
    "component that raises this event is not installed on your local computer or the installation is "
    "corrupted. You can install or repair the component on the local computer.\r\n\r\nIf the event "
    "originated on another computer, the display information had to be saved with the event.\r\n\r\n"
    "The following information was included with the event: \r\n\r\n"
)


def test_a_log_exported_where_exchange_is_not_installed() -> None:
    """Windows prints its own text when the exporting machine lacks Exchange's message file: the
    XP/2003 form lists the insertion strings (read by their shapes), the later one cannot be
    split safely and is refused, saying where to export."""
    f = BY_ID["kb221778-3028-datadungeon"]
    dn = f["expect"]["server_dn"]
    xp = _XP_NOT_FOUND + ", ".join(["0x2", "1-14CE", "5-38A4", "5-38B6", "0", "5-2B19,5-38B6", dn]) + "."
    vista = _VISTA_NOT_FOUND + "\r\n".join(["0x2", "1-14CE", "5-38A4", "5-38B6", "0", "5-2B19,5-38B6", dn])
    parsed, errors, rejects, dups = classify(
        [
            RawRecord("x.csv", k, "csv", "PF1", "MSExchangeIS Public", 3028, "2026-11-02T08:00:00Z", t)
            for k, t in enumerate((xp, vista), 1)
        ],
        0,
        Accounting(),
    )
    assert errors == [] and dups == 0
    (p,) = parsed
    _check(p.ev, {**f["expect"], "ignored": []})
    (r,) = rejects
    assert (
        r["record"] == 2
        and "lacks Exchange's message file" in r["reason"]
        and "/f:RenderedXml" in r["reason"]
    )


@pytest.mark.parametrize(
    ("fixture", "strings"),
    [
        # a plain-XML export (or a raw .evtx) of the published 5.x and 2000 events: the insertion
        # strings in template order, no labels; each string written here from the published text
        (
            "kb821930-3025",
            [
                "0x4",
                "1-7E4C",
                "(5-821) IPM_SUBTREE\\<Folder_Name>\\<Folder_Name>",
                "First Storage Group\\Public Folder Store (Server_Name)",
                "5-1",
                "5-795E",
                "/O=ORG/OU=AG/CN=CONFIGURATION/CN=SERVERS/CN=<ServerName>/CN=MICROSOFT PUBLIC MDB",
            ],
        ),
        (
            "kb177251-3019",
            [
                "0x80000002",
                "1-1B62",
                "12-1B67,12-1B67\r\n12-1B69,12-1B69",
                "{0}",
                "2",
                "1: 2-7,1-4,48\r\nNON_IPM_SUBTREE\\SCHEDULE+ FREE BUSY\\EX:/o=ORGNAME/ou=SITENAME\r\n"
                "2: 2-8,1-5,666\r\nNON_IPM_SUBTREE\\OFFLINE ADDRESS BOOK\\EX:/o=ORGNAME/ou=SITENAME",
                "{0}",
            ],
        ),
        (
            "kb203170-3017-1-61AD5",
            ["0x10", "1-61AD5", "(6e-2F506) NON_IPM_SUBTREE\\Events Root\\EventConfig_ServerName"],
        ),
        ("kb177251-3017", ["0x20", "1-1B64", "(1-1) IPM_SUBTREE"]),
        (
            "kb188651-3028",
            [
                "0x2",
                "1-14CE",
                "5-38A4",
                "5-38B6",
                "0",
                "5-2B19,5-38B6",
                "/O=MICROSOFT/OU=CENTRAL/CN=CONFIGURATION/CN=SERVERS/CN=EXCH_SVR/CN=MICROSOFT PUBLIC MDB",
            ],
        ),
    ],
)
def test_published_5x_and_2000_events_read_from_bare_insertion_strings(
    fixture: str, strings: list[str]
) -> None:
    text = label_insertion_strings(strings)
    assert text is not None
    assert parse_description(text).meaning() == parse_description(BY_ID[fixture]["text"]).meaning()


def test_a_replication_event_id_no_published_text_shows_is_kept_other_ids_are_refused() -> None:
    """The public store logs replication in 3000-3099: an unseen ID there goes to the store pages
    (kind "replication event"), an ID outside is refused naming it."""
    texts = [
        (3034, 'Error 0x8004010f occurred while doing something to folder (1-2A3) on database "SG\\PF".'),
        (3199, "Some other store event."),
    ]
    parsed, errors, rejects, _ = classify(
        [
            RawRecord("x.xml", k, "xml", "PF1", "MSExchangeIS Public Store", eid, "2026-11-02T08:00:00Z", t)
            for k, (eid, t) in enumerate(texts, 1)
        ],
        0,
        Accounting(),
    )
    assert parsed == []
    (row,) = errors
    assert (row["event_id"], row["kind"], row["error_code"], row["folder"], row["database"]) == (
        3034,
        "replication event",
        "0x8004010f",
        "1-2A3",
        "SG\\PF",
    )
    (rej,) = rejects
    assert rej["event_id"] == 3199 and "event ID 3199 is not a replication event" in rej["reason"]
