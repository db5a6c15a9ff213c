"""What became of a message for one recipient, in words (``app/figures/delivery.py``): the
model's rule with the pair's usual transit from the published ``transits``."""

from __future__ import annotations

import pandas as pd

from pfscope.app.figures import delivery as dl
from pfscope.spark_jobs.model.rules.transit import EXPIRED, IN_TRANSIT, PROCESSED, QUEUED
from pfscope.spark_jobs.model.timeutil import HOUR, MINUTE, SECOND

SENT = pd.Timestamp("2026-11-07T12:00:00Z")


def test_the_published_transits_as_a_look_up() -> None:
    frame = pd.DataFrame(
        {
            "sender": ["PFS1", "PFS2"],
            "recipient": ["PFS2", "PFS1"],
            "messages": [3, 1],
            "median_transit_s": [60.0, 2.0],
            "longest_transit_s": [2400.0, 2.5],
        }
    )
    assert dl.usual_transits(frame) == {("PFS1", "PFS2"): 40 * MINUTE, ("PFS2", "PFS1"): 2500 * 1000}
    assert dl.usual_transits(frame.iloc[0:0]) == {}
    assert dl.usual_transits(pd.DataFrame()) == {}  # an older run: no table


def test_each_state_in_words() -> None:
    usual = {("PFS1", "PFS2"): 40 * MINUTE}

    def at(delta: pd.Timedelta, processed: pd.Timestamp | None = None) -> dl.Delivery:
        return dl.delivery("PFS1", "PFS2", SENT, processed, SENT + delta, usual)

    done = at(pd.Timedelta(hours=1), SENT + pd.Timedelta(minutes=3))
    assert (done.state, done.text, done.usual) == (PROCESSED, "processed at 2026-11-07 12:03:00Z", "")
    young = at(pd.Timedelta(minutes=39))
    assert (young.state, young.text) == (IN_TRANSIT, "in transit")
    assert young.usual == "PFS2 usually processes PFS1's mail within 40 min"
    late = at(pd.Timedelta(hours=26))
    assert (late.state, late.text) == (QUEUED, "queued (expires 2026-11-09 12:00:00Z)")
    assert late.expires_at == pd.Timestamp("2026-11-09T12:00:00Z")
    gone = at(pd.Timedelta(hours=48))
    assert (gone.state, gone.text) == (EXPIRED, "expired (at 2026-11-09 12:00:00Z)")
    # a receive after the as-of counts as none: the table says null, the rule says not processed
    assert at(pd.Timedelta(hours=47), None).state == QUEUED


def test_a_pair_that_never_processed_mail_waits_an_hour() -> None:
    d = dl.delivery("PFS3", "PFS2", SENT, None, SENT + pd.Timedelta(minutes=59), {})
    assert d.state == IN_TRANSIT
    assert d.usual == "PFS2 never processed mail from PFS3: 1 h is taken as its usual transit"
    assert dl.delivery("PFS3", "PFS2", SENT, None, SENT + pd.Timedelta(hours=1), {}).state == QUEUED


def test_words_for_the_rest() -> None:
    assert dl.not_sent().text == dl.NOT_SENT
    assert dl.expected().text == "expected by the rules; no such message in the log"
    assert dl.EXPIRY_TEXT == "48 hours"
    assert [dl.duration(d) for d in (0, 30 * SECOND, 40 * MINUTE, 5 * HOUR, 2 * HOUR + 5 * MINUTE)] == [
        "1 s",
        "30 s",
        "40 min",
        "5 h",
        "2 h 5 min",
    ]
    assert dl.micros(None) is None and dl.micros(pd.NaT) is None
    assert dl.micros(pd.Timestamp("1970-01-01T00:00:01")) == SECOND  # naive: UTC


def test_the_glossary_says_the_rule() -> None:
    from pfscope.app.figures.glossary import GLOSSARY

    assert GLOSSARY["in-transit"][0] == IN_TRANSIT
    assert GLOSSARY["queued"][0] == QUEUED
    assert GLOSSARY["expired"][0] == EXPIRED
    assert "an hour" in GLOSSARY["in-transit"][1] and "longest" in GLOSSARY["in-transit"][1]
    assert dl.EXPIRY_TEXT in GLOSSARY["queued"][1] and dl.EXPIRY_TEXT in GLOSSARY["expired"][1]


def test_a_run_without_transits_cannot_tell_in_transit_from_queued() -> None:
    """An earlier pfscope published no ``transits``: the usual transit is unknown, not an hour."""
    assert dl.usual_transits(None) is None
    d = dl.delivery("PFS1", "PFS2", SENT, None, SENT + pd.Timedelta(minutes=5), None)
    assert (d.state, d.text) == (dl.PENDING, "in transit or queued (expires 2026-11-09 12:00:00Z)")
    assert d.usual == dl.NO_TRANSITS
    assert dl.delivery("PFS1", "PFS2", SENT, None, SENT + pd.Timedelta(hours=48), None).state == EXPIRED
    done = dl.delivery("PFS1", "PFS2", SENT, SENT, SENT + pd.Timedelta(hours=1), None)
    assert done.state == PROCESSED


def test_the_incidents_vectorised_states_agree_with_the_rule() -> None:
    """``figures.mail.mail_states`` restates the rule over many deliveries at once (the
    overview's incidents); on every side of each boundary it must say what the trace says."""
    from pfscope.app.figures.mail import mail_states

    transits = pd.DataFrame(
        {"sender": ["PFS1", "PFS3"], "recipient": ["PFS2", "PFS2"], "longest_transit_s": [2400.0, -5.0]}
    )
    usual = dl.usual_transits(transits.assign(messages=1, median_transit_s=1.0))
    as_of = SENT + pd.Timedelta(hours=50)
    ages = [
        pd.Timedelta(minutes=m) for m in (0, 39, 40, 41, 59, 60, 61, 47 * 60, 48 * 60 - 1, 48 * 60, 49 * 60)
    ]
    never = pd.DataFrame(
        [
            {
                "msg": f"<{s}{i}>",
                "fid": "1-1",
                "sender": s,
                "type": "content",
                "sent_at": as_of - a,
                "recipient": "PFS2",
            }
            for s in ("PFS1", "PFS3", "PFS4")
            for i, a in enumerate(ages)
        ]
    )
    got = mail_states(never, transits, as_of)
    want = [dl.delivery(r.sender, "PFS2", r.sent_at, None, as_of, usual).state for r in never.itertuples()]
    assert got["state"].tolist() == want
