"""The description parser: every Type, both RFI layouts, multi-line CN sets, empty sets, the
5.x and 2007 layouts, long Unicode paths, and the reasons it gives for what it cannot read."""

from __future__ import annotations

import pytest

from pfscope.spark_jobs.exchange.parse import (
    Cn,
    DescriptionError,
    label_insertion_strings,
    parse_description,
    server_from_dn,
    site_from_dn,
)
from tests.unit.exchange import three_servers as fx


def _by_type(events: list) -> dict[int, object]:
    out = {}
    for r in events:
        try:
            ev = parse_description(r.message)
        except DescriptionError:
            continue
        out.setdefault(ev.type_code, ev)
    return out


def test_every_type_of_the_fixture_parses() -> None:
    seen = _by_type(fx.EX07_EVENTS + fx.LDN_EVENTS + fx.PAR_EVENTS)
    assert set(seen) == {0x2, 0x4, 0x8, 0x10, 0x20, 0x80000002, 0x80000004}
    names = {code: ev.type_name for code, ev in seen.items()}
    assert names[0x80000002] == names[0x80000004] == "backfill_response"
    assert names[0x20] == "status_request" and names[0x8] == "backfill_request"


def test_outgoing_hierarchy_2007_with_long_rfi_layout() -> None:
    ev = parse_description(fx.EX07_EVENTS[0].message)
    assert ev.direction == "out" and ev.type_code == 0x2
    assert ev.msg_id == "<A1@EX07.corp.example>"
    assert ev.database == "SG2\\Public Folder Database"
    assert (ev.cn_min, ev.cn_max) == (Cn(1, 0x2F0), Cn(1, 0x2F4))
    assert len(ev.rfis) == 1
    rfi = ev.rfis[0]
    assert (rfi.fid, rfi.pfid, rfi.offset) == (Cn(1, 0x4B1C), Cn(1, 1), 28)
    assert rfi.path == fx.LONG and len(fx.LONG) > 400 and "設計" in rfi.path
    assert not ev.short_rfis


def test_incoming_hierarchy_55_on_separate_lines_with_server_on_the_next_line() -> None:
    ev = parse_description(fx.LDN_EVENTS[0].message)
    assert ev.direction == "in"
    assert (ev.cn_min, ev.cn_max) == (Cn(5, 0x2F0), Cn(5, 0x2F4))
    assert ev.idcn_deleted == [(Cn(5, 0x2E0), Cn(5, 0x2E4))]
    assert ev.server_dn == fx.DN_EX07
    assert ev.rfis[0].fid == Cn(5, 0x4B1C) and ev.short_rfis


def test_backfill_response_55_multi_line_cnset_empty_fai_and_short_rfis() -> None:
    ev = parse_description(fx.LDN_EVENTS[3].message)
    assert ev.type_code == 0x80000002
    assert ev.cnset == [(Cn(3, 0x2A01), Cn(3, 0x2A01)), (Cn(3, 0x2A03), Cn(3, 0x2A03))]
    assert ev.cnset_fai == []
    assert ev.idcn_deleted == []  # "IDCN Deleted:" then "{0}" on the next line
    assert [(r.fid, r.pfid, r.offset) for r in ev.rfis] == [
        (Cn(3, 9), Cn(1, 4), 48),
        (Cn(3, 0xA), Cn(1, 5), 512),
    ]
    assert ev.rfis[1].path == "NON_IPM_SUBTREE\\OFFLINE ADDRESS BOOK\\EX:/o=EXAMPLE/ou=LONDON"


