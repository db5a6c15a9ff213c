"""The output tables: their columns, in order, with types, declared once.

Types are Spark SQL type names; times are ``timestamp`` in the published tables and epoch
microseconds (``long``) inside the model. No Spark import: the replay and the Spark job both
read this, and the differential tests compare through it.
"""

from __future__ import annotations

Columns = tuple[tuple[str, str], ...]

TABLES: dict[str, Columns] = {
    "stores": (
        ("store", "string"), ("server", "string"), ("site", "string"), ("version", "string"),
        ("status", "string"), ("preferred_backfill_source", "string"), ("down_since", "timestamp"),
    ),
    # every period a store was down up to the as-of (up_at null: still down)
    "store_periods": (("store", "string"), ("down_at", "timestamp"), ("up_at", "timestamp")),
    "folders": (
        ("fid", "string"), ("path", "string"), ("parent", "string"), ("replicas", "array<string>"),
    ),
    "state_table": (
        ("observer", "string"), ("fid", "string"), ("subject", "string"), ("is_self", "boolean"),
        ("cnset", "string"), ("cnset_count", "long"), ("last_message_at", "timestamp"),
        ("mean_transit_s", "double"), ("last_backfill_request_at", "timestamp"),
        ("last_sent_cn", "long"), ("lag_count", "long"), ("believed_sent_at", "timestamp"),
        ("unavailable", "boolean"), ("on_list", "boolean"), ("derived", "boolean"),
    ),
    "state_history": (
        ("observer", "string"), ("fid", "string"), ("subject", "string"), ("at", "timestamp"),
        ("cnset", "string"), ("cnset_count", "long"), ("cause", "string"), ("derived", "boolean"),
    ),
    "backfill_entries": (
        ("entry_id", "string"), ("observer", "string"), ("fid", "string"), ("opened_at", "timestamp"),
        ("opened_by", "string"), ("cnset_opened", "string"), ("cnset_opened_count", "long"),
        ("cnset_remaining", "string"), ("cnset_remaining_count", "long"), ("locality", "string"),
        ("new_replica", "boolean"), ("state", "string"), ("closed_at", "timestamp"),
        ("requests", "long"), ("last_request_at", "timestamp"), ("next_due_at", "timestamp"),
    ),
    "backfill_requests": (
        ("entry_id", "string"), ("observer", "string"), ("fid", "string"), ("attempt", "long"),
        ("at", "timestamp"), ("kind", "string"), ("algorithm", "string"), ("source", "string"),
        ("cnset", "string"), ("cnset_count", "long"), ("due_at", "timestamp"), ("model_chose", "boolean"),
    ),
    "backfill_candidates": (
        ("entry_id", "string"), ("observer", "string"), ("fid", "string"), ("attempt", "long"),
        ("at", "timestamp"), ("algorithm", "string"), ("rank", "long"), ("group", "long"),
        ("candidate", "string"), ("down", "boolean"), ("unavailable", "boolean"),
        ("preferred", "boolean"), ("cost", "long"), ("version", "string"), ("holds_count", "long"),
        ("holds_all", "boolean"), ("last_backfill_request_at", "timestamp"),
        ("mean_transit_s", "double"), ("chosen", "boolean"), ("assigned_cnset", "string"),
        ("asked", "boolean"),
    ),
    "replica_history": (
        ("store", "string"), ("fid", "string"), ("at", "timestamp"), ("on_list", "boolean"),
        ("lifecycle", "string"), ("status_due", "timestamp"),
    ),
    "replica_lists": (
        ("fid", "string"), ("at", "timestamp"), ("seq", "long"), ("replicas", "array<string>"), ("path", "string"),
    ),
    "next_requests": (
        ("entry_id", "string"), ("observer", "string"), ("fid", "string"), ("due_at", "timestamp"),
        ("waiting", "boolean"), ("algorithm", "string"), ("attempt", "long"), ("source", "string"),
        ("rank", "long"), ("cnset", "string"), ("cnset_count", "long"),
    ),
    "next_candidates": (
        ("entry_id", "string"), ("observer", "string"), ("fid", "string"), ("due_at", "timestamp"),
        ("waiting", "boolean"), ("algorithm", "string"), ("attempt", "long"), ("rank", "long"),
        ("group", "long"), ("candidate", "string"), ("down", "boolean"), ("unavailable", "boolean"),
        ("preferred", "boolean"), ("cost", "long"), ("version", "string"), ("holds_count", "long"),
        ("holds_all", "boolean"), ("last_backfill_request_at", "timestamp"),
        ("mean_transit_s", "double"), ("chosen", "boolean"), ("assigned_cnset", "string"),
    ),
    "responders": (
        ("msg", "string"), ("requester", "string"), ("fid", "string"), ("sent_at", "timestamp"),
        ("responder", "string"), ("position", "long"), ("group", "string"), ("expected", "boolean"),
        ("observed", "boolean"), ("should_respond", "boolean"), ("requester_cnset", "string"),
        ("responder_processed_at", "timestamp"),
    ),
    "replicas": (
        ("store", "string"), ("fid", "string"), ("path", "string"), ("health", "string"),
        ("open_entries", "long"), ("missing_count", "long"), ("unique_count", "long"),
        ("next_status_at", "timestamp"), ("missing_cnset", "string"), ("unique_cnset", "string"),
        ("on_list", "boolean"), ("delete_pending_since", "timestamp"), ("deleted_at", "timestamp"),
        # what is so, beside the store's own belief above (model/rules/reality.py)
        ("really_unique_cnset", "string"), ("really_unique_count", "long"),
        ("at_risk_cnset", "string"), ("at_risk_count", "long"),
        ("lacks_cnset", "string"), ("lacks_count", "long"),
        ("not_told_cnset", "string"), ("not_told_count", "long"),
    ),
    "messages": (
        ("msg", "string"), ("fid", "string"), ("sender", "string"), ("type", "string"),
        ("sent_at", "timestamp"), ("recipient", "string"), ("processed_at", "timestamp"),
        ("changes", "string"), ("changes_count", "long"), ("cnset", "string"), ("cnset_count", "long"),
    ),
    "rejects": (
        ("source", "string"), ("line", "long"), ("reason", "string"), ("text", "string"),
        # the accepted line this one conflicts with (rules between lines; null: no line caused it)
        ("conflict_source", "string"), ("conflict_line", "long"),
    ),
    "summary": (
        ("run_id", "string"), ("as_of", "timestamp"), ("lines_read", "long"), ("accepted", "long"),
        ("duplicates", "long"), ("rejected", "long"), ("started_at", "timestamp"),
        ("finished_at", "timestamp"), ("refresh", "string"), ("refresh_reason", "string"),
        ("lines_new", "long"), ("folders_refolded", "long"), ("folders_carried", "long"), ("lines_rejudged", "long"),
    ),
}

#: each table's natural key: one row per key, the order rows are compared and published in
KEYS: dict[str, tuple[str, ...]] = {
    "stores": ("store",),
    "store_periods": ("store", "down_at"),
    "folders": ("fid",),
    "state_table": ("observer", "fid", "subject"),
    "state_history": ("observer", "fid", "subject", "at", "cause"),
    "backfill_entries": ("entry_id",),
    "backfill_requests": ("observer", "fid", "at", "entry_id", "source"),
    "backfill_candidates": ("entry_id", "attempt", "rank"),
    "replica_history": ("store", "fid", "at"),
    "replica_lists": ("fid", "at", "seq"),
    "next_requests": ("entry_id", "source"),
    "next_candidates": ("entry_id", "rank"),
    "responders": ("msg", "responder"),
    "replicas": ("store", "fid"),
    "messages": ("msg", "recipient"),
    "rejects": ("source", "line"),
    "summary": ("run_id",),
}


def ddl(table: str) -> str:
    """The table's schema as a Spark DDL string (column names quoted: ``group`` is a keyword)."""
    return ", ".join(f"`{name}` {kind}" for name, kind in TABLES[table])
