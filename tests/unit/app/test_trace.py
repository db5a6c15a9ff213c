"""The trace of missing CNs (``app/figures/trace.py``) on small frames of the ``messages`` table,
and the matrix's links to it."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pandas as pd

from pfscope.app import components as c
from pfscope.app import matrix_table as mt
from pfscope.app.figures import trace as tr
from pfscope.app.figures.delivery import NOT_SENT
from pfscope.app.frozen import to_html
from pfscope.spark_jobs.model.cnset import CNSet
from pfscope.spark_jobs.model.rules.transit import EXPIRED, IN_TRANSIT, QUEUED
from pfscope.spark_jobs.model.timeutil import HOUR, MINUTE

AS_OF = pd.Timestamp("2026-11-09T12:00:00Z")
COLUMNS = [
    "msg",
    "fid",
    "sender",
    "type",
    "sent_at",
    "recipient",
    "processed_at",
    "changes",
    "changes_count",
    "cnset",
    "cnset_count",
]


def t(text: str) -> pd.Timestamp:
    return pd.Timestamp(text, tz="UTC")


def frame(*rows: tuple) -> pd.DataFrame:  # type: ignore[type-arg]
    out = pd.DataFrame([dict(zip(COLUMNS, r, strict=True)) for r in rows], columns=COLUMNS)
    for col in ("sent_at", "processed_at"):
        out[col] = pd.to_datetime(out[col], utc=True)
    return out


def row(
    msg: str,
    sent: str,
    recipient: str,
    processed: str | None,
    changes: str,
    cnset: str,
    sender: str = "PFDUB03",
    type: str = "content",
) -> tuple:  # type: ignore[type-arg]
    return (
        msg,
        "1-123",
        sender,
        type,
        t(sent),
        recipient,
        t(processed) if processed else None,
        changes,
        CNSet.parse(changes).count(),
        cnset,
        CNSet.parse(cnset).count(),
    )


MESSAGES = frame(
    # the newest first: the trace puts them in time order
    row("<3@EXDUB03>", "2026-11-09T08:00:00Z", "PFRED01", None, "PFDUB03:119-120", "PFDUB03:1-120"),
    row(
        "<3@EXDUB03>",
        "2026-11-09T08:00:00Z",
        "PFSIN02",
        "2026-11-09T08:01:00Z",
        "PFDUB03:119-120",
        "PFDUB03:1-120",
    ),
    row("<1@EXDUB03>", "2026-11-06T10:00:00Z", "PFRED01", None, "PFDUB03:110-116", "PFDUB03:1-116"),
    row("<2@EXDUB03>", "2026-11-08T16:03:00Z", "PFRED01", None, "PFDUB03:117-118", "PFDUB03:1-118"),
    row(
        "<0@EXDUB03>",
        "2026-11-05T10:00:00Z",
        "PFRED01",
        "2026-11-05T10:02:00Z",
        "PFDUB03:100-109",
        "PFDUB03:1-109",
    ),
    row("<s@EXDUB03>", "2026-11-09T09:00:00Z", "PFRED01", None, "", "PFDUB03:1-200", type="status"),
)


#: PFRED01 processes PFDUB03's mail within 5 hours (the pair's longest transit)
USUAL = {("PFDUB03", "PFRED01"): 5 * HOUR, ("PFDUB03", "PFSIN02"): MINUTE}


def test_carriers_in_time_order_with_the_asked_cns_they_carried() -> None:
    got = tr.trace(MESSAGES, CNSet.parse("PFDUB03:114-119"), "PFRED01", AS_OF, USUAL)
    assert got.basis == "changes"
    assert [m.msg for m in got.carriers] == ["<1@EXDUB03>", "<2@EXDUB03>", "<3@EXDUB03>"]
    assert [m.carried for m in got.carriers] == ["PFDUB03:114-116", "PFDUB03:117-118", "PFDUB03:119"]
    # the model's rule: 74 h old: expired; 20 h: queued; 4 h, younger than the pair's 5 h: in transit
    assert [m.state for m in got.carriers] == [EXPIRED, QUEUED, IN_TRANSIT]
    assert [m.status for m in got.carriers] == [
        "expired (at 2026-11-08 10:00:00Z)",
        "queued (expires 2026-11-10 16:03:00Z)",
        "in transit",
    ]
    assert got.carriers[1].usual == "PFRED01 usually processes PFDUB03's mail within 5 h"
    last = got.carriers[-1]
    assert [(r.store, r.status) for r in last.recipients] == [
        ("PFRED01", "in transit"),
        ("PFSIN02", "processed at 2026-11-09 08:01:00Z"),
    ]
    assert got.summary == (
        "PFRED01 lacks PFDUB03:114-119: carried by 3 messages it never processed, the last "
        "sent 2026-11-09 08:00:00Z; 1 expired (the oldest), 1 queued (expires 2026-11-10 16:03:00Z), "
        "1 still in transit; PFRED01 usually processes PFDUB03's mail within 5 h."
    )


def test_mail_26_to_47_hours_old_is_queued_not_in_transit() -> None:
    """The issue's defect: the old trace called mail up to 48 h old "in transit"."""
    got = tr.trace(MESSAGES, CNSet.parse("PFDUB03:117"), "PFRED01", AS_OF, {})
    (m,) = got.carriers
    assert (m.state, m.status) == (QUEUED, "queued (expires 2026-11-10 16:03:00Z)")
    assert m.usual == "PFRED01 never processed mail from PFDUB03: 1 h is taken as its usual transit"
    assert got.summary.endswith(
        "it is queued (expires 2026-11-10 16:03:00Z); PFRED01 never processed mail from PFDUB03: "
        "1 h is taken as its usual transit."
    )


