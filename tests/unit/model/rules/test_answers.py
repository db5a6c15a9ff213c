"""Which responses answer a request (``rules.answers``)."""

from __future__ import annotations

from pfscope.spark_jobs.model.rules.answers import Asked, Reply, answers, is_reply
from pfscope.spark_jobs.model.timeutil import HOUR, MINUTE


def test_a_response_answers_the_request_processed_last_before_it() -> None:
    requests = [Asked("q1", 0), Asked("q2", 2 * HOUR)]
    replies = [Reply("r1", 0), Reply("r2", MINUTE), Reply("r3", 2 * HOUR), Reply("r4", 5 * HOUR)]
    assert answers(requests, replies) == {"q1": ("r1", "r2"), "q2": ("r3", "r4")}


def test_a_request_never_processed_has_no_answer_and_opens_no_window() -> None:
    requests = [Asked("q1", 0), Asked("lost", None)]
    # sent after the lost request's send time, still q1's: the source never saw the second
    assert answers(requests, [Reply("r1", 3 * HOUR)]) == {"q1": ("r1",), "lost": ()}


def test_processing_order_not_send_order_sets_the_windows() -> None:
    # q_old was sent first but processed after q_new: the responses after it are its own
    requests = [Asked("q_old", 3 * HOUR), Asked("q_new", HOUR)]
    replies = [Reply("a", HOUR), Reply("b", 3 * HOUR)]
    assert answers(requests, replies) == {"q_old": ("b",), "q_new": ("a",)}


def test_a_response_before_any_processed_request_answers_none() -> None:
    assert answers([Asked("q", HOUR)], [Reply("early", HOUR - 1)]) == {"q": ()}
    assert answers([], [Reply("r", 0)]) == {}


def test_requests_processed_at_the_same_time_share_their_responses() -> None:
    got = answers([Asked("q1", HOUR), Asked("q2", HOUR)], [Reply("r2", HOUR + 1), Reply("r1", HOUR)])
    assert got == {"q1": ("r1", "r2"), "q2": ("r1", "r2")}  # in send order


def test_what_can_be_a_reply() -> None:
    assert is_reply("backfill_request", "backfill_response", ["PFS1"], "PFS1")
    assert not is_reply("backfill_request", "backfill_response", ["PFS2"], "PFS1")
    assert not is_reply("backfill_request", "content", ["PFS1"], "PFS1")
    assert is_reply("status_request", "status", ["PFS1"], "PFS1")
    # the scheduled status message goes to every replica: no answer
    assert not is_reply("status_request", "status", ["PFS1", "PFS3"], "PFS1")
    assert not is_reply("content", "status", ["PFS1"], "PFS1")
