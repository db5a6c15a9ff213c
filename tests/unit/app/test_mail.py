"""Mail never processed (app/figures/mail.py): in transit, queued or expired by the model's rule,
and its bursts per recipient as incidents."""

from __future__ import annotations

import numpy as np
import pandas as pd

from pfscope.app.figures import mail
from pfscope.spark_jobs.model.rules.timeouts import QUEUE_EXPIRY
from pfscope.spark_jobs.model.rules.transit import message_state, usual_transit
from pfscope.spark_jobs.model.timeutil import HOUR

T = pd.Timestamp
AS_OF = T("2026-11-08T23:59:59Z")
H = pd.Timedelta(hours=1)


def _never(rows: list[tuple[str, str, str, pd.Timestamp]]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "msg": [r[0] for r in rows],
            "fid": "1-2A40",
            "sender": [r[1] for r in rows],
            "type": "content",
            "sent_at": [r[3] for r in rows],
            "recipient": [r[2] for r in rows],
        }
    )


def test_the_expiry_is_the_models_queue_expiry() -> None:
    assert QUEUE_EXPIRY == 48 * HOUR
    assert mail.EXPIRY.total_seconds() == 48 * 3600


def test_in_transit_then_queued_then_expired_by_the_pairs_usual_transit() -> None:
    never = _never(
        [
            ("<young>", "A", "B", AS_OF - 0.5 * H),  # younger than an hour: the default transit
            ("<slow>", "A", "C", AS_OF - 3 * H),  # A -> C once took 5 h: still in transit
            ("<queued>", "A", "B", AS_OF - 26 * H),
            ("<edge>", "A", "B", AS_OF - 48 * H),  # exactly 48 h: expired
            ("<old>", "A", "B", AS_OF - 60 * H),
        ]
    )
    transits = pd.DataFrame({"sender": ["A"], "recipient": ["C"], "longest_transit_s": [5 * 3600.0]})
    states = mail.mail_states(never, transits, AS_OF)
    assert list(states["state"]) == ["in transit", "in transit", "queued", "expired", "expired"]
    assert states.loc[2, "expires_at"] == AS_OF + 22 * H
    assert list(states["transit_s"]) == [3600.0, 18000.0, 3600.0, 3600.0, 3600.0]
    assert mail.states_text(states["state"], states["expires_at"]) == (
        "2 expired, 1 queued (expires Mon 11-09 21:59), 2 in transit"
    )
    assert mail.mail_states(never.iloc[0:0], transits, AS_OF).empty


def test_the_frame_rule_is_the_models_rule_message_by_message() -> None:
    rng = np.random.default_rng(5)
    n = 400
    ages = rng.uniform(0, 80, n) * H.total_seconds()
    sent = [AS_OF - pd.Timedelta(seconds=float(a)) for a in ages]
    pairs = [(f"S{i % 4}", f"R{i % 3}") for i in range(n)]
    never = pd.DataFrame(
        {
            "msg": [f"<m{i}>" for i in range(n)],
            "fid": "f",
            "sender": [p[0] for p in pairs],
            "type": "content",
            "sent_at": sent,
            "recipient": [p[1] for p in pairs],
        }
    )
    # the longest transits seen, one pair never delivered anything (an hour), one longer than the expiry
    longest = {
        ("S0", "R0"): 0.5,
        ("S1", "R1"): 30.0,
        ("S2", "R2"): 60.0,
        ("S3", "R0"): 5.0,
        ("S0", "R1"): 2.0,
    }
    transits = pd.DataFrame(
        [(s, r, h * 3600.0) for (s, r), h in longest.items()],
        columns=["sender", "recipient", "longest_transit_s"],
    )
    states = mail.mail_states(never, transits, AS_OF)
    us = 1_000_000
    for row in states.itertuples():
        seen = longest.get((row.sender, row.recipient))
        rule = message_state(
            int(row.sent_at.value // 1000),
            None,
            int(AS_OF.value // 1000),
            usual_transit(None if seen is None else int(seen * 3600 * us)),
        )
        assert row.state == rule.state, row
        if rule.expires_at is not None:
            assert int(row.expires_at.value // 1000) == rule.expires_at


def test_a_burst_per_recipient_and_bursts_at_the_same_time_are_one_incident() -> None:
    base = T("2026-11-03T06:00Z")
    rows = [(f"<s{i}>", "R1", "SIN2", base + 0.25 * H * i) for i in range(8)]  # one burst to SIN2
    rows += [(f"<s{i}>", "R1", "DUB1", base + 0.25 * H * i) for i in range(3)]  # the same messages to DUB1
    rows += [("<lone>", "R2", "RED1", base + 30 * H), ("<lone2>", "R3", "RED2", base + 31 * H)]  # scattered
    periods = pd.DataFrame({"store": ["SIN2"], "down_at": [base], "up_at": [base + 50 * H]})
    states = mail.mail_states(
        _never(rows), pd.DataFrame(columns=["sender", "recipient", "longest_transit_s"]), AS_OF
    )
    found, deliveries = mail.mail_incidents(states, periods)
    assert deliveries == 13
    burst, scattered = found
    assert burst.stores == ("DUB1", "SIN2") and burst.events == 11
    assert burst.start == base and burst.end == base + 1.75 * H
    assert burst.text == (
        "8 messages (11 deliveries) never processed, to 2 stores (DUB1, SIN2): 11 expired; from R1 (11); "
        "8 sent while the recipient was down"
    )
    assert burst.parts == (
        "DUB1: 3 messages, Tue 11-03 06:00 to 06:30: 3 expired",
        "SIN2: 8 messages, Tue 11-03 06:00 to 07:45: 8 expired",
    )
    assert burst.tier == "warning" and burst.href is None
    assert (
        scattered.text
        == "2 messages never processed, to 2 stores (RED1, RED2) (scattered, not in bursts): 2 expired"
    )
    assert scattered.tier == "info" and scattered.events == 2
    assert mail.mail_incidents(states.iloc[0:0]) == ([], 0)


def test_mail_still_in_transit_is_information_not_a_warning() -> None:
    rows = [(f"<t{i}>", "A", "B", AS_OF - pd.Timedelta(minutes=10 * i + 1)) for i in range(4)]
    states = mail.mail_states(
        _never(rows), pd.DataFrame(columns=["sender", "recipient", "longest_transit_s"]), AS_OF
    )
    (found,), _ = mail.mail_incidents(states)
    assert found.tier == "info" and found.text.startswith("4 messages never processed, to B: 4 in transit")
    assert found.href == "/store/B"
