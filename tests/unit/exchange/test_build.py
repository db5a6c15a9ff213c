"""Three servers with different REPLID maps, exported three ways, read together: pairs, the
REPLID tables (given, inferred, conflicting), derived knowledge, rejects, errors, duplicates, the
accounting, the completed topology, and that pfscope's own reader takes the log as it is."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pfscope.spark_jobs.exchange import run_ingest
from pfscope.spark_jobs.exchange.identity import ReplidFileError, parse_replids_csv
from pfscope.spark_jobs.model.cnset import CNSet
from pfscope.spark_jobs.model.events import read_event_log
from pfscope.spark_jobs.model.replay import replay
from pfscope.spark_jobs.model.topology import load_topology
from tests.render import ExportRecord
from tests.unit.exchange import three_servers as fx
from tests.unit.exchange.exports import (
    write_event_viewer_csv,
    write_events_xml,
    write_export_csv,
    write_wevtutil_xml,
)


def _exports(d: Path) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    write_wevtutil_xml(fx.EX07_EVENTS, d / "ex07.xml")
    write_event_viewer_csv(fx.LDN_EVENTS, d / "LDNPF1_application.csv")
    write_export_csv(fx.PAR_EVENTS, d / "par.csv")
    return d


def _run(tmp_path: Path, *, replids: str | None = fx.REPLIDS_CSV, extra: list[str] | None = None) -> dict:
    logs = _exports(tmp_path / "logs")
    args: dict = {}
    if replids is not None:
        (tmp_path / "replids.csv").write_text(replids, encoding="utf-8")
        args["replids"] = str(tmp_path / "replids.csv")
    return run_ingest([str(logs), *(extra or [])], tmp_path / "out", **args)


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def _sends(out: Path) -> dict[str, dict]:
    return {e["msg"]: e for e in _lines(out / "events.jsonl") if e["kind"] == "send"}


def test_three_servers_pair_sends_and_receives_in_store_terms(tmp_path: Path) -> None:
    s = _run(tmp_path)
    out = tmp_path / "out"
    assert s["stores"] == {"EX07": "PF07", "LDNPF1": "PFLDN", "PARPF2": "PFPAR"}
    sends = _sends(out)
    receives = {
        (e["msg"], e["store"]): e["ts"] for e in _lines(out / "events.jsonl") if e["kind"] == "receive"
    }
    a1 = sends["<A1@EX07.corp.example>"]
    # one message, printed 1-2F0 on EX07, 5-2F0 on LDNPF1 and 7-2F0 on PARPF2: one store's CNs
    assert (a1["type"], a1["fid"], a1["to"], a1["changes"]) == (
        "hierarchy",
        "1-1",
        ["PFLDN", "PFPAR"],
        "PF07:752-756",
    )
    assert receives[("<A1@EX07.corp.example>", "PFLDN")] == "2026-11-02T08:03:00Z"
    assert receives[("<A1@EX07.corp.example>", "PFPAR")] == "2026-11-02T08:05:00Z"
    fid = sends["<A2@EX07.corp.example>"]["fid"]
    assert fid == "1-4B1C"  # created on PF07, the first store by name
    b1 = sends["<B1@PARPF2.corp.example>"]
    assert (b1["type"], b1["requested"], b1["source"], b1["to"]) == (
        "backfill_request",
        "PF07:768-770",
        "PF07",
        ["PF07"],
    )
    a3 = sends["<A3@EX07.corp.example>"]
    assert (a3["type"], a3["changes"], a3["fid"]) == ("backfill_response", "PF07:768,770", fid)
    h = sends["LDNPF1/1-3C10"]  # an internal 5.x id is unique only with its sender
    assert (h["type"], h["fid"], h["changes"]) == ("backfill_response", "1-1", "PFPAR:10753,10755")
    st = sends["LDNPF1/1-5D21"]
    assert st["type"] == "status" and st["cnset"] == "PF07:752-756,768-770" and "derived" not in st
    b2 = sends[
        "<B2@PARPF2.corp.example>"
    ]  # hierarchy backfill request: no folder; the Server line names PFLDN
    assert (b2["fid"], b2["to"], b2["requested"]) == ("1-1", ["PFLDN"], "PFLDN:16-18")


def test_derived_knowledge_is_marked_and_is_a_lower_bound(tmp_path: Path) -> None:
    _run(tmp_path)
    out = tmp_path / "out"
    lines = _lines(out / "events.jsonl")
    sends = _sends(out)
    a2 = sends["<A2@EX07.corp.example>"]
    # regular replication prints a range, not the sender's set: derived, from all the log shows
    assert a2["derived"] == ["cnset"] and a2["cnset"] == "PF07:768-770"
    changes = [e for e in lines if e["kind"] == "change"]
    assert {e["cn"] for e in changes if e["fid"] == "1-4B1C"} == {768, 769, 770}
    assert all(e["derived"] == ["event"] and e["implied_by"] for e in changes)
    # the status request came only as an incoming event: its send is built from it
    sr = sends["LDNPF1/1-9999"]
    assert sr["derived"] == ["event", "ts", "responders"] and sr["ts"] == "2026-11-02T10:05:00Z"
    assert sr["cnset"] == "PF07:752-756"  # printed CNSET: not derived
    # every derived CN set holds only CNs the log shows the sender holding
    for e in sends.values():
        if "cnset" in e.get("derived", []):
            assert CNSet.parse(e.get("changes", "")).issubset(CNSet.parse(e["cnset"]))


def test_rejects_errors_and_accounting(tmp_path: Path) -> None:
    s = _run(tmp_path)
    out = tmp_path / "out"
    n = len(fx.EX07_EVENTS) + len(fx.LDN_EVENTS) + len(fx.PAR_EVENTS)
    assert s["records_read"] == n
    assert s["used"] + s["errors_kept"] + s["duplicates"] + s["rejected"] == n and s["accounted"]
    rejects = _lines(out / "ingest_rejects.jsonl")
    assert {(r["server"], r["event_id"], r["reason"]) for r in rejects} == {
        ("EX07", 1000, "not an MSExchangeIS Public Store event"),
        ("LDNPF1", 3020, "description: unknown Type 0x40"),
    }
    assert all(r["source"] and r["record"] >= 1 and r["text"] for r in rejects)
    errors = _lines(out / "ingest_errors.jsonl")
    assert [(e["server"], e["store"], e["event_id"]) for e in errors] == [
        ("EX07", "PF07", 3079),
        ("EX07", "PF07", 3085),
        ("PARPF2", "PFPAR", 3092),
    ]
    assert "EcReplStartup" in errors[0]["text"] and errors[2]["ts"] == "2026-11-02T12:30:00Z"
    per = s["per_type"]
    assert per["0x2"] == {"out": 1, "in": 2} and per["0x80000004"] == {"out": 1, "in": 1}
    assert s["per_server"]["LDNPF1"]["out 0x10"] == 1 and s["per_server"]["EX07"]["errors"] == 2
    assert s["messages"] == {"total": 8, "outgoing_without_incoming": 1, "incoming_without_outgoing": 1}
    assert s["inferred"]["servers_named_from_file_names"] == ["LDNPF1"]
    assert s["times_without_offset"] == len(fx.LDN_EVENTS)  # Event Viewer's local times


def test_duplicated_exports_count_once(tmp_path: Path) -> None:
    first = _run(tmp_path / "a")
    again = tmp_path / "copies"
    again.mkdir()
    write_events_xml(fx.EX07_EVENTS, again / "ex07-again.xml")  # the same events, another export
    write_export_csv(fx.LDN_EVENTS[:2], again / "LDNPF1-again.csv")  # these carry no computer either
    shutil.copy(tmp_path / "a" / "logs" / "par.csv", again / "par-copy.csv")
    s = _run(tmp_path / "b", extra=[str(again)])
    dup = len(fx.EX07_EVENTS) - 1 + 2 + len(fx.PAR_EVENTS)  # the transport event is rejected again
    assert s["duplicates"] == dup and s["accounted"]
    assert s["used"] == first["used"] and s["errors_kept"] == first["errors_kept"]
    assert (tmp_path / "a" / "out" / "events.jsonl").read_text() == (
        tmp_path / "b" / "out" / "events.jsonl"
    ).read_text()


def test_replids_are_inferred_without_a_table(tmp_path: Path) -> None:
    with_table = _run(tmp_path / "a")
    s = _run(tmp_path / "b", replids=None)
    inferred = {(r["server"], r["replid"]): r["store"] for r in s["replids"]["inferred"]}
    # REPLID 1 is each server's own store; the others come from messages logged on both sides
    assert inferred[("LDNPF1", "5")] == inferred[("PARPF2", "7")] == inferred[("EX07", "1")] == "EX07"
    assert inferred[("PARPF2", "1")] == inferred[("LDNPF1", "3")] == "PARPF2"
    assert inferred[("PARPF2", "2")] == inferred[("LDNPF1", "1")] == "LDNPF1"
    assert ("EX07", "3") not in inferred  # EX07 never printed it: nothing to infer, nothing needed
    assert all(r["how"] for r in s["replids"]["inferred"]) and s["replids"]["conflicts"] == []
    # the same log, with server names as store names
    rename = {"PF07": "EX07", "PFLDN": "LDNPF1", "PFPAR": "PARPF2"}
    a = (tmp_path / "a" / "out" / "events.jsonl").read_text()
    for old, new in rename.items():
        a = a.replace(old, new)
    assert a == (tmp_path / "b" / "out" / "events.jsonl").read_text()
    assert with_table["replids"]["inferred"] == []


def test_a_wrong_replid_table_shows_as_conflicts(tmp_path: Path) -> None:
    wrong = fx.REPLIDS_CSV.replace("LDNPF1,5,PF07", "LDNPF1,5,PFPAR").replace(
        "LDNPF1,3,PFPAR", "LDNPF1,3,PF07"
    )
    s = _run(tmp_path, replids=wrong)
    assert {(c["server"], c["replid"], c["kept"], c["also_seen"]) for c in s["replids"]["conflicts"]} >= {
        ("LDNPF1", "5", "PFPAR", "PF07")
    }


def test_an_unmapped_replid_is_a_reject_saying_which(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    write_export_csv([fx.PAR_EVENTS[1]], logs / "par.csv")  # PARPF2 asks for 7-300: no one says who 7 is
    s = run_ingest([str(logs)], tmp_path / "out")
    (r,) = _lines(tmp_path / "out" / "ingest_rejects.jsonl")
    assert r["reason"] == "REPLID 7 printed by PARPF2 maps to no store (add it to --replids)"
    assert s["used"] == 0 and s["rejected"] == 1


def test_the_log_and_topology_are_read_by_pfscope(tmp_path: Path) -> None:
    _run(tmp_path)
    out = tmp_path / "out"
    topo = load_topology(out / "topology.json")
    assert {(s.name, s.server, s.site, s.version) for s in topo.stores.values()} == {
        ("PF07", "EX07", "REDMOND", "2007"),
        ("PFLDN", "LDNPF1", "LONDON", "5.5"),
        ("PFPAR", "PARPF2", "PARIS", "2003"),
    }
    f = topo.folders["1-4B1C"]
    assert f.path == fx.LONG and f.parent == "1-1" and set(f.replicas) == {"PF07", "PFLDN", "PFPAR"}
    assert topo.folders["3-A"].path.startswith("NON_IPM_SUBTREE\\OFFLINE ADDRESS BOOK")
    log = read_event_log([out / "events.jsonl"], topo)
    assert log.rejects == [] and log.duplicates == 0
    tables = replay(topo, log).tables
    row = next(
        r
        for r in tables["state_table"]
        if (r["observer"], r["fid"], r["subject"]) == ("PFPAR", "1-4B1C", "PF07")
    )
    assert row["cnset"] == "PF07:768-770"


def test_the_given_topology_is_completed_not_replaced(tmp_path: Path) -> None:
    given = {
        "sites": ["Redmond"],
        "costs": [],
        "stores": [{"name": "PF07", "server": "ex07.corp.example", "site": "Redmond", "version": "2010"}],
        "folders": [{"fid": "9-99", "path": fx.LONG, "parent": None, "replicas": ["PF07"]}],
    }
    (tmp_path / "t.json").write_text(json.dumps(given), encoding="utf-8")
    _exports(tmp_path / "logs")
    (tmp_path / "r.csv").write_text(fx.REPLIDS_CSV, encoding="utf-8")
    run_ingest(
        [str(tmp_path / "logs")],
        tmp_path / "out",
        replids=str(tmp_path / "r.csv"),
        topology=str(tmp_path / "t.json"),
    )
    topo = load_topology(tmp_path / "out" / "topology.json")
    assert topo.stores["PF07"].version == "2010" and topo.stores["PF07"].site == "Redmond"
    assert topo.folders["9-99"].replicas == ("PF07",)  # the folder keeps its FID and replica list by path
    assert "1-4B1C" not in topo.folders
    assert {
        e["fid"] for e in _lines(tmp_path / "out" / "events.jsonl") if e.get("fid") not in (None, "1-1")
    } == {"9-99"}


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty"),
        ("host,id,name\nA,1,B\n", "must name the columns"),
        ("server,replid,store\nEX1,zz,PF1\n", "not hexadecimal"),
        ("server,replid,store\nEX1,1,PF 1\n", "without spaces"),
        ("server,replid,store\nEX1,1,PF1\nex1.corp,0x1,PF2\n", "given two stores"),
    ],
)
def test_replid_table_errors(text: str, why: str) -> None:
    with pytest.raises(ReplidFileError, match=why):
        parse_replids_csv(text)


def test_replid_table_reads_hex_and_fqdn() -> None:
    assert parse_replids_csv("store,server,replid\r\nPF1,ex1.corp.example,0x1A\n# note\n") == {
        ("EX1", 0x1A): "PF1"
    }


def _ingest(recs: list, tmp_path: Path, replids: str | None = None) -> tuple[dict, list[dict], list[dict]]:
    from pfscope.spark_jobs.exchange.build import ingest_records
    from pfscope.spark_jobs.exchange.formats import read_records

    p = tmp_path / "x.xml"
    write_wevtutil_xml(recs, p)
    table = parse_replids_csv(replids) if replids else None
    res = ingest_records(read_records(str(p)), replids=table)
    return res.summary, res.events, res.rejects


OUT_A = fx.lines(
    "An outgoing replication message was issued.",
    "Type: 0x4",
    "Message ID: <Z1@EX1.example>",
    "Folder(s): (1-50) IPM_SUBTREE\\Z",
    "CN min: 1-10, CN max: 1-12",
)
IN_A = fx.lines(
    "An incoming replication message was processed.",
    "Type: 0x4",
    "Message ID: <Z1@EX1.example>",
    "Folder(s): (2-50) IPM_SUBTREE\\Z",
    "CN min: 2-10, CN max: 2-12",
    "Server: " + fx.DN.format(ou="A", server="EX1"),
)


#: an incoming status message alone: its sender is named only by its Message ID
LONE_IN = fx.lines(
    "An incoming replication message was processed.",
    "Type: 0x10",
    "Message ID: <Q1@corp.example>",
    "Folder(s): (1-50) IPM_SUBTREE\\Z",
    "CNSET: 1-1,1-2",
    ", CNSET(FAI): {0}",
)


def odd_messages() -> list[ExportRecord]:
    """Records the build steps reject at each of their steps: a sender that cannot be named, with
    or without a key; an incoming event before its send or on its sender; a second sender; no
    folder; a CN range too wide to expand."""
    wide = OUT_A.replace("<Z1@", "<W1@").replace("CN min: 1-10, CN max: 1-12", "CN min: 1-1, CN max: 1-FFFFF")
    lone = LONE_IN
    internal = fx.lines(
        "An incoming replication message was processed.",
        "Type: 0x4",
        "Message ID: 1-77",
        "Folder(s): (1-50) IPM_SUBTREE\\Z",
        "CN min: 1-1, CN max: 1-2",
    )
    return [
        fx.rec("EX1.example", 3020, "2026-11-02T08:00:00Z", OUT_A),
        fx.rec("EX2.example", 3030, "2026-11-02T07:59:00Z", IN_A),  # before its send
        fx.rec("EX1.example", 3030, "2026-11-02T08:01:00Z", IN_A.replace("2-", "1-")),  # on its own sender
        fx.rec("EX3.example", 3020, "2026-11-02T08:02:00Z", OUT_A),  # the same id sent by another server
        fx.rec("EX3.example", 3020, "2026-11-02T08:03:00Z", "Type: 0x4\r\nMessage ID: <Z2@EX3.example>"),
        fx.rec("EX1.example", 3020, "2026-11-02T08:04:00Z", wide),
        fx.rec("EX2.example", 3027, "2026-11-02T08:05:00Z", lone),
        fx.rec("EX2.example", 3030, "2026-11-02T08:06:00Z", internal),
    ]


def test_clock_skew_own_sender_and_second_sender_are_rejects(tmp_path: Path) -> None:
    recs = [
        fx.rec("EX1.example", 3020, "2026-11-02T08:00:00Z", OUT_A),
        fx.rec("EX2.example", 3030, "2026-11-02T07:59:00Z", IN_A),  # before its send
        fx.rec("EX1.example", 3030, "2026-11-02T08:01:00Z", IN_A.replace("2-", "1-")),  # on its own sender
        fx.rec("EX3.example", 3020, "2026-11-02T08:02:00Z", OUT_A),  # the same id sent by another server
        fx.rec("EX3.example", 3020, "2026-11-02T08:03:00Z", "Type: 0x4\r\nMessage ID: <Z2@EX3.example>"),
    ]
    s, events, rejects = _ingest(recs, tmp_path, "server,replid,store\nEX2,2,EX1\n")
    reasons = {(r["server"], r["reason"]) for r in rejects}
    assert reasons == {
        ("EX2", "incoming event stamped before its outgoing event (clock skew between servers?)"),
        ("EX1", "incoming event on the message's own sender"),
        ("EX3", "the same Message ID is logged as sent by another server"),
        ("EX3", "content event without a Folder line"),
    }
    assert s["accounted"] and s["used"] == 1
    (send,) = [e for e in events if e["kind"] == "send"]
    assert send["to"] == ["EX2"] and send["derived"] == ["to", "cnset"]  # EX2's receive was rejected


def test_a_status_for_two_folders_is_two_messages(tmp_path: Path) -> None:
    text = fx.lines(
        "An outgoing replication message was issued.",
        "Type: 0x10",
        "Message ID: 1-77",
        "Folder(s): (1-50) IPM_SUBTREE\\A",
        "(1-51) IPM_SUBTREE\\B",
        "CNSET: 1-1,1-4",
        ", CNSET(FAI): {0}",
    )
    incoming = (
        text.replace("outgoing", "incoming")
        .replace("issued", "processed")
        .replace("1-", "2-")
        .replace("Message ID: 2-77", "Message ID: 1-77")
        + "\r\nServer: "
        + fx.DN.format(ou="A", server="EX1")
    )
    recs = [
        fx.rec("EX1.example", 3017, "2026-11-02T08:00:00Z", text),
        fx.rec("EX2.example", 3027, "2026-11-02T08:01:00Z", incoming),
    ]
    s, events, _ = _ingest(recs, tmp_path)
    sends = [e for e in events if e["kind"] == "send"]
    assert sorted(e["msg"] for e in sends) == ["EX1/1-77#EX1-50", "EX1/1-77#EX1-51"]
    assert {e["cnset"] for e in sends} == {"EX1:1-4"} and {e["to"][0] for e in sends} == {"EX2"}
    assert len([e for e in events if e["kind"] == "receive"]) == 2
    assert s["used"] == 2 and s["per_type"]["0x10"] == {"out": 1, "in": 1}
    assert s["replids"]["inferred"][0]["how"]  # EX2's REPLID 2 is EX1, from the pair


def test_unrendered_and_unreadable_records_say_why(tmp_path: Path) -> None:
    odd = fx.rec("EX1.example", 3020, "2026-11-02T08:00:00Z", "")
    odd.strings = ["something", "else"]
    bad_time = fx.rec("EX1.example", 3020, "2026-11-02T08:00:00Z", OUT_A)
    p = tmp_path / "x.xml"
    write_wevtutil_xml([odd], p, rendered=False)
    body = p.read_text()
    write_wevtutil_xml([bad_time], tmp_path / "y.xml")
    (tmp_path / "y.xml").write_text(
        (tmp_path / "y.xml").read_text().replace("2026-11-02T08:00:00.0000000Z", "soon")
    )
    from pfscope.spark_jobs.exchange.build import ingest_records
    from pfscope.spark_jobs.exchange.formats import read_records

    res = ingest_records([*read_records(str(p)), *read_records(str(tmp_path / "y.xml"))])
    assert "Data>something<" in body
    (r1, r2) = res.rejects
    assert r1["reason"].startswith("unrendered event") and "/f:RenderedXml" in r1["reason"]
    assert r2["reason"] == "bad time: time 'soon' is in no known format"
    assert res.summary["accounted"] and res.summary["rejected"] == 2


def test_a_range_too_wide_to_expand_is_a_reject(tmp_path: Path) -> None:
    wide = OUT_A.replace("CN min: 1-10, CN max: 1-12", "CN min: 1-1, CN max: 1-FFFFF")
    s, events, rejects = _ingest(
        [fx.rec("EX1.example", 3020, "2026-11-02T08:00:00Z", wide)],
        tmp_path,
        "server,replid,store\nEX1,2,EX2\n",
    )
    assert [r["reason"] for r in rejects] == [f"CN range of {0xFFFFF:,} own CNs is wider than 100,000"]
    assert events == [] and s["accounted"]


def test_own_cns_shown_by_status_sets_and_responses_become_changes_in_order(tmp_path: Path) -> None:
    dn = "Server: " + fx.DN.format(ou="A", server="EX1")

    def content(n: int, lo: int, hi: int) -> str:
        return fx.lines(
            "Type: 0x4",
            f"Message ID: <C{n}@EX1.example>",
            "Folder(s): (1-50) IPM_SUBTREE\\Z",
            f"CN min: 1-{lo:X}, CN max: 1-{hi:X}",
        )

    status = fx.lines(
        "Type: 0x10",
        "Message ID: <S1@EX1.example>",
        "Folder(s): (1-50) IPM_SUBTREE\\Z",
        "CNSET: 1-1,1-8",
        "2-3,2-4",
        ", CNSET(FAI): {0}",
    )
    recs = [
        fx.rec("EX1.example", 3020, "2026-11-02T08:00:00Z", content(1, 6, 8)),
        fx.rec(
            "EX2.example",
            3030,
            "2026-11-02T08:01:00Z",
            content(1, 6, 8).replace("1-6", "2-6").replace("1-8", "2-8").replace("(1-50)", "(2-50)")
            + "\r\n"
            + dn,
        ),
        fx.rec("EX1.example", 3017, "2026-11-02T09:00:00Z", status),
        fx.rec("EX1.example", 3020, "2026-11-02T10:00:00Z", content(2, 9, 9)),
    ]
    s, events, rejects = _ingest(recs, tmp_path, "server,replid,store\nEX1,2,EX2\n")
    assert rejects == []
    changes = [(e["ts"][11:16], e["cn"]) for e in events if e["kind"] == "change"]
    # 6-8 came first (08:00) but 1-5 only show in the 09:00 status: CNs only increase, so 1-8 are
    # written at 09:00; 9 at 10:00. EX2's CNs in the status set are not EX1's changes.
    assert changes == [("09:00", cn) for cn in range(1, 9)] + [("10:00", 9)]
    assert s["derived"]["own CNs written after their first message"] == 3
    status_line = next(e for e in events if e["kind"] == "send" and e["type"] == "status")
    assert status_line["cnset"] == "EX1:1-8;EX2:3-4" and status_line["derived"] == [
        "to"
    ]  # the set is printed


def test_an_incoming_event_alone_needs_a_sender_it_can_name(tmp_path: Path) -> None:
    lone = LONE_IN
    named = lone.replace("<Q1@corp.example>", "<Q2@EX3.corp.example>")
    s, events, rejects = _ingest(
        [
            fx.rec("EX2.example", 3027, "2026-11-02T08:00:00Z", lone),
            fx.rec("EX2.example", 3027, "2026-11-02T08:01:00Z", named),
            fx.rec("EX3.example", 3079, "2026-11-02T08:02:00Z", "thread error"),
        ],
        tmp_path,
    )
    assert [r["reason"] for r in rejects] == [
        "no outgoing event, no Server line, and the Message ID names no known server"
    ]
    (send,) = [e for e in events if e["kind"] == "send"]
    assert send["store"] == "EX3" and send["derived"] == ["event", "ts"] and s["accounted"]
