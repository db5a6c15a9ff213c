"""parse(render(m)) == m for random messages in every published layout: random CN sets and
ranges (12-digit GLOBCNTs, lower- or upper-case hex), folder paths with any Unicode, backslashes,
parentheses, colons and ``{0}``, CRLF or LF, blank lines between fields, wrapped Server DNs."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pfscope.spark_jobs.exchange.parse import (
    TYPE_NAMES,
    Cn,
    DescriptionError,
    MessageIdEntry,
    ReplicationEvent,
    Rfi,
    parse_description,
)
from tests.render import HEADERS, LAYOUTS, frame_description, render_description, wrap_dn

GLOBCNT = st.integers(1, 0xFFFF_FFFF_FFFF)  # GLOBCNTs are 48 bits: up to 12 hex digits
REPLID = st.integers(1, 0xFFFF)
cns = st.builds(Cn, REPLID, GLOBCNT)


@st.composite
def pair(draw: st.DrawFn) -> tuple[Cn, Cn]:
    r = draw(REPLID)
    a, b = sorted((draw(GLOBCNT), draw(GLOBCNT)))
    return Cn(r, a), Cn(r, b)


pairs = st.lists(pair(), max_size=4)
# any Unicode but surrogates and line breaks; no blank at either end (lines are read stripped)
line_text = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\r\n"), max_size=30).filter(
    lambda t: t == t.strip()
)
tricky = st.sampled_from(
    [
        "{0}",
        "a\\b",
        "(1-1)",
        "x: y",
        "CN min: 1-2",
        "Type: 0x2",
        "Server: /O=X",
        "RFIs: 3",
        "新しい フォルダー",
        "Ünïcödé (2)",
        "1: 2-3,4-5,6",
        "--- : subject",
    ]
)
segment = st.one_of(line_text, tricky)
paths = st.builds(
    lambda root, segs: "\\".join([root, *segs]),
    st.sampled_from(["IPM_SUBTREE", "NON_IPM_SUBTREE"]),
    st.lists(segment, max_size=4),
).filter(lambda p: p == p.strip())
names = st.from_regex(r"[B-DF-HJ-NP-TV-Z0-9_]{1,8}( [B-DF-HJ-NP-TV-Z0-9_]{1,8})?", fullmatch=True)
dns = st.builds(
    lambda o, ou, s: f"/O={o}/OU={ou}/CN=CONFIGURATION/CN=SERVERS/CN={s}/CN=MICROSOFT PUBLIC MDB",
    names,
    names,
    names,
)
smtp = st.builds(
    lambda a, b: f"<{a}@{b}>",
    st.from_regex(r"[0-9A-F]{8,24}", fullmatch=True),
    st.from_regex(r"[a-z0-9]{1,8}(\.[a-z0-9]{1,8}){0,2}", fullmatch=True),
)
msg_ids = st.one_of(smtp, cns.map(str))
databases = st.text(
    st.characters(exclude_categories=("Cs",), exclude_characters='\r\n"\u201c\u201d'), max_size=40
)
details = st.one_of(st.none(), line_text.map(lambda s: f"--- : {s}".strip()))


@st.composite
def events(draw: st.DrawFn) -> ReplicationEvent:
    lo, hi = draw(pair())
    has_range = draw(st.booleans())
    return ReplicationEvent(
        type_code=draw(st.sampled_from(sorted(TYPE_NAMES))),
        msg_id=draw(msg_ids),
        database=draw(st.one_of(st.none(), databases)),
        folders=draw(st.lists(st.tuples(cns, paths), max_size=3)),
        cn_min=lo if has_range else None,
        cn_max=hi if has_range else None,
        cnset=draw(st.one_of(st.none(), pairs)),
        cnset_fai=draw(st.one_of(st.none(), pairs)),
        rfis=draw(
            st.lists(st.builds(Rfi, cns, cns, st.integers(0, 99999), st.one_of(st.none(), paths)), max_size=3)
        ),
        idcn_deleted=draw(st.one_of(st.none(), pairs)),
        server_dn=draw(st.one_of(st.none(), dns)),
        message_ids=draw(st.lists(st.builds(MessageIdEntry, cns, cns, details), max_size=4)),
    )


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ev=events(),
    layout=st.sampled_from(LAYOUTS),
    newline=st.sampled_from(["\r\n", "\n"]),
    outgoing=st.booleans(),
    blank=st.booleans(),
    lower=st.booleans(),
    data=st.data(),
)
def test_parse_reads_back_every_layout(
    ev: ReplicationEvent,
    layout: str,
    newline: str,
    outgoing: bool,
    blank: bool,
    lower: bool,
    data: st.DataObject,
) -> None:
    dn = ev.server_dn or ""
    breaks = [i for i, ch in enumerate(dn) if ch in "/= " and i > 0]
    cuts = data.draw(st.lists(st.sampled_from(breaks), max_size=4)) if breaks else []
    text = render_description(
        ev, layout, newline=newline, outgoing=outgoing, dn_cuts=cuts, blank_lines=blank, lower_hex=lower
    )
    if ev.cn_min is not None:  # printed once, whichever line carries it
        assert text.lower().count(f"cn min: {str(ev.cn_min).lower()}") == 1 + sum(
            f"cn min: {str(ev.cn_min).lower()}" in x.lower()
            for x in [*(f[1] for f in ev.folders), *(r.path or "" for r in ev.rfis), ev.database or ""]
        )
    back = parse_description(text)
    assert back.meaning() == ev.meaning(), text
    assert back.ignored == []
    assert back.direction == ("out" if outgoing else "in")
    # as pasted: under the record's header, indented, with Windows 2003's help line below
    header = data.draw(st.sampled_from(sorted(HEADERS)))
    indent = data.draw(st.sampled_from(["", "  ", "   ", "\t", "\t  "]))
    framed, ignored = frame_description(
        text, header, indent=indent, help_line=data.draw(st.booleans()), newline=newline
    )
    back = parse_description(framed)
    assert back.meaning() == ev.meaning(), framed
    assert back.ignored == ignored


def test_wrapped_dns_are_joined_back() -> None:
    dn = "/O=ORG/OU=SITE A/CN=CONFIGURATION/CN=SERVERS/CN=EX07/CN=MICROSOFT PUBLIC MDB"
    assert wrap_dn(dn, [2, 14, 52, 55]) == [
        "/O",
        "=ORG/OU=SITE",
        "A/CN=CONFIGURATION/CN=SERVERS/CN=EX07",
        "/CN",
        "=MICROSOFT PUBLIC MDB",
    ]
    ev = parse_description("Type: 0x2\nMessage ID: 1-2\nServer:\n" + "\n".join(wrap_dn(dn, [2, 14, 52, 55])))
    assert ev.server_dn == dn


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        # a line the parser does not know, carrying a CN: never dropped silently
        (
            "Type: 0x4\nMessage ID: 1-2\nCN min: 1-1, CN max: 1-5\nReplicated 5-1A too",
            "a line not understood carries",
        ),
        (
            "Type: 0x4\nMessage ID: 1-2\nSome folder IPM_SUBTREE\\X moved",
            "'Some folder IPM_SUBTREE\\\\X moved'",
        ),
        ("Type: 0x2\nMessage ID: <a@b>\nForwarded <c@d.e>", "a line not understood carries"),
        # localized descriptions: no published text shows one, so the language is named as unknown
        (
            "Eine ausgehende Replikationsnachricht wurde ausgegeben.\nTyp: 0x2\nNachrichten-ID: <a@b.c>",
            "language is not known",
        ),
        ("Un message de réplication sortant a été émis.\nType de message : 0x2", "language is not known"),
        ("Message IDs: 3\n1: 1-2, 1-3\nType: 0x4\nMessage ID: 1-9", "Message IDs: 3 announced, 1 listed"),
        ('Type: 0x4\nMessage ID: 1-2\nDatabase "SG\\Store', "Database: no closing quote"),
        ("Outgoing message type <value>\nMessage ID: <id>", "a template, not an event"),
        ("Type: 0x4\nMessage ID: <id>", "neither an internal ID"),
        ("Type: 0x4\nMessage ID: 1-2\nFolder: <folder name>", "Folder: not '(FID) path'"),
        ("\x00\x01garbage\ufffd", "no Type line"),
    ],
)
def test_what_cannot_be_read_says_why(text: str, reason: str) -> None:
    with pytest.raises(DescriptionError) as e:
        parse_description(text)
    assert reason in str(e.value)


def test_a_line_not_understood_without_data_is_kept_as_ignored() -> None:
    ev = parse_description(
        "Description:\nAn outgoing replication message was issued.\nType: 0x2\nMessage ID: 1-2\n"
        "For more information, see Help and Support Center."
    )
    assert ev.ignored == ["Description:", "For more information, see Help and Support Center."]


_PREFIXES = [
    "Type: ",
    "Type ",
    "Outgoing message type ",
    "Message ID: ",
    "Message IDs: ",
    "Database ",
    'Database "',
    "Folder(s): ",
    "Folder: (",
    "CN min: ",
    "CN max: ",
    "CNSET: ",
    ", CNSET(FAI): ",
    "CNSET (FAI): ",
    "RFIs: ",
    "1) FID: 1-2, PFID: 1-1, Offset: ",
    "1: 1-2,1-1,",
    "1: 1-2, ",
    "--- : ",
    "IDCN deleted: ",
    "Server: ",
    "Server:",
    "An outgoing replication message was issued.",
    "{0}",
    "1-2,1-",
    "",
]
_TAILS = st.one_of(
    st.text(max_size=20), st.from_regex(r"(0x)?[0-9A-Fa-fx]{0,20}(-[0-9A-Fa-f]{0,20})?", fullmatch=True)
)


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(_PREFIXES), _TAILS), max_size=14),
    st.sampled_from(["\r\n", "\n", "\r"]),
)
def test_any_text_is_read_or_refused_with_a_reason_never_a_crash(
    parts: list[tuple[str, str]], nl: str
) -> None:
    text = nl.join(a + b for a, b in parts)
    try:
        ev = parse_description(text)
    except DescriptionError as e:
        assert str(e)
    else:
        assert ev.type_code in TYPE_NAMES and ev.msg_id


def test_the_windows_2003_help_line_after_a_dn_is_not_taken_into_it() -> None:
    help_line = (
        "For more information, see Help and Support Center at http://go.microsoft.com/fwlink/events.asp."
    )
    for server in (
        "Server: /O=A/OU=B/CN=CONFIGURATION/CN=SERVERS/CN=X/CN=MICROSOFT PUBLIC MDB",
        "Server:\r\n/O=A/OU=B/CN=CONFIGURATION/CN=SERVERS/CN=X/CN =MICROSOFT\r\nPUBLIC MDB",
    ):
        ev = parse_description(f"Type: 0x2\r\nMessage ID: 1-2\r\n{server}\r\n\r\n{help_line}")
        assert ev.server_dn is not None and ev.server_dn.endswith("MICROSOFT PUBLIC MDB")
        assert ev.ignored == [help_line]
