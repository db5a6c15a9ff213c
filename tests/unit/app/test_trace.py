"""The trace of missing CNs (``app/figures/trace.py``) on small frames of the ``messages`` table,
and the matrix's links to it."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pandas as pd

from pfscope.app import components as c
from pfscope.app.figures import trace as tr
from pfscope.app.frozen import to_html
from pfscope.spark_jobs.model.cnset import CNSet

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


def test_carriers_in_time_order_with_the_asked_cns_they_carried() -> None:
    got = tr.trace(MESSAGES, CNSet.parse("PFDUB03:114-119"), "PFRED01", AS_OF)
    assert got.basis == "changes"
    assert [m.msg for m in got.carriers] == ["<1@EXDUB03>", "<2@EXDUB03>", "<3@EXDUB03>"]
    assert [m.carried for m in got.carriers] == ["PFDUB03:114-116", "PFDUB03:117-118", "PFDUB03:119"]
    assert [m.status for m in got.carriers] == [tr.LOST, tr.IN_TRANSIT, tr.IN_TRANSIT]
    last = got.carriers[-1]
    assert [(r.store, r.status) for r in last.recipients] == [
        ("PFRED01", "in transit"),
        ("PFSIN02", "processed at 2026-11-09 08:01:00Z"),
    ]
    assert got.summary == (
        "PFRED01 lacks PFDUB03:114-119: carried by 3 messages it never processed, the last "
        "sent 2026-11-09 08:00:00Z; 1 lost or expired (the oldest), 2 still in transit."
    )


def test_expiry_is_48_hours_as_the_simulator_s() -> None:
    sent = t("2026-11-07T12:00:00Z")
    assert (
        tr.status_for(None, sent, sent + pd.Timedelta(hours=48) - pd.Timedelta(microseconds=1))
        == tr.IN_TRANSIT
    )
    assert tr.status_for(None, sent, sent + pd.Timedelta(hours=48)) == tr.LOST
    assert tr.status_for(sent, sent, AS_OF) == "processed at 2026-11-07 12:00:00Z"
    assert tr.status_for(None, sent, AS_OF, recipient=False) == tr.NOT_SENT
    assert tr.EXPIRY_TEXT == "48 hours"


def test_processed_and_not_sent_and_nothing() -> None:
    done = tr.trace(MESSAGES, CNSet.parse("PFDUB03:105"), "PFRED01", AS_OF)
    assert [m.status for m in done.carriers] == ["processed at 2026-11-05 10:02:00Z"]
    assert "all processed (the last at 2026-11-05 10:02:00Z)" in done.summary
    other = tr.trace(MESSAGES, CNSet.parse("PFDUB03:120"), "PFSIN02", AS_OF)
    assert other.carriers[0].status.startswith("processed")
    elsewhere = tr.trace(MESSAGES, CNSet.parse("PFDUB03:114"), "PFSIN02", AS_OF)
    assert [m.status for m in elsewhere.carriers] == [tr.NOT_SENT]
    assert elsewhere.summary.endswith("none of them sent to PFSIN02.")
    nothing = tr.trace(MESSAGES, CNSet.parse("PFLON01:1"), "PFRED01", AS_OF)
    assert (nothing.basis, nothing.carriers) == ("", ())
    assert nothing.summary == "PFRED01 lacks PFLON01:1: no message sent by the as-of carried any of them."
    empty = tr.trace(MESSAGES.iloc[0:0], CNSet.parse("PFDUB03:1"), "PFRED01", AS_OF)
    assert empty.carriers == ()


def test_the_sender_s_set_when_no_message_carried_them_as_changes() -> None:
    got = tr.trace(MESSAGES, CNSet.parse("PFDUB03:150-160"), "PFRED01", AS_OF)
    assert got.basis == "cnset"
    assert [(m.msg, m.carried, m.status) for m in got.carriers] == [
        ("<s@EXDUB03>", "PFDUB03:150-160", tr.IN_TRANSIT)
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
        markup = to_html(c.matrix_cell(cell, fid))
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
