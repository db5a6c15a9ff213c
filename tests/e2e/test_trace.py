"""Tracing missing CNs in a real browser: from the folder page's who-knows-what matrix to the
messages that carried them. Expected values come from the published Parquet (``messages``,
``state_table``, ``summary``), read here with pandas and the model's CN-set algebra."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pandas as pd
import pytest

from pfscope.spark_jobs.model.cnset import CNSet, union_all
from tests.e2e.conftest import Server
from tests.e2e.test_dashboard import open_page, table

pytestmark = pytest.mark.e2e

EXPIRY = pd.Timedelta(hours=48)


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


def expected_status(row: pd.Series, as_of: pd.Timestamp) -> str:
    if pd.notna(row["processed_at"]):
        return "processed at " + row["processed_at"].strftime("%Y-%m-%d %H:%M:%SZ")
    return "in transit" if as_of - row["sent_at"] < EXPIRY else "lost or expired"


def test_trace_from_the_matrix_lists_the_carrying_messages(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    data = demo_server.data
    messages = table(data, "messages")
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
        assert shown == {r["recipient"]: expected_status(r, as_of) for _, r in recipients.iterrows()}
        to_store = recipients[recipients["recipient"] == store]
        want = expected_status(to_store.iloc[0], as_of) if not to_store.empty else "not sent to it"
        assert tr.locator("td.pf-col-status").inner_text() == want

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
