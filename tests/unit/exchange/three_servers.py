"""A hand-written three-server log in the layouts of shared/design/exchange-events.md, with our
own values. Each server prints REPLIDs its own way:

    store   EX07 (2007)   LDNPF1 (5.5)   PARPF2 (2000)
    PF07    1             5              7
    PFLDN   2             1              2
    PFPAR   3             3              1

The folder IPM_SUBTREE\\Engineering\\Spécifications... was created on EX07 (FID 1-4B1C there,
5-4B1C on LDNPF1, 7-4B1C on PARPF2).
"""

from __future__ import annotations

from pfscope.spark_jobs.model.timeutil import parse_ts
from tests.render import ExportRecord

CRLF = "\r\n"
REPLIDS_CSV = (
    "server,replid,store\nEX07,1,PF07\nEX07,2,PFLDN\nEX07,3,PFPAR\nLDNPF1,1,PFLDN\nLDNPF1,5,PF07\n"
    "LDNPF1,3,PFPAR\nPARPF2,1,PFPAR\nPARPF2,7,PF07\nPARPF2,2,PFLDN\n"
)
LONG = "IPM_SUBTREE\\Engineering\\Spécifications techniques — 設計\\" + "\\".join(
    f"Niveau {i} (archivé, « été »)" for i in range(1, 16)
)
DN = "/O=EXAMPLE/OU={ou}/CN=CONFIGURATION/CN=SERVERS/CN={server}/CN=MICROSOFT PUBLIC MDB"
DN_EX07 = DN.format(ou="REDMOND", server="EX07")
DN_LDN = DN.format(ou="LONDON", server="LDNPF1")
DN_PAR = DN.format(ou="PARIS", server="PARPF2")
EX07 = "EX07.corp.example"
LDN = "LDNPF1"  # the Event Viewer CSV has no computer column: the file is named after it
PAR = "PARPF2.corp.example"


def lines(*xs: str) -> str:
    return CRLF.join(xs)


def rec(
    server: str, event_id: int, ts: str, text: str, provider: str = "MSExchangeIS Public Store"
) -> ExportRecord:
    return ExportRecord(server, event_id, parse_ts(ts), text, [], provider)


# --- EX07 (Exchange 2007 layouts) -------------------------------------------------------------
EX07_EVENTS = [
    rec(
        EX07,
        3018,
        "2026-11-02T08:00:00Z",
        lines(
            "An outgoing replication message was issued.",
            "Type: 0x2",
            "Message ID: <A1@EX07.corp.example>",
            'Database "SG2\\Public Folder Database"',
            "CN min: 1-2F0, CN max: 1-2F4",
            "RFIs: 1",
            "1) FID: 1-4B1C, PFID: 1-1, Offset: 28",
            LONG,
        ),
    ),
    rec(
        EX07,
        3020,
        "2026-11-02T08:10:00Z",
        lines(
            "An outgoing replication message was issued.",
            "Type: 0x4",
            "Message ID: <A2@EX07.corp.example>",
            f"Folder(s): (1-4B1C) {LONG}",
            'Database "SG2\\Public Folder Database"',
            "CN min: 1-300, CN max: 1-302",
            "RFIs: 0",
        ),
    ),
    rec(
        EX07,
        3026,
        "2026-11-02T09:01:00Z",
        lines(
            "An incoming replication message was processed.",
            "Incoming message type: 0x8",
            "Message ID: <B1@PARPF2.corp.example>",
            f"Folder: (1-4B1C) {LONG}",
            'Database "SG2\\Public Folder Database"',
            "CNSET: 1-300,1-302",
            ", CNSET(FAI): {0}",
            f"Server: {DN_PAR}",
        ),
    ),
    rec(
        EX07,
        3021,
        "2026-11-02T09:05:00Z",
        lines(
            "An outgoing replication message was issued.",
            "Type: 0x80000004",
            "Message ID: <A3@EX07.corp.example>",
            f"Folder(s): (1-4B1C) {LONG}",
            'Database "SG2\\Public Folder Database"',
            "CNSET: 1-300,1-300",
            "1-302,1-302",
            ", CNSET(FAI): {0}",
            "RFIs: 0",
        ),
    ),
    rec(
        EX07,
        3027,
        "2026-11-02T10:02:00Z",
        lines(
            "An incoming replication message was processed.",
            "Type: 0x10",
            "Message ID: 1-5D21",
            f"Folder(s): (1-4B1C) {LONG}",
            "CNSET: 1-2F0,1-2F4",
            "1-300,1-302",
            ", CNSET(FAI): {0}",
            f"Server: {DN_LDN}",
        ),
    ),
    rec(
        EX07,
        3079,
        "2026-11-02T11:00:00Z",
        lines("Unexpected replication thread error 0x3f0.", "EcReplStartup", "FReplAgent"),
    ),
    rec(EX07, 3085, "2026-11-02T11:05:00Z", "Outgoing replication message failed to be sent to PARPF2."),
    rec(EX07, 1000, "2026-11-02T11:06:00Z", "Message tracking started.", provider="MSExchangeTransport"),
]

