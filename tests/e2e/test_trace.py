"""Tracing missing CNs in a real browser: from the folder page's who-knows-what matrix to the
messages that carried them, and the backfill requests for them (did their source process them?).
Expected values come from the published Parquet (``messages``, ``state_table``, ``transits``,
``backfill_requests``, ``summary``), read here with pandas, the model's CN-set algebra and its
rule of a message's state (``rules.transit``)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pandas as pd
import pytest

from pfscope.spark_jobs.model.cnset import CNSet, union_all
from pfscope.spark_jobs.model.rules.transit import message_state, usual_transit
from tests.e2e.conftest import Server, screenshot
from tests.e2e.test_dashboard import open_page, table

pytestmark = pytest.mark.e2e


def lacking(data) -> list[tuple[str, str, CNSet]]:  # type: ignore[no-untyped-def]
    """(fid, store, CNs) for every content folder's store that really lacks CNs another replica owns."""
    own = table(data, "state_table")
    own = own[own["is_self"] & (own["fid"] != "1-1")]
    out = []
    for fid, rows in own.groupby("fid"):
        sets = {r.observer: CNSet.parse(r.cnset or "") for r in rows.itertuples(index=False)}
        everything = union_all(sets.values())
        out += [
            (str(fid), s, everything.difference(mine))
            for s, mine in sorted(sets.items())
            if everything.difference(mine)
        ]
    return out


