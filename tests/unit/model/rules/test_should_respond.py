"""A responder should respond only when the requester's set is a strict subset of its own."""

from __future__ import annotations

import pytest

from pfscope.spark_jobs.model.cnset import CNSet
from pfscope.spark_jobs.model.rules.should_respond import should_respond

P = CNSet.parse


@pytest.mark.parametrize(
    ("requester", "responder", "expected"),
    [
        ("P1:1-5", "P1:1-6", True),
        ("P1:1-5", "P1:1-5;P2:1", True),
        ("", "P1:1", True),
        ("P1:1-5", "P1:1-5", False),  # equal sets: nothing to send
        ("", "", False),
        ("P1:1-6", "P1:1-5", False),  # the responder is behind
        ("P1:1-5;P2:1", "P1:1-9", False),  # neither holds the other's
    ],
)
def test_strict_subset(requester: str, responder: str, expected: bool) -> None:
    assert should_respond(P(requester), P(responder)) is expected