def test_processed_and_not_sent_and_nothing() -> None:
    done = tr.trace(MESSAGES, CNSet.parse("PFDUB03:105"), "PFRED01", AS_OF, USUAL)
    assert [m.status for m in done.carriers] == ["processed at 2026-11-05 10:02:00Z"]
    assert "all processed (the last at 2026-11-05 10:02:00Z)" in done.summary
    other = tr.trace(MESSAGES, CNSet.parse("PFDUB03:120"), "PFSIN02", AS_OF, USUAL)
    assert other.carriers[0].status.startswith("processed")
    elsewhere = tr.trace(MESSAGES, CNSet.parse("PFDUB03:114"), "PFSIN02", AS_OF, USUAL)
    assert [m.status for m in elsewhere.carriers] == [NOT_SENT]
    assert elsewhere.summary.endswith("none of them sent to PFSIN02.")
    nothing = tr.trace(MESSAGES, CNSet.parse("PFLON01:1"), "PFRED01", AS_OF, USUAL)
    assert (nothing.basis, nothing.carriers) == ("", ())
    assert nothing.summary == "PFRED01 lacks PFLON01:1: no message sent by the as-of carried any of them."
    empty = tr.trace(MESSAGES.iloc[0:0], CNSet.parse("PFDUB03:1"), "PFRED01", AS_OF, USUAL)
    assert empty.carriers == ()


def test_every_one_expired_or_queued() -> None:
    expired = tr.trace(
        MESSAGES, CNSet.parse("PFDUB03:110-118"), "PFRED01", AS_OF + 4 * pd.Timedelta(days=1), {}
    )
    assert "; all expired." in expired.summary
    queued = tr.trace(MESSAGES, CNSet.parse("PFDUB03:117-119"), "PFRED01", AS_OF, {})
    assert "all queued (the last expires 2026-11-11 08:00:00Z)" in queued.summary


def test_the_sender_s_set_when_no_message_carried_them_as_changes() -> None:
    got = tr.trace(MESSAGES, CNSet.parse("PFDUB03:150-160"), "PFRED01", AS_OF, USUAL)
    assert got.basis == "cnset"
    assert [(m.msg, m.carried, m.status) for m in got.carriers] == [
        ("<s@EXDUB03>", "PFDUB03:150-160", IN_TRANSIT)
    ]
    assert "in the sender's set" in got.summary


def test_matrix_cells_that_lack_cns_link_to_their_trace() -> None:
    base = {
        "observer": "PFRED01",
        "subject": "PFDUB03",
        "cnset": "PFDUB03:1-113",
        "cnset_count": 113,
        "heard_at": None,
        "lag_cnset": "PFDUB03:114-119;PFX:1",
        "lag_count": 7,
        "lacks_cnset": "PFY:2",
        "lacks_count": 1,
        "derived": False,
    }

    def links(cell: dict, fid: str | None = "1-123") -> list[dict[str, list[str]]]:  # type: ignore[type-arg]
        markup = to_html(mt.matrix_cell(cell, fid))
        hrefs = [h.replace("&amp;", "&") for h in re.findall(r'href="(/trace[^"]*)"', markup)]
        return [parse_qs(urlparse(h).query) for h in hrefs]

    assert links({**base, "state": "not_told"}) == [
        {"fid": ["1-123"], "store": ["PFRED01"], "cns": ["PFDUB03:114-119;PFX:1"]}
    ]
    assert links({**base, "state": "lacks"}) == [{"fid": ["1-123"], "store": ["PFDUB03"], "cns": ["PFY:2"]}]
    own = {**base, "observer": "PFDUB03", "state": "owned", "last_sent_cn": 119}
    assert links(own) == [{"fid": ["1-123"], "store": ["PFDUB03"], "cns": ["PFY:2"]}]
    assert links({**base, "state": "current"}) == []
    assert links({**base, "state": "not_told"}, fid=None) == []  # the standalone report: no links
    assert c.trace_href("1-1", "P<1>", "A:1;B:2") == "/trace?fid=1-1&store=P%3C1%3E&cns=A%3A1%3BB%3A2"


def test_a_run_without_transits_says_so() -> None:
    got = tr.trace(MESSAGES, CNSet.parse("PFDUB03:117-119"), "PFRED01", AS_OF, None)
    assert [m.status for m in got.carriers] == [
        "in transit or queued (expires 2026-11-10 16:03:00Z)",
        "in transit or queued (expires 2026-11-11 08:00:00Z)",
    ]
    assert "all in transit or queued (the last expires 2026-11-11 08:00:00Z)" in got.summary
    assert got.summary.endswith("its usual transit is unknown.")
