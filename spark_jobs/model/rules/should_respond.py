"""Whether a status-request responder should answer (seeds 000 and 003)."""

from __future__ import annotations

from pfscope.spark_jobs.model.cnset import CNSet


def should_respond(requester_cnset: CNSet, responder_owned: CNSet) -> bool:
    """Only when the requester's set is a strict subset of what the responder holds."""
    return requester_cnset.is_strict_subset(responder_owned)