def test_status_50_folder_list_and_server_on_one_line() -> None:
    text = "\r\n".join(
        [
            "An incoming replication message was processed.",
            "Type: 0x10",
            "Message ID: 1-5D21",
            "Folder(s): (12-3F0A) IPM_SUBTREE\\Projects\\Alpha",
            "(12-3F0B) IPM_SUBTREE\\Projects\\Beta",
            "Server: /O=EXAMPLE/OU=PARIS/CN=CONFIGURATION/CN=SERVERS/CN=PARPF2/CN=MICROSOFT PUBLIC MDB",
        ]
    )
    ev = parse_description(text)
    assert ev.folders == [
        (Cn(0x12, 0x3F0A), "IPM_SUBTREE\\Projects\\Alpha"),
        (Cn(0x12, 0x3F0B), "IPM_SUBTREE\\Projects\\Beta"),
    ]
    assert ev.cnset is None
    assert server_from_dn(ev.server_dn or "") == "PARPF2" and site_from_dn(ev.server_dn or "") == "PARIS"


def test_2003_backfill_request_layout_and_lf_only_line_ends() -> None:
    ev = parse_description(fx.PAR_EVENTS[1].message.replace("\r\n", "\n"))
    assert ev.type_code == 0x8 and ev.message_type_label and ev.direction == "out"
    assert ev.folders[0][0] == Cn(7, 0x4B1C)
    assert ev.database == "First Storage Group\\Public Folder Store (PARPF2)"
    assert ev.cnset == [(Cn(7, 0x300), Cn(7, 0x302))] and ev.cnset_fai == []


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty description"),
        ("An outgoing replication message was issued.\r\nMessage ID: 1-2", "no Type line"),
        ("Type: 0x40\r\nMessage ID: 1-2", "unknown Type 0x40"),
        ("Type: 0x2\r\nCN min: 1-1, CN max: 1-2", "no Message ID"),
        ("Type: 0x4\r\nMessage ID: 1-2\r\nCN min: 1-5", "CN min without CN max"),
        ("Type: 0x4\r\nMessage ID: 1-2\r\nCN min: 1-9, CN max: 1-5", "are not a range"),
        ("Type: 0x80000004\r\nMessage ID: 1-2\r\nCNSET: 1-9,1-5", "bad range"),
        ("Type: 0x80000004\r\nMessage ID: 1-2\r\nCNSET: 1-5,2-9", "bad range"),
        (
            "Type: 0x2\r\nMessage ID: 1-2\r\nRFIs: 2\r\n1) FID: 1-4, PFID: 1-1, Offset: 2\r\nA",
            "2 announced, 1 found",
        ),
        ("Type: 0x2\r\nMessage ID: 1-2\r\nRFIs: 1\r\n1) FID: x, PFID: 1-1", "RFI 1: not"),
    ],
)
def test_what_cannot_be_read_says_why(text: str, reason: str) -> None:
    with pytest.raises(DescriptionError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        parse_description(text)


def test_insertion_strings_are_labelled_by_their_shapes() -> None:
    regular = [
        "0x4",
        "<M1@EX01.example>",
        "SG1\\Public Folder Database",
        "(2-1A) IPM_SUBTREE\\Sales",
        "3-10",
        "3-1F",
        "0",
        "{0}",
        fx.DN_EX07,
    ]
    ev = parse_description(label_insertion_strings(regular) or "")
    assert (ev.type_code, ev.msg_id, ev.database) == (0x4, "<M1@EX01.example>", "SG1\\Public Folder Database")
    assert ev.folders == [(Cn(2, 0x1A), "IPM_SUBTREE\\Sales")]
    assert (ev.cn_min, ev.cn_max, ev.idcn_deleted, ev.server_dn) == (Cn(3, 0x10), Cn(3, 0x1F), [], fx.DN_EX07)
    backfill = ["0x80000004", "1-3C10", "(2-1A) IPM_SUBTREE\\Sales", "3-1,3-4\r\n3-9,3-9", "{0}", "0"]
    ev = parse_description(label_insertion_strings(backfill) or "")
    assert ev.cnset == [(Cn(3, 1), Cn(3, 4)), (Cn(3, 9), Cn(3, 9))] and ev.cnset_fai == []
    # a whole description passed as one string is read as it is
    assert label_insertion_strings([fx.EX07_EVENTS[0].message]) == fx.EX07_EVENTS[0].message


@pytest.mark.parametrize(
    "strings",
    [
        [],
        ["Replication is stalled"],
        ["0x4", "not an id"],
        ["0x4", "<a@b>", "3-10"],
        ["0x4", "<a@b>", "3-1", "3-2", "x"],
    ],
)
def test_insertion_strings_that_fit_no_layout_are_not_guessed(strings: list[str]) -> None:
    assert label_insertion_strings(strings) is None


_HEAD = "An outgoing replication message was issued.\n"


@pytest.mark.parametrize(
    ("text", "want"),
    [
        # labels run together or spaced otherwise than the published texts
        (_HEAD + "Type: 0x2\nMessage ID: <a@b.c>\nCNMin: 1-100, CNMax: 1-200", {"range": ("1-100", "1-200")}),
        (
            _HEAD + "TYPE : 0x2\nMESSAGE ID : <a@b.c>\nCN Min : 1-100 , CN Max : 1-200",
            {"range": ("1-100", "1-200")},
        ),
        (
            _HEAD + "Type: 0x2\nMessage ID: <a@b.c>\nCN min: 1-100; CN max: 1-200",
            {"range": ("1-100", "1-200")},
        ),
        (
            _HEAD + "\tType:\t0x2\n\t\tMessage ID:\t<a@b.c>\n\tCN min:\t1-100,\tCN max:\t1-200",
            {"range": ("1-100", "1-200")},
        ),
        (
            _HEAD + "Type:\u00a00x2\nMessage\u00a0ID: <a@b.c>\nCN\u00a0min: 1-100, CN max: 1-200",
            {"range": ("1-100", "1-200")},
        ),
        # an SMTP id printed without its angle brackets is kept as printed
        (
            _HEAD + "Type: 0x2\nMessage ID: 7F3A@EX07.corp.example\nCN min: 1-1, CN max: 1-2",
            {"msg_id": "7F3A@EX07.corp.example"},
        ),
        # Type without 0x: decimal when that names a Type, else hexadecimal; a note after it is kept aside
        (_HEAD + "Type: 80000002\nMessage ID: 1-2\nCNSET: 1-1,1-5", {"type": 0x80000002}),
        (_HEAD + "Type: 10\nMessage ID: 1-2\nFolder(s): (1-1) IPM_SUBTREE", {"type": 0x10}),
        (_HEAD + "Type: 4\nMessage ID: 1-2\nCN min: 1-1, CN max: 1-2", {"type": 0x4}),
        (
            _HEAD + "Type: 0x00000002 (hierarchy)\nMessage ID: 1-2\nCN min: 1-1, CN max: 1-2",
            {"type": 0x2, "ignored": ["(hierarchy)"]},
        ),
        # "Folder Name:" and "IDCNDeleted:" spellings
        (
            _HEAD
            + "Outgoing message type: 0x8\nMessage ID: <a@b.c>\nFolder Name: (1-5) IPM_SUBTREE\\X\nCNSET: 1-1,1-5\n"
            "IDCNDeleted: 1-3,1-4",
            {"folders": [("1-5", "IPM_SUBTREE\\X")], "idcn": [("1-3", "1-4")]},
        ),
        # the Server line as an LDAP DN or a bare host name
        (
            _HEAD
            + "Type: 0x2\nMessage ID: 1-2\nCN min: 1-1, CN max: 1-2\nServer: CN=Public Folder Store (EX03),"
            "CN=First Storage Group,CN=InformationStore,CN=EX03,CN=Servers,CN=First Administrative Group,"
            "CN=Administrative Groups,CN=Org,CN=Microsoft Exchange,CN=Services,CN=Configuration,DC=corp,DC=example",
            {"server": "EX03"},
        ),
        (
            _HEAD
            + "Type: 0x10\nMessage ID: <a@b.c>\nFolder: (1-5) IPM_SUBTREE\\X\nServer: ex2010.corp.example",
            {"server": "EX2010"},
        ),
    ],
)
def test_unpublished_spellings_of_the_published_fields(text: str, want: dict) -> None:
    for t in (text, text.replace("\n", "\r\n")):
        ev = parse_description(t)
        if "range" in want:
            assert (str(ev.cn_min), str(ev.cn_max)) == want["range"]
        if "msg_id" in want:
            assert ev.msg_id == want["msg_id"]
        if "type" in want:
            assert ev.type_code == want["type"]
        if "folders" in want:
            assert [(str(f), p) for f, p in ev.folders] == want["folders"]
        if "idcn" in want:
            assert [(str(a), str(b)) for a, b in ev.idcn_deleted or []] == want["idcn"]
        if "server" in want:
            assert server_from_dn(ev.server_dn or "") == want["server"]
        assert ev.ignored == want.get("ignored", [])


def test_a_pasted_record_header_is_kept_aside_whatever_it_holds() -> None:
    """Event Viewer's text copy prints the record's header above the description; its dates and
    computer names look like CNs ("2010-05", "DC-01") but name the event, not the message."""
    text = (
        "Log Name:      Application\nSource:        MSExchangeIS Public Store\n"
        "Date:          2010-05-19T16:16:12.000\nEvent ID:      3020\nTask Category: Replication Outgoing Messages\n"
        "Level:         Information\nKeywords:      Classic\nUser:          N/A\nComputer:      DC-01.corp.example\n"
        "Description:\nAn outgoing replication message was issued.\n\nType: 0x4\nMessage ID: <a@b.c>\n"
        'Folder: (1-5) IPM_SUBTREE\\X\nDatabase "SG\\PF"\nCN min: 1-100, CN max: 1-200'
    )
    ev = parse_description(text)
    assert ev.type_code == 0x4 and ev.database == "SG\\PF" and str(ev.cn_max) == "1-200"
    assert ev.ignored[:9] == [ln.strip() for ln in text.splitlines()[:9]] and ev.ignored[9:] == [
        "Description:"
    ]
    # "Description: <text>" on one line (KB 177673): the text is read
    ev = parse_description(
        "Description: An incoming replication message was processed.\nType: 0x10\n"
        "Message ID: 1-24687\nFolder(s): (44-64981) IPM_SUBTREE\\A"
    )
    assert ev.direction == "in" and ev.folders == [(Cn(0x44, 0x64981), "IPM_SUBTREE\\A")]
    # a header line never hides data the description itself carries
    with pytest.raises(DescriptionError, match="line not understood"):
        parse_description("Event ID: 3020\nType: 0x4\nMessage ID: 1-2\nMoved 5-1A to IPM_SUBTREE\\X")
    with pytest.raises(DescriptionError, match="'Source: 5-1A'"):  # below the description: data is data
        parse_description("Type: 0x4\nMessage ID: 1-2\nCN min: 5-1, CN max: 5-2\nSource: 5-1A")


def test_the_help_line_is_never_an_rfi_path() -> None:
    ev = parse_description(
        "Type: 0x2\r\nMessage ID: 1-2\r\nRFIs: 1\r\n1) FID: 1-1, PFID: 1-1, Offset: 0\r\n\r\n"
        "For more information, see Help and Support Center at http://go.microsoft.com/fwlink/events.asp."
    )
    assert ev.rfis[0].path is None and len(ev.ignored) == 1


def test_rfi_entries_with_or_without_their_labels_and_a_dn_that_ends_a_sentence() -> None:
    ev = parse_description(
        "Type: 0x2\nMessage ID: 1-2\nRFIs: 2\n1) 1-4B1C, 1-1, 28\nIPM_SUBTREE\\A\n"
        "2: FID: 1-5, PFID: 1-1, Offset: 3\nIPM_SUBTREE\\B\n"
        "Server: /O=A/OU=B/CN=CONFIGURATION/CN=SERVERS/CN=X/CN=MICROSOFT PUBLIC MDB."
    )
    assert [(str(r.fid), r.offset, r.path) for r in ev.rfis] == [
        ("1-4B1C", 28, "IPM_SUBTREE\\A"),
        ("1-5", 3, "IPM_SUBTREE\\B"),
    ]
    assert (
        ev.server_dn == "/O=A/OU=B/CN=CONFIGURATION/CN=SERVERS/CN=X/CN=MICROSOFT PUBLIC MDB"
        and ev.ignored == []
    )
    # what a web copy ran into the DN is read as a line: kept aside, or refused when it carries data
    ev = parse_description(
        "Type: 0x2\nMessage ID: 1-2\nServer: /O=A/OU=B/CN=CONFIGURATION/CN=SERVERS/CN=X"
        "/CN=MICROSOFT PUBLIC MDB Event Type: Warning"
    )
    assert (
        ev.server_dn.endswith("PUBLIC MDB") and ev.ignored == ["Event Type: Warning"] and ev.run_on_lines == 1
    )
    with pytest.raises(DescriptionError, match="line not understood"):
        parse_description(
            "Type: 0x2\nMessage ID: 1-2\nServer: /O=A/OU=B/CN=CONFIGURATION/CN=SERVERS/CN=X"
            "/CN=MICROSOFT PUBLIC MDB moved 5-1A"
        )


def test_exchange_2003s_own_trailer_is_kept_aside() -> None:
    trailer = "For more information, click http://www.microsoft.com/contentredirect.asp."
    ev = parse_description(
        "An outgoing replication message was issued.\r\n\r\nType: 0x2\r\nMessage ID: <a@b.c>\r\n"
        'Database "First Storage Group\\Public Folder Store (EX1)"\r\nCN min: 1-C2B2, CN max: 1-C2B2'
        "\r\n\r\nRFIs: 1\r\n1) FID: 1-C2A8, PFID: 1-1, Offset: 28\r\n\r\n" + trailer
    )
    assert ev.rfis[0].path is None and ev.ignored == [trailer]


def test_an_event_pickles_back_to_itself() -> None:
    """Events cross to Spark's workers and back as pickles (``__reduce__``: every field, in order)."""
    import dataclasses
    import pickle

    from pfscope.spark_jobs.exchange.values import Cn, MessageIdEntry, ReplicationEvent, Rfi

    ev = ReplicationEvent(
        0x2,
        "<a@b>",
        "out",
        "SG\\Store",
        [(Cn(1, 0x50), "IPM_SUBTREE\\A")],
        Cn(1, 2),
        Cn(1, 9),
        [(Cn(1, 2), Cn(1, 9))],
        [(Cn(3, 1), Cn(3, 4))],
        [Rfi(Cn(1, 0x50), Cn(1, 1), 7, "A")],
        [(Cn(2, 5), Cn(2, 6))],
        "/o=X/cn=EX1",
        [MessageIdEntry(Cn(1, 3), Cn(1, 4), "--- : s : t")],
        ["ignored"],
        True,
        True,
        True,
        True,
        True,
        2,
        3,
    )
    back = pickle.loads(pickle.dumps(ev, protocol=pickle.HIGHEST_PROTOCOL))
    assert back == ev and dataclasses.astuple(back) == dataclasses.astuple(ev)
    assert all(getattr(back, f.name) is not None for f in dataclasses.fields(ev))  # none left at its default


def test_a_cn_prints_as_its_dataclass_would() -> None:
    """``Cn.__repr__`` is written out for speed: the text (in each event's stored ``meaning``
    digest) is the dataclass's own."""
    import dataclasses

    from pfscope.spark_jobs.exchange.values import Cn

    plain = dataclasses.make_dataclass("Cn", [("replid", int), ("globcnt", int)], frozen=True)
    for replid, globcnt in [(1, 2), (0, 2**48 - 1), (0x1234, 0)]:
        assert repr(Cn(replid, globcnt)) == repr(plain(replid, globcnt))
