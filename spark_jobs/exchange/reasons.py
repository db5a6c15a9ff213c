"""Why a record is not used: the reject reasons, the key each is counted under, and the reject row."""

from __future__ import annotations

from typing import Any

from pfscope.spark_jobs.exchange.formats import RawRecord

RENDERED_HINT = (
    "export it rendered: wevtutil qe Application "
    "/q:\"*[System[Provider[@Name='MSExchangeIS Public Store']]]\" /f:RenderedXml > SERVER.xml"
)
MAX_EXPANDED_CNS = 100_000  # own CNs one message may turn into change lines

R_NOT_EXCHANGE = "not an MSExchangeIS Public Store event"
R_NOT_REPLICATION = "event ID {} is not a replication event"
R_NO_SERVER = "no server: the export has no computer column and the file name names none"
R_BAD_TIME = "bad time: {}"
R_UNRENDERED = "unrendered event: its insertion strings fit no known layout; " + RENDERED_HINT
R_NO_TEXT = "no description"
R_NOT_RENDERED_THERE = (
    "no description: the machine that exported the log lacks Exchange's message file "
    '("The description for Event ID ... cannot be found"); export on the Exchange server: ' + RENDERED_HINT
)
R_CONFLICTING_COPY = "another event for the same message on the same server says something else"
R_SENDER_UNKNOWN = "internal Message ID and no Server line: the sender is unknown"
R_SENDER_UNKNOWN_SMTP = "no outgoing event, no Server line, and the Message ID names no known server"
R_TWO_SENDERS = "the same Message ID is logged as sent by another server"
R_ON_SENDER = "incoming event on the message's own sender"
R_BEFORE_SEND = "incoming event stamped before its outgoing event (clock skew between servers?)"
R_NO_FOLDER = "content event without a Folder line"
R_NO_RECIPIENT = "outgoing event with no matching incoming event and no known replica to send to"
R_RANGE_TOO_WIDE = "CN range of {:,} own CNs is wider than " + f"{MAX_EXPANDED_CNS:,}"


def reason_key(reason: str) -> str:
    """Reasons counted in the summary: the full phrase, less details that vary record by record."""
    for prefix in (
        "unreadable file",
        "unreadable after record",
        "bad time",
        "unreadable CSV row",
        "unreadable .evtx record",
        "record XML not readable",
        "event ID",
        "description: not",
        "description: RFI",
        "description: CNSET",
        "description: IDCN",
        "description: a line not understood",
        "description: a template",
        "description: Message IDs:",
        "description: Message ID:",
        "description: Folder",
        "description: Database",
        "description: CN range",
        "description: number out of range",
    ):
        if reason.startswith(prefix):
            return prefix
    return reason


def r_unmapped(server: str, replid: int) -> str:
    return f"REPLID {replid:X} printed by {server} maps to no store (add it to --replids)"


def record_text(raw: RawRecord) -> str:
    if raw.message is not None:
        return raw.message
    return "\r\n".join(raw.strings or ())


def reject_row(raw: RawRecord, reason: str, server: str | None = None) -> dict[str, Any]:
    return {
        "source": raw.source,
        "record": raw.record,
        "record_id": raw.record_id,
        "server": server or raw.server,
        "event_id": raw.event_id,
        "time": raw.time_text,
        "reason": reason,
        "text": record_text(raw),
    }