# --- LDNPF1 (Exchange 5.5 layouts; Event Viewer CSV) -----------------------------------------
LDN_EVENTS = [
    rec(
        LDN,
        3028,
        "2026-11-02T08:03:00Z",
        lines(
            "An incoming replication message was processed.",
            "Type: 0x2",
            "Message ID: <A1@EX07.corp.example>",
            "CN min: 5-2F0",
            "CN max: 5-2F4",
            "RFIs: 1",
            "1: 5-4B1C,1-1,28",
            LONG,
            "IDCN deleted: 5-2E0,5-2E4",
            "Server:",
            DN_EX07,
        ),
    ),
    rec(
        LDN,
        3030,
        "2026-11-02T08:14:00Z",
        lines(
            "An incoming replication message was processed.",
            "Type: 0x4",
            "Message ID: <A2@EX07.corp.example>",
            f"Folder(s): (5-4B1C) {LONG}",
            "CN min: 5-300",
            "CN max: 5-302",
            "RFIs: 0",
            "IDCN deleted: {0}",
            "Server:",
            DN_EX07,
        ),
    ),
    rec(
        LDN,
        3017,
        "2026-11-02T10:00:00Z",
        lines(
            "An outgoing replication message was issued.",
            "Type: 0x10",
            "Message ID: 1-5D21",
            f"Folder(s): (5-4B1C) {LONG}",
            "CNSET: 5-2F0,5-2F4",
            "5-300,5-302",
            ", CNSET(FAI): {0}",
        ),
    ),
    rec(
        LDN,
        3019,
        "2026-11-02T10:30:00Z",
        lines(
            "An outgoing replication message was issued.",
            "Type: 0x80000002",
            "Message ID: 1-3C10",
            "CNSET: 3-2A01,3-2A01",
            "3-2A03,3-2A03",
            ", CNSET(FAI): {0}",
            "RFIs: 2",
            "1: 3-9,1-4,48",
            "NON_IPM_SUBTREE\\SCHEDULE+ FREE BUSY\\EX:/o=EXAMPLE/ou=LONDON",
            "2: 3-A,1-5,512",
            "NON_IPM_SUBTREE\\OFFLINE ADDRESS BOOK\\EX:/o=EXAMPLE/ou=LONDON",
            "IDCN Deleted:",
            "{0}",
        ),
    ),
    rec(
        LDN,
        3020,
        "2026-11-02T10:40:00Z",
        lines(  # an unknown Type: rejected, not guessed
            "An outgoing replication message was issued.", "Type: 0x40", "Message ID: 1-3C11"
        ),
    ),
]

# --- PARPF2 (Exchange 2000/2003 layouts; Export-Csv) -----------------------------------------
PAR_EVENTS = [
    rec(
        PAR,
        3028,
        "2026-11-02T08:05:00Z",
        lines(
            "An incoming replication message was processed.",
            "Type: 0x2",
            "Message ID: <A1@EX07.corp.example>",
            "CN min: 7-2F0, CN max: 7-2F4",
            "RFIs: 1",
            "1) FID: 7-4B1C, PFID: 1-1, Offset: 28",
            LONG,
            f"Server: {DN_EX07}",
        ),
    ),
    rec(
        PAR,
        3016,
        "2026-11-02T09:00:00Z",
        lines(
            "An outgoing replication message was issued.",
            "Outgoing message type: 0x8",
            "Message ID: <B1@PARPF2.corp.example>",
            f"Folder: (7-4B1C) {LONG}",
            'Database "First Storage Group\\Public Folder Store (PARPF2)"',
            "CNSET: 7-300,7-302",
            ", CNSET(FAI): {0}",
            f"Server: {DN_EX07}",
        ),
    ),
    rec(
        PAR,
        3031,
        "2026-11-02T09:07:00Z",
        lines(
            "An incoming replication message was processed.",
            "Type: 0x80000004",
            "Message ID: <A3@EX07.corp.example>",
            f"Folder(s): (7-4B1C) {LONG}",
            "CNSET: 7-300,7-300",
            "7-302,7-302",
            ", CNSET(FAI): {0}",
            "RFIs: 0",
            f"Server: {DN_EX07}",
        ),
    ),
    rec(
        PAR,
        3027,
        "2026-11-02T10:05:00Z",
        lines(  # its outgoing event is in no log we have
            "An incoming replication message was processed.",
            "Type: 0x20",
            "Message ID: 1-9999",
            f"Folder(s): (7-4B1C) {LONG}",
            "CNSET: 7-2F0,7-2F4",
            ", CNSET(FAI): {0}",
            f"Server: {DN_LDN}",
        ),
    ),
    rec(
        PAR,
        3029,
        "2026-11-02T10:33:00Z",
        lines(
            "An incoming replication message was processed.",
            "Type: 0x80000002",
            "Message ID: 1-3C10",
            "CNSET: 1-2A01,1-2A01",
            "1-2A03,1-2A03",
            ", CNSET(FAI): {0}",
            "RFIs: 2",
            "1: 1-9,2-4,48",
            "NON_IPM_SUBTREE\\SCHEDULE+ FREE BUSY\\EX:/o=EXAMPLE/ou=LONDON",
            "2: 1-A,2-5,512",
            "NON_IPM_SUBTREE\\OFFLINE ADDRESS BOOK\\EX:/o=EXAMPLE/ou=LONDON",
            "IDCN Deleted:",
            "{0}",
            "Server:",
            DN_LDN,
        ),
    ),
    rec(
        PAR,
        3014,
        "2026-11-02T12:00:00Z",
        lines(  # hierarchy backfill request: no folder, 1-1
            "An outgoing replication message was issued.",
            "Outgoing message type: 0x8",
            "Message ID: <B2@PARPF2.corp.example>",
            'Database "First Storage Group\\Public Folder Store (PARPF2)"',
            "CNSET: 2-10,2-12",
            ", CNSET(FAI): {0}",
            f"Server: {DN_LDN}",
        ),
    ),
    rec(
        PAR,
        3092,
        "2026-11-02T12:30:00Z",
        lines("Error 0x8004010f processing a replication event.", f"Folder: {LONG}"),
    ),
]
