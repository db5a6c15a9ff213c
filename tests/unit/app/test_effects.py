"""What an outage caused (app/figures/effects.py): entries at other stores that asked it, entries it
opened on mail held for it, mail sent to it while it was down that expired, content at risk."""

from __future__ import annotations

import pandas as pd

from pfscope.app.figures import effects as fx

T = pd.Timestamp
AS_OF = T("2026-11-08T23:59:59Z")
DOWN, UP = T("2026-11-03T06:00Z"), T("2026-11-05T08:00Z")
H = pd.Timedelta(hours=1)

PERIODS = pd.DataFrame(
    {"store": ["SIN2", "JNB2"], "down_at": [DOWN, T("2026-11-07T00:00Z")], "up_at": [UP, pd.NaT]}
)


def _requests() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "entry_id": ["RED1/a/1", "RED1/a/1", "DUB1/b/1", "RED2/c/1", "SIN2/d/1"],
            "observer": ["RED1", "RED1", "DUB1", "RED2", "SIN2"],
            "fid": ["a", "a", "b", "c", "d"],
            "attempt": [1, 2, 1, 1, 1],
            "at": [DOWN + H, DOWN + 20 * H, DOWN + 3 * H, UP + H, DOWN - H],
            "source": ["SIN2", "SIN2", "SIN2", "SIN2", "SIN2"],  # the last: its own, before
        }
    )


def _entries() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "entry_id": ["SIN2/x/1", "SIN2/y/1", "SIN2/z/1", "SIN2/w/1"],
            "observer": "SIN2",
            "opened_at": [UP, UP + 0.1 * H, UP + 2 * H, DOWN - 2 * H],
            "opened_by": ["<held1>", "<held2>", "<after>", "<held1>"],
        }
    )


def _held() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "msg": ["<held1>", "<held2>", "<lost>", "<late>"],
            "recipient": "SIN2",
            "sent_at": [DOWN + H, DOWN + 2 * H, DOWN + 0.5 * H, DOWN + 10 * H],
            # <late> was sent 10 h in: it expired 12 h after the store came back, not while it was down
            "processed_at": [UP, UP, pd.NaT, pd.NaT],
        }
    )


def test_a_finished_outage_says_what_it_caused() -> None:
    jnb, sin = fx.outage_effects(PERIODS, AS_OF, _requests(), _entries(), _held())
    assert (sin.store, sin.down_at, sin.up_at) == ("SIN2", DOWN, UP)
    assert (sin.asked, sin.asked_by) == (2, ("DUB1", "RED1"))  # RED2 asked after it came back
    assert sin.reopened == 2  # <after> was not mail held for it; w was opened before the outage
    assert sin.expired == 1 and sin.at_risk is None
    assert sin.caused == (
        "2 entries at other stores sent it requests while it was down, it opened 2 entries once back, on mail "
        "held for it while it was down, 1 message sent to it while it was down expired (48 h queue expiry)"
    )
    assert sin.text(AS_OF).startswith("down 50 h, Tue 11-03 06:00 to Thu 11-05 08:00 (UTC): 2 entries at ")
    assert jnb.up_at is None


def test_an_ongoing_outage_says_its_content_at_risk_and_who_waits_for_it() -> None:
    nxt = pd.DataFrame(
        {
            "entry_id": ["JNB2/a/1", "JNB2/b/2", "RED1/c/1"],
            "observer": ["JNB2", "JNB2", "RED1"],
            "source": ["DUB1", "DUB1", "JNB2"],
        }
    )
    jnb, _ = fx.outage_effects(PERIODS, AS_OF, _requests(), _entries(), _held(), {"JNB2": 3}, nxt)
    assert (jnb.will_ask, jnb.waiting, jnb.at_risk) == (1, 2, 3)
    assert jnb.caused == (
        "1 entry at other stores will ask it next, 2 entries of its own wait for it to be back, "
        "content at risk: 3 CNs only it holds"
    )
    quiet, _ = fx.outage_effects(PERIODS, AS_OF, _requests().iloc[0:0], _entries(), _held(), {})
    assert quiet.caused == (
        "no entry asked it, no mail sent to it while it is down has expired yet, "
        "no content at risk (nothing only it holds)"
    )


def test_entries_it_opened_stop_at_its_next_outage() -> None:
    again = pd.concat(
        [PERIODS, pd.DataFrame({"store": ["SIN2"], "down_at": [UP + H], "up_at": [UP + 5 * H]})],
        ignore_index=True,
    )
    later = pd.DataFrame(
        {"entry_id": ["SIN2/v/1"], "observer": "SIN2", "opened_at": [UP + 6 * H], "opened_by": ["<held2>"]}
    )
    entries = pd.concat([_entries(), later], ignore_index=True)
    assert fx.outage_effects(PERIODS, AS_OF, _requests(), entries, _held())[1].reopened == 3
    effects = fx.outage_effects(again, AS_OF, _requests(), entries, _held())
    first = next(e for e in effects if e.store == "SIN2" and e.down_at == DOWN)
    assert first.reopened == 2
    assert [e.store for e in effects] == ["JNB2", "SIN2", "SIN2"]  # newest first


def test_what_a_run_cannot_tell_reads_as_unknown_never_as_none() -> None:
    jnb, sin = fx.outage_effects(
        PERIODS, AS_OF, _requests(), _entries(), _held().iloc[0:0], None, mail_known=False
    )
    assert sin.caused == (
        "2 entries at other stores sent it requests while it was down, "
        "the mail held for it is unknown (this run has no messages)"
    )
    assert jnb.caused == (
        "the mail held for it is unknown (this run has no messages), "
        "its content at risk is unknown (this run has no content at risk)"
    )
