"""Where the next backfill request goes, and what a store that is down does (nothing), as an
on-call administrator reads them in Chromium. Expected values come from the published Parquet."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.e2e.conftest import Server
from tests.e2e.test_dashboard import open_page, table
from tests.e2e.test_folder_replay import rows

pytestmark = pytest.mark.e2e

GONE = "PFJNB02"  # the demo's store that goes down two days before the end and stays down


def expected_text(nxt: pd.DataFrame) -> str:
    group = nxt.sort_values("rank")
    text = "; ".join(f"{r.source} for {r.cnset}" for r in group.itertuples(index=False))
    return text + (" (waits: the store is down)" if group["waiting"].any() else "")


def test_an_open_entry_says_where_its_next_request_goes(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    data = demo_server.data
    nxt = table(data, "next_requests")
    live = nxt[~nxt["waiting"]]
    assert not live.empty
    entry_id = live.sort_values(["fid", "entry_id"])["entry_id"].iloc[0]
    fid = live.loc[live["entry_id"] == entry_id, "fid"].iloc[0]
    open_page(page, demo_server.base + f"/folder/{fid}")
    shown = {r["entry_id"]: r["next_request"] for r in rows(page, "pf-entries", ["entry_id", "next_request"])}
    assert shown[entry_id] == expected_text(nxt[nxt["entry_id"] == entry_id])
    entries = table(data, "backfill_entries")
    closed = entries[(entries["fid"] == fid) & (entries["state"] != "open")]["entry_id"]
    assert all(shown[e] == "" for e in closed if e in shown)
    # the same on the store's queue
    observer = live.loc[live["entry_id"] == entry_id, "observer"].iloc[0]
    open_page(page, demo_server.base + f"/store/{observer}")
    queue = {r["entry_id"]: r["next_request"] for r in rows(page, "pf-queue", ["entry_id", "next_request"])}
    assert queue[entry_id] == expected_text(nxt[nxt["entry_id"] == entry_id])


def test_a_store_that_is_down_sends_nothing_and_says_since_when(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    data = demo_server.data
    stores = table(data, "stores").set_index("store")
    assert stores.loc[GONE, "status"] == "down"
    since = stores.loc[GONE, "down_since"]
    requests = table(data, "backfill_requests")
    assert requests[(requests["observer"] == GONE) & (requests["at"] >= since)].empty  # none it never sent
    reps = table(data, "replicas")
    assert not (reps[reps["store"] == GONE]["health"] == "overdue").any()
    nxt = table(data, "next_requests")
    waiting = nxt[nxt["observer"] == GONE]
    assert not waiting.empty and waiting["waiting"].all()
    # the store page: down since when, for how long; its queue says its requests wait
    open_page(page, demo_server.base + f"/store/{GONE}")
    want = pd.Timestamp(since).strftime("%Y-%m-%d %H:%M:%S")
    assert want in page.locator("#pf-down-since").inner_text()
    queue = rows(page, "pf-queue", ["entry_id", "next_request"])
    assert queue and any(r["next_request"].endswith("(waits: the store is down)") for r in queue)
    # its replicas' badges are grey (last known), not the in-sync green
    colours = page.locator("#pf-store-replicas .pf-health-stale, .pf-table .pf-health-stale").evaluate_all(
        "els => els.map(e => getComputedStyle(e).color)"
    )
    green = "rgb(0, 158, 115)"
    assert colours and green not in colours
    # the overview says it too
    open_page(page, demo_server.base + "/")
    assert want in page.locator("#pf-stores").inner_text()


def test_the_folder_page_opens_with_its_verdict(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    """Each unhealthy replica in one line, in the first screen: what is missing, what happens next."""
    data = demo_server.data
    reps = table(data, "replicas")
    nxt = table(data, "next_requests")
    live = nxt[~nxt["waiting"]].sort_values(["fid", "entry_id"])
    fid, store = live["fid"].iloc[0], live["observer"].iloc[0]
    page.set_viewport_size({"width": 1440, "height": 900})
    open_page(page, demo_server.base + f"/folder/{fid}")
    line = page.locator(f'#pf-verdict li[data-store="{store}"]')
    text = line.inner_text()
    rep = reps[(reps["fid"] == fid) & (reps["store"] == store)].iloc[0]
    assert text.startswith(f"{store}: lacks {int(rep['lacks_count']):,} CN")
    first = live[(live["fid"] == fid) & (live["observer"] == store)].sort_values(["due_at", "rank"]).iloc[0]
    assert (
        f"next request {pd.Timestamp(first['due_at']).strftime('%Y-%m-%d %H:%M:%S')}Z to {first['source']}"
        in text
    )
    assert line.bounding_box()["y"] < 900  # no scrolling to find it
    unhealthy = reps[(reps["fid"] == fid) & (reps["health"] != "in_sync")]
    assert page.locator("#pf-verdict li").count() >= len(unhealthy)