def us(ts: pd.Timestamp) -> int:
    return int(ts.value // 1000)


def words(ts: pd.Timestamp) -> str:
    return ts.strftime("%Y-%m-%d %H:%M:%SZ")


def expected_status(row: pd.Series, as_of: pd.Timestamp, transits: pd.DataFrame) -> str:
    """What became of a message for one recipient, by the model's rule: processed at T, in
    transit, queued (expires T) or expired (at T)."""
    if pd.notna(row["processed_at"]):
        return "processed at " + words(row["processed_at"])
    pair = transits[(transits["sender"] == row["sender"]) & (transits["recipient"] == row["recipient"])]
    longest = None if pair.empty else round(float(pair["longest_transit_s"].iloc[0]) * 1_000_000)
    state = message_state(us(row["sent_at"]), None, us(as_of), usual_transit(longest))
    expires = row["sent_at"] + pd.Timedelta(hours=48)
    return {
        "in transit": "in transit",
        "queued": f"queued (expires {words(expires)})",
        "expired": f"expired (at {words(expires)})",
    }[state.state]


def test_trace_from_the_matrix_lists_the_carrying_messages(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    data = demo_server.data
    messages = table(data, "messages")
    transits = table(data, "transits")
    as_of = table(data, "summary")["as_of"].iloc[0]
    # a store that lacks CNs some message carried to it and it never processed (the interesting case)
    candidates = []
    for fid, store, cns in lacking(data):
        m = messages[messages["fid"] == fid]
        hit = m[[bool(cns.intersection(CNSet.parse(t or ""))) for t in m["changes"]]]
        mine = hit[hit["recipient"] == store]
        if not mine.empty and mine["processed_at"].isna().any():
            candidates.append((fid, store, cns, hit))
    assert candidates, "the demo has a store lacking CNs a message carried to it"
    fid, store, cns, hit = candidates[0]

    open_page(page, demo_server.base + f"/folder/{fid}")
    cell = page.locator(f'#pf-matrix td[data-observer="{store}"][data-subject="{store}"]')
    assert "lacks:" in cell.inner_text()
    link = cell.locator("a.pf-trace-link")
    assert link.count() == 1
    link.click()
    page.wait_for_url("**/trace?*")
    page.wait_for_selector("#pf-trace")
    page.wait_for_load_state("networkidle")
    query = parse_qs(urlparse(page.url).query)
    assert query == {"fid": [fid], "store": [store], "cns": [cns.text()]}

    # every message that carried them, sent to anyone, in time order
    firsts = hit.sort_values(["sent_at", "msg"]).drop_duplicates("msg")
    rows = page.locator("#pf-trace tbody tr")
    assert page.locator("#pf-trace tbody td.pf-col-msg").all_inner_texts() == firsts["msg"].tolist()
    for i, m in enumerate(firsts.itertuples(index=False)):
        tr = rows.nth(i)
        carried = cns.intersection(CNSet.parse(m.changes))
        assert tr.locator("td.pf-col-carried").inner_text().replace("\n", "") == carried.text()
        assert tr.locator("td.pf-col-sender").inner_text() == m.sender
        recipients = hit[hit["msg"] == m.msg]
        shown = {
            li.get_attribute("data-store"): li.get_attribute("data-status")
            for li in tr.locator("li.pf-recipient").all()
        }
        assert shown == {
            r["recipient"]: expected_status(r, as_of, transits) for _, r in recipients.iterrows()
        }
        to_store = recipients[recipients["recipient"] == store]
        want = expected_status(to_store.iloc[0], as_of, transits) if not to_store.empty else "not sent to it"
        assert tr.locator("td.pf-col-status .pf-fate").get_attribute("data-state") in want
        assert tr.locator("td.pf-col-status").inner_text().split("\n")[0] == want

    summary = page.locator("#pf-trace-summary").inner_text()
    assert summary.startswith(f"{store} lacks {cns.text()}: carried by ")
    never = hit[(hit["recipient"] == store) & hit["processed_at"].isna()]
    n = never["msg"].nunique()
    assert f"{n} message{'s' if n != 1 else ''} it never processed" in summary

    # a bad parameter gets a helpful page, not an error
    open_page(page, demo_server.base + f"/trace?fid={fid}&store={store}&cns=not-a-set")
    assert page.locator("main h1").inner_text() == "Bad cns parameter"
    open_page(page, demo_server.base + "/trace")
    assert page.locator("main h1").inner_text() == "Missing fid parameter"


#: the issue's case: on 1-2AB2 PFDUB02 lacks PFDUB01:61, and neither of its requests for it was
#: processed by the store it was sent to
FID, STORE, CN = "1-2AB2", "PFDUB02", "PFDUB01:61"


def unprocessed_requests(data) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    """The folder's observed backfill requests with the row of their message to their source."""
    requests = table(data, "backfill_requests")
    requests = requests[(requests["fid"] == FID) & (requests["kind"] == "observed")]
    messages = table(data, "messages")
    sent = messages[(messages["fid"] == FID) & (messages["type"] == "backfill_request")]
    rows = requests.merge(
        sent,
        left_on=["observer", "at", "source"],
        right_on=["sender", "sent_at", "recipient"],
        how="left",
        validate="many_to_one",
    )
    return rows[rows["processed_at"].isna()]


def test_the_trace_says_neither_request_reached_its_source(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    data = demo_server.data
    as_of = table(data, "summary")["as_of"].iloc[0]
    transits = table(data, "transits")
    entries = table(data, "backfill_entries")
    covering = entries[
        (entries["fid"] == FID)
        & (entries["observer"] == STORE)
        & entries["cnset_opened"].map(lambda c: not CNSet.parse(c).isdisjoint(CNSet.parse(CN)))
    ]
    never = unprocessed_requests(data)
    never = never[never["entry_id"].isin(covering["entry_id"])].sort_values("attempt")
    requests = table(data, "backfill_requests")
    mine = requests[requests["entry_id"].isin(covering["entry_id"])]
    # the demo as the issue read it: two requests for the CN, neither processed by its source
    assert len(mine) == 2 and len(never) == 2, (mine, never)

    open_page(page, demo_server.base + f"/trace?fid={FID}&store={STORE}&cns={CN}")
    page.wait_for_selector("#pf-trace-requests")
    summary = page.locator("#pf-trace-requests-summary").inner_text()
    assert summary.startswith(
        f"{STORE} asked for {CN} in 2 backfill requests; neither was processed by its source: "
    )
    for r in never.itertuples(index=False):
        fate = expected_status(
            pd.Series({"processed_at": None, "sender": STORE, "recipient": r.source, "sent_at": r.at}),
            as_of,
            transits,
        )
        assert f"#{r.attempt} to {r.source} (sent {words(r.at)}) {fate}" in summary

    rows = page.locator(
        f'#pf-trace-requests .pf-trace-entry[data-entry="{covering["entry_id"].iloc[0]}"] tbody tr'
    )
    assert rows.count() == 2
    for i, r in enumerate(never.itertuples(index=False)):
        row = rows.nth(i)
        assert row.locator("td.pf-col-source").inner_text() == r.source
        assert row.locator("td.pf-col-msg").inner_text() == r.msg
        reached = row.locator("td.pf-col-reached .pf-fate")
        assert reached.get_attribute("data-state") in ("in transit", "queued", "expired")
        lines = reached.inner_text().split("\n")
        fate = expected_status(
            pd.Series({"processed_at": None, "sender": STORE, "recipient": r.source, "sent_at": r.at}),
            as_of,
            transits,
        )
        assert lines[0] == fate
        pair = transits[(transits["sender"] == STORE) & (transits["recipient"] == r.source)]
        assert not pair.empty and lines[1].startswith(f"{r.source} usually processes {STORE}'s mail within ")
        assert (
            row.locator("td.pf-col-answers").inner_text()
            == f"no response: {r.source} has not processed the request"
        )
    # the messages that carried the CN: mail 26 to 47 hours old is queued, not "in transit"
    statuses = page.locator("#pf-trace td.pf-col-status .pf-fate").evaluate_all(
        "s => s.map(e => e.dataset.state)"
    )
    assert statuses and set(statuses) <= {"processed", "in transit", "queued", "expired", "not sent to it"}
    screenshot(page, "trace-requests-1-2AB2")


def test_the_entry_timeline_marks_requests_their_source_never_processed(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    data = demo_server.data
    as_of = table(data, "summary")["as_of"].iloc[0]
    transits = table(data, "transits")
    never = unprocessed_requests(data)
    assert not never.empty

    open_page(page, demo_server.base + f"/folder/{FID}")
    marks = page.locator("#folder-timeline .js-plotly-plot").evaluate(
        "gd => gd.data.filter(t => t.name === 'request not processed by its source')"
        ".map(t => ({symbol: t.marker.symbol, hover: t.hovertext, x: t.x}))"
    )
    assert len(marks) == 1, marks
    (mark,) = marks
    assert mark["symbol"] == "diamond-x-open"
    assert len(mark["hover"]) == len(never)
    for r in never.itertuples(index=False):
        fate = expected_status(
            pd.Series({"processed_at": None, "sender": r.observer, "recipient": r.source, "sent_at": r.at}),
            as_of,
            transits,
        )
        assert any(
            f"#{r.attempt} → {r.source}" in h and f"not processed by {r.source} as of the run: {fate}" in h
            for h in mark["hover"]
        )
    # the legend names the mark, and the section's help says what it means
    assert (
        page.locator("#folder-timeline .legendtext", has_text="request not processed by its source").count()
        == 1
    )
    assert (
        "Crossed diamond: an observed request its source had not processed"
        in page.locator("#folder-timeline-wrap").locator("xpath=..").inner_text()
    )
    # the request list says it too
    listed = page.locator("#pf-request-list td.pf-col-reached_text").all_inner_texts()
    assert sum(t.startswith(("in transit", "queued", "expired")) for t in listed) == len(never)
