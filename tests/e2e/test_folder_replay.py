"""The time slider drives every section of the folder page: replicas, backfill entries, the
timeline's cursor and the line saying what happened, all checked against the published tables."""

from __future__ import annotations

import pandas as pd

from tests.e2e.conftest import Server
from tests.e2e.test_dashboard import busiest_folder, open_page, table


def rows(pg, table_id: str, cols: list[str]) -> list[dict[str, str]]:  # type: ignore[no-untyped-def]
    return pg.locator(f"#{table_id} tbody tr").evaluate_all(
        "(trs, cols) => trs.map(tr => Object.fromEntries(cols.map(c => "
        "[c, (tr.querySelector('.pf-col-' + c) || {innerText: ''}).innerText.trim()])))", cols)


def expected_entries(data, fid: str, at: pd.Timestamp) -> dict[str, tuple[str, str]]:  # type: ignore[no-untyped-def]
    """Each entry opened by ``at``: open unless closed by then, and the requests made by then."""
    e = table(data, "backfill_entries")
    e = e[(e["fid"] == fid) & (e["opened_at"] <= at)]
    q = table(data, "backfill_requests")
    q = q[(q["fid"] == fid) & (q["at"] <= at)]
    out = {}
    for r in e.itertuples(index=False):
        closed = pd.notna(r.closed_at) and r.closed_at <= at
        out[r.entry_id] = (r.state if closed else "open", str(q[q["entry_id"] == r.entry_id]["attempt"].nunique()))
    return out


def test_the_slider_replays_replicas_entries_timeline_and_says_what_happened(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    data = demo_server.data
    fid = busiest_folder(data)
    entries = table(data, "backfill_entries")
    entries = entries[entries["fid"] == fid]
    history = table(data, "state_history")
    history = history[history["fid"] == fid]
    times = sorted(history["at"].unique())
    # a step while the most entries were open, with a closed one after it
    opened = sorted(entries["opened_at"])
    step = max(t for t in times if t <= opened[len(opened) // 2])
    i = times.index(step)
    open_page(page, demo_server.base + f"/folder/{fid}")
    as_of_entries = {r["entry_id"]: r["state"] for r in rows(page, "pf-entries", ["entry_id", "state"])}
    assert as_of_entries == dict(zip(entries["entry_id"], entries["state"], strict=True))
    assert page.locator("#folder-timeline .shapes line, #folder-timeline path.shape, "
                        "#folder-timeline .layer-above .shapelayer path").count() == 0
    thumb = page.locator("#folder-slider [role=slider]")
    thumb.focus()
    thumb.press("Home")
    for _ in range(i):
        thumb.press("ArrowRight")
    want_at = pd.Timestamp(step).strftime("%Y-%m-%dT%H:%M:%SZ")
    page.wait_for_function(f"() => document.querySelector('#folder-at').innerText.includes('{want_at}')")
    page.wait_for_function(f"() => document.querySelector('#pf-step').innerText.includes('{want_at}')")
    page.wait_for_load_state("networkidle")
    # the entries: state and requests as of the step
    shown = {r["entry_id"]: (r["state"], r["requests"]) for r in rows(page, "pf-entries", ["entry_id", "state", "requests"])}
    assert shown == expected_entries(data, fid, pd.Timestamp(step))
    assert len(shown) < len(entries)
    # the replicas: open entries per store at the step
    want_open: dict[str, int] = {}
    for eid, (state, _) in shown.items():
        if state == "open":
            store = str(entries.loc[entries["entry_id"] == eid, "observer"].iloc[0])
            want_open[store] = want_open.get(store, 0) + 1
    reps = rows(page, "pf-replicas", ["store", "open_entries", "health"])
    assert {r["store"]: int(r["open_entries"]) for r in reps} == {
        r["store"]: want_open.get(r["store"], 0) for r in reps}
    for r in reps:
        assert (r["health"] in ("overdue", "backfilling")) == (want_open.get(r["store"], 0) > 0) or r["health"].startswith("delete")
    # what happened: one line per state_history row at the step, naming observer, subject and cause
    lines = page.locator("#pf-step li").all_inner_texts()
    at_step = history[history["at"] == step]
    assert len(lines) == len(at_step)
    for line, r in zip(lines, at_step.itertuples(index=False), strict=True):
        assert line.startswith(r.observer) and (r.cause in line or "a change" in line)
    # the timeline has its cursor; the strip marks the step at a position proportional to time
    page.wait_for_function("() => document.querySelectorAll('#folder-timeline .shapelayer path').length >= 1")
    on = page.locator("#folder-time-strip .pf-tick-on")
    assert on.get_attribute("data-at") == want_at
    ticks = page.locator("#folder-time-strip .pf-tick").evaluate_all(
        "ticks => ticks.map(t => [t.dataset.at, parseFloat(t.style.left)])")
    ts = [pd.Timestamp(t) for t in times]
    end = max(table(data, "summary")["as_of"].iloc[0], ts[-1])
    slots = {round(400 * (t - ts[0]) / (end - ts[0])) for t in ts}  # one tick per 1/400 of the strip
    assert len(ticks) in (len(slots), len(slots) + 1)  # (+1: the step's own tick, when it shares a slot)
    for at_text, left in ticks:
        assert abs(left - 100 * (pd.Timestamp(at_text) - ts[0]) / (end - ts[0])) < 0.01
    # back to the run's as-of: the published states again, no cursor
    thumb.press("End")
    page.wait_for_function("() => document.querySelector('#folder-at').innerText === 'as of the run'")
    page.wait_for_load_state("networkidle")
    assert {r["entry_id"]: r["state"] for r in rows(page, "pf-entries", ["entry_id", "state"])} == as_of_entries


def test_the_hierarchy_matrix_reads_healthy_where_nothing_is_missing(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    from spark_jobs.model.cnset import CNSet

    state = table(demo_server.data, "state_table")
    state = state[state["fid"] == "1-1"]
    owned = {r.subject: CNSet.parse(r.cnset or "") for r in state.itertuples(index=False) if r.is_self}
    amber_want, healthy_lag = set(), set()
    for r in state[~state["is_self"]].itertuples(index=False):
        lag = owned[r.subject].difference(CNSet.parse(r.cnset or ""))
        if lag and lag.difference(owned.get(r.observer, CNSet.empty())):
            amber_want.add((r.observer, r.subject))
        elif lag:
            healthy_lag.add((r.observer, r.subject))
    open_page(page, demo_server.base + "/folder/1-1")
    cells = page.locator("#pf-matrix td.pf-cell").evaluate_all(
        "cs => cs.map(c => [c.dataset.observer, c.dataset.subject, c.dataset.state, getComputedStyle(c).borderLeftColor])")
    amber = "rgb(230, 159, 0)"
    shown_amber = {(o, s) for o, s, _, colour in cells if colour == amber}
    assert shown_amber == amber_want
    assert {(o, s) for o, s, st, _ in cells if st == "told_later"} == healthy_lag
    off_diagonal = [c for c in cells if c[0] != c[1]]
    assert len(shown_amber) < len(off_diagonal) / 3  # the common case (a lag the observer holds) is not amber
    green = {colour for o, s, st, colour in cells if st in ("told_later", "current")}
    assert len(green) == 1 and amber not in green
