"""What a store page shows of a replication error or DS-update event, read from its text."""

from __future__ import annotations

import re

from pfscope.spark_jobs.exchange.values import CN

# Replication errors, DS updates and general replication events, kept for the store pages.
ERROR_KINDS: dict[int, str] = {
    3002: "replication general",  # the replication agent is disabled for a store
    3005: "DS update",  # a replica of a folder was removed
    3044: "site folders",  # site folder teardown check
    3079: "replication thread error",  # with the function stack
    3084: "replication error",  # owning folders table (5.5)
    3085: "outgoing replication error",
    3086: "outgoing replication error",
    3089: "incoming replication error",
    3090: "replication error",
    3091: "incoming replication error",  # Exchange 2010
    3092: "replication event error",  # with the folder
    3093: "replication error",  # meaning varies by version: see error_details
}


_ERR_CODE_RE = re.compile(r"\berror\s+\(?(0x[0-9A-Fa-f]+|\d+)\)?", re.I)
_ERR_DB_RE = re.compile(r"(?:database|store)\s+[\"\u201c]([^\"\u201d]*)[\"\u201d]", re.I)
_ERR_FOLDER_RE = re.compile(rf"\(\s*({CN})\s*\)")
_3093_MEANINGS = (
    (
        "startup status message",
        "5.x: the startup status messages were not sent (ReplStartupStatus disabled, KB 177251)",
    ),
    ("reading property", "5.x: a property of the owning-folders table could not be read"),
)


def error_details(event_id: int, text: str) -> dict[str, str]:
    """What a store page shows of a replication error or DS-update event: its kind, and the
    error code, database and folder when the text prints them."""
    out = {"kind": ERROR_KINDS.get(event_id, "replication event")}
    if m := _ERR_CODE_RE.search(text):
        out["error_code"] = m.group(1)
    if m := _ERR_DB_RE.search(text):
        out["database"] = m.group(1)
    if m := _ERR_FOLDER_RE.search(text):
        out["folder"] = m.group(1)
    if event_id == 3093:
        low = text.lower()
        out["meaning"] = next(
            (mean for key, mean in _3093_MEANINGS if key in low),
            "replication error; what 3093 means varies by Exchange version",
        )
    return out
