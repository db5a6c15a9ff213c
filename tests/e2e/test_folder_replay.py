"""The time slider drives every section of the folder page: replicas, backfill entries, the
timeline's cursor and the line saying what happened, all checked against the published tables."""

from __future__ import annotations

import pandas as pd
import pytest

from pfscope.spark_jobs.model.cnset import CNSet
from tests.e2e.conftest import Server
from tests.e2e.test_dashboard import busiest_folder, open_page, table


def rows(pg, table_id: str, cols: list[str]) -> list[dict[str, str]]:  # type: ignore[no-untyped-def]
    return pg.locator(f"#{table_id} tbody tr").evaluate_all(
        "(trs, cols) => trs.map(tr => Object.fromEntries(cols.map(c => "
        "[c, (tr.querySelector('.pf-col-' + c) || {innerText: ''}).innerText.trim()])))",
        cols,
    )


def expected_entries(data, fid: str, at: pd.Timestamp) -> dict[str, tuple[str, str]]:  # type: ignore[no-untyped-def]
    """Each entry opened by ``at``: open unless closed by then, and the requests made by then."""
    e = table(data, "backfill_entries")
    e = e[(e["fid"] == fid) & (e["opened_at"] <= at)]
    q = table(data, "backfill_requests")
    q = q[(q["fid"] == fid) & (q["at"] <= at)]
    out = {}
    for r in e.itertuples(index=False):
        closed = pd.notna(r.closed_at) and r.closed_at <= at
        out[r.entry_id] = (
            r.state if closed else "open",
            str(q[q["entry_id"] == r.entry_id]["attempt"].nunique()),
        )
    return out


def test_the_slider_replays_replicas_entries_timeline_and_says_what_happened(
    demo_server: Server, page
) -> None:  # type: ignore[no-untyped-def]
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
    # as of the run, no step cursor (the timeline may mark the as-of, after which its forecast is drawn)
    cursors = "gd => (gd.layout.shapes || []).filter(s => s.name === 'step').length"
    assert page.locator("#folder-timeline .js-plotly-plot").evaluate(cursors) == 0
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
    shown = {
        r["entry_id"]: (r["state"], r["requests"])
        for r in rows(page, "pf-entries", ["entry_id", "state", "requests"])
    }
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
        r["store"]: want_open.get(r["store"], 0) for r in reps
    }
    for r in reps:  # the health word first, then what the replica lacks
        health = r["health"].split(",")[0]
        assert (health in ("overdue", "backfilling")) == (
            want_open.get(r["store"], 0) > 0
        ) or health.startswith("delete")
    # what happened: one line per state_history row at the step, naming observer, subject and cause
    lines = page.locator("#pf-step li").all_inner_texts()
    at_step = history[history["at"] == step]
    assert len(lines) == len(at_step)
    for line, r in zip(lines, at_step.itertuples(index=False), strict=True):
        assert line.startswith(r.observer) and (r.cause in line or "a change" in line)
    # the timeline has its cursor; the strip marks the step at a position proportional to time
    page.wait_for_function("() => document.querySelectorAll('#folder-timeline .shapelayer path').length >= 1")
    assert page.locator("#folder-timeline .js-plotly-plot").evaluate(cursors) == 1
    on = page.locator("#folder-time-strip .pf-tick-on")
    assert on.get_attribute("data-at") == want_at
    ticks = page.locator("#folder-time-strip .pf-tick").evaluate_all(
        "ticks => ticks.map(t => [t.dataset.at, parseFloat(t.style.left)])"
    )
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
    assert {
        r["entry_id"]: r["state"] for r in rows(page, "pf-entries", ["entry_id", "state"])
    } == as_of_entries


def test_the_hierarchy_matrix_reads_healthy_where_nothing_is_missing(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    from pfscope.spark_jobs.model.cnset import CNSet

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
        "cs => cs.map(c => [c.dataset.observer, c.dataset.subject, c.dataset.state, getComputedStyle(c).borderLeftColor])"
    )
    amber = "rgb(230, 159, 0)"
    shown_amber = {(o, s) for o, s, _, colour in cells if colour == amber}
    assert shown_amber == amber_want
    assert {(o, s) for o, s, st, _ in cells if st == "told_later"} == healthy_lag
    off_diagonal = [c for c in cells if c[0] != c[1]]
    assert len(shown_amber) < len(off_diagonal) / 3  # the common case (a lag the observer holds) is not amber
    green = {colour for o, s, st, colour in cells if st in ("told_later", "current")}
    assert len(green) == 1 and amber not in green


def test_the_slider_is_placed_by_time_and_steps_from_change_to_change(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    """Each stop of the slider sits where in time its change happened (thumb positions linear in
    time, not in the change's rank); the keyboard steps one change at a time; the address bar
    follows; an old ``?at=`` between two changes opens on the change before it; labels at
    1440 px do not overlap."""
    from tests.e2e.test_attention import boxes, overlap

    data = demo_server.data
    fid = busiest_folder(data)
    history = table(data, "state_history")
    times = sorted(history[history["fid"] == fid]["at"].unique())
    t0, end = pd.Timestamp(times[0]), max(pd.Timestamp(table(data, "summary")["as_of"].iloc[0]), times[-1])
    page.set_viewport_size({"width": 1440, "height": 1000})
    # an old address: a time between two changes, at the change whose place by time is farthest
    # from its place by rank (where a slider spaced by event would put it)
    k = max(
        (i for i in range(len(times) - 1) if times[i + 1] - times[i] > pd.Timedelta(seconds=2)),
        key=lambda i: abs((times[i] - t0) / (end - t0) - i / len(times)),
    )
    frac_k = (times[k] - t0) / (end - t0)
    assert abs(frac_k - k / len(times)) > 0.05
    between = pd.Timestamp(times[k]) + (pd.Timestamp(times[k + 1]) - pd.Timestamp(times[k])) / 2
    open_page(page, demo_server.base + f"/folder/{fid}?at=" + between.strftime("%Y-%m-%dT%H:%M:%S.%fZ"))
    thumb = page.locator("#folder-slider [role=slider]")
    assert float(thumb.get_attribute("aria-valuenow")) == pytest.approx(
        (times[k] - t0).total_seconds(), abs=1e-3
    )
    assert page.locator("#pf-replicas").count() == 1

    def centre() -> float:
        b = thumb.bounding_box()
        return b["x"] + b["width"] / 2

    # thumb positions: there, then Home, a few single steps, End; linear in time
    samples: list[tuple[float, float]] = [(frac_k, centre())]  # (fraction of the time span, thumb centre)
    thumb.focus()
    thumb.press("Home")
    page.wait_for_function("() => new URLSearchParams(location.search).get('at') !== null")
    want = pd.Timestamp(times[0]).strftime("%Y-%m-%dT%H:%M:%S")
    page.wait_for_function(f"() => document.querySelector('#folder-at').innerText.includes('{want}')")
    x0 = centre()
    for i in range(1, 4):
        thumb.press("ArrowRight")
        want = pd.Timestamp(times[i]).strftime("%Y-%m-%dT%H:%M:%S")
        page.wait_for_function(f"() => document.querySelector('#folder-at').innerText.includes('{want}')")
        assert want in page.evaluate("() => new URLSearchParams(location.search).get('at')")
        assert float(thumb.get_attribute("aria-valuenow")) == pytest.approx(
            (times[i] - t0).total_seconds(), abs=1e-3
        )
        samples.append(((times[i] - t0) / (end - t0), centre()))
    thumb.press("End")
    page.wait_for_function("() => document.querySelector('#folder-at').innerText === 'as of the run'")
    assert page.evaluate("() => new URLSearchParams(location.search).get('at')") is None
    x1 = centre()
    assert x1 - x0 > 500
    for frac, x in samples:
        assert (x - x0) / (x1 - x0) == pytest.approx(frac, abs=2 / (x1 - x0))  # within 2 px
    # a mark near every change (a drag snaps to them), under Dash's 500; the labels do not overlap
    slots = {round(480 * (t - t0) / (end - t0)) for t in times} | {480}  # one mark per 1/480 at least
    assert len(slots) <= page.locator("#folder-slider .dash-slider-mark").count() <= 500
    labels = [
        b
        for b in page.locator("#folder-slider .dash-slider-mark").evaluate_all(
            "els => els.filter(e => e.innerText.trim()).map(e => { const r = e.getBoundingClientRect();"
            " return {x: r.x, y: r.y, w: r.width, h: r.height, right: r.right, bottom: r.bottom}; })"
        )
    ]
    assert len(labels) >= 3
    assert not any(overlap(a, b) for i, a in enumerate(labels) for b in labels[i + 1 :])
    as_of = boxes(page, "#folder-slider .dash-slider-mark")[-1]
    assert as_of["x"] + as_of["w"] / 2 == pytest.approx(x1, abs=12)  # "as of" labels the last stop


def unique_at(history: pd.DataFrame, at: pd.Timestamp, listed: set[str] | None = None) -> dict[str, CNSet]:
    """Independently of the page: each store's own row minus the union of the other rows of its
    state table for the stores on the list (``listed``; None: every store, the hierarchy), as
    state_history stood at ``at``."""
    rows = (
        history[history["at"] <= at].sort_values("at", kind="stable").groupby(["observer", "subject"]).tail(1)
    )
    owned: dict[str, CNSet] = {}
    others: dict[str, CNSet] = {}
    for r in rows.itertuples(index=False):
        cns = CNSet.parse(r.cnset or "")
        if r.observer == r.subject:
            owned[r.observer] = cns
        elif listed is None or r.subject in listed:
            others[r.observer] = others.get(r.observer, CNSet.empty()).union(cns)
    return {s: owned.get(s, CNSet.empty()).difference(others.get(s, CNSet.empty())) for s in owned}


def list_then(data, fid: str, at: pd.Timestamp) -> set[str]:  # type: ignore[no-untyped-def]
    """The folder's replica list at ``at``, from replica_lists (the topology's row has no time)."""
    lists = table(data, "replica_lists")
    lists = lists[(lists["fid"] == fid) & (lists["at"].isna() | (lists["at"] <= at))]
    lists = lists.assign(
        _t=lists["at"].fillna(pd.Timestamp.min.tz_localize("UTC")), _s=lists["seq"].fillna(-1)
    )
    return set(lists.sort_values(["_t", "_s"]).iloc[-1]["replicas"])


def status_then(data, fid: str, at: pd.Timestamp) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """Each replica's next status message at ``at``, from replica_history ('' when none is due)."""
    h = table(data, "replica_history")
    h = h[(h["fid"] == fid) & (h["at"] <= at)].sort_values("at", kind="stable").groupby("store").tail(1)
    return {
        r.store: (
            pd.Timestamp(r.status_due).strftime("%Y-%m-%d %H:%M:%SZ")
            if pd.notna(r.status_due) and r.status_due > at
            else ""
        )
        for r in h.itertuples(index=False)
    }


def test_a_past_step_replays_the_hierarchys_unique_cns_and_next_status(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    data = demo_server.data
    history = table(data, "state_history")
    h = history[history["fid"] == "1-1"]
    times = sorted(h["at"].unique())
    # a step where some store holds content no other is believed to hold (not the trivial all-zero)
    step = next(t for t in times[len(times) // 3 :] if any(unique_at(h, t).values()))
    i = times.index(step)
    before = pd.Timestamp(times[i - 1]).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    open_page(page, demo_server.base + "/folder/1-1?at=" + before)
    thumb = page.locator("#folder-slider [role=slider]")
    thumb.focus()
    thumb.press("ArrowRight")  # the callback's path, not only the first render's
    want = pd.Timestamp(step).strftime("%Y-%m-%dT%H:%M:%S")
    page.wait_for_function(f"() => document.querySelector('#folder-at').innerText.includes('{want}')")
    page.wait_for_load_state("networkidle")
    expected = unique_at(h, pd.Timestamp(step))
    shown = rows(page, "pf-replicas", ["store", "unique_count", "next_status_at"])
    assert {r["store"]: int(r["unique_count"]) for r in shown if r["store"] in expected} == {
        s: u.count() for s, u in expected.items()
    }
    assert any(int(r["unique_count"]) > 0 for r in shown)
    due = status_then(data, "1-1", pd.Timestamp(step))
    assert {r["store"]: r["next_status_at"] for r in shown if r["store"] in due} == due
    assert any(due.values())  # the next status message replays too
    assert "Replayed whole at this step" in page.locator("#folder-replicas").inner_text()
    assert (
        page.locator("#pf-pending").inner_text() == "None."
    )  # no replica of the hierarchy is delete pending
    # as of the run the published figures come back
    thumb.press("End")
    page.wait_for_function("() => document.querySelector('#folder-at').innerText === 'as of the run'")
    page.wait_for_load_state("networkidle")
    reps = table(data, "replicas")
    reps = reps[reps["fid"] == "1-1"]
    shown = rows(page, "pf-replicas", ["store", "unique_count"])
    assert {r["store"]: int(r["unique_count"]) for r in shown} == dict(
        zip(reps["store"], reps["unique_count"].astype(int), strict=True)
    )
    assert "Replayed whole" not in page.locator("#folder-replicas").inner_text()


def test_a_past_step_of_a_folder_replays_its_unique_cns_against_the_list_then(
    demo_server: Server, page
) -> None:  # type: ignore[no-untyped-def]
    data = demo_server.data
    fid = busiest_folder(data)
    history = table(data, "state_history")
    h = history[history["fid"] == fid]
    times = sorted(h["at"].unique())
    at = pd.Timestamp(times[len(times) // 2])
    open_page(page, demo_server.base + f"/folder/{fid}?at={at.strftime('%Y-%m-%dT%H:%M:%S.%fZ')}")
    shown = rows(page, "pf-replicas", ["store", "unique_count", "next_status_at"])
    expected = unique_at(h, at, list_then(data, fid, at))
    assert shown and {r["store"]: int(r["unique_count"]) for r in shown if r["store"] in expected} == {
        s: u.count() for s, u in expected.items()
    }
    due = status_then(data, fid, at)
    assert {r["store"]: r["next_status_at"] for r in shown if r["store"] in due} == due
    assert "Replayed whole at this step" in page.locator("#folder-replicas").inner_text()


def test_the_delete_pending_section_follows_the_slider(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    """A replica is listed at a step inside its delete-pending period (pending since, until
    deleted) and not before it or once deleted, with its unique CNs then."""
    data = demo_server.data
    reps = table(data, "replicas")
    history = table(data, "state_history")
    pending = reps[reps["delete_pending_since"].notna()]
    assert len(pending) > 0
    checked = []
    for r in pending.itertuples(index=False):
        times = sorted(history[history["fid"] == r.fid]["at"].unique())
        end = r.deleted_at if pd.notna(r.deleted_at) else None
        inside = [t for t in times if t >= r.delete_pending_since and (end is None or t < end)]
        before = [t for t in times if t < r.delete_pending_since]
        after = [t for t in times if end is not None and t >= end]
        for steps, listed in ((inside, True), (before, False), (after, False)):
            if not steps:
                continue
            at = pd.Timestamp(steps[len(steps) // 2]).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            open_page(page, demo_server.base + f"/folder/{r.fid}?at={at}")
            shown = (
                rows(page, "pf-pending", ["store", "unique_count"])
                if page.locator("#pf-pending tbody").count()
                else []
            )
            assert (r.store in {s["store"] for s in shown}) == listed, (r.store, r.fid, at)
            if listed:
                h = history[history["fid"] == r.fid]
                t = pd.Timestamp(steps[len(steps) // 2])
                want = unique_at(h, t, list_then(data, r.fid, t)).get(r.store, CNSet.empty()).count()
                assert {s["store"]: s["unique_count"] for s in shown}[r.store] == f"{want:,}"
            checked.append(listed)
    assert True in checked and False in checked


def test_a_long_history_keeps_every_change_on_the_keyboard(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    """The folder with the most changes (more than Dash's 500 slider marks): no console warning
    (the page fixture fails on one), at most 500 marks, and the keys still step change by change."""
    history = table(demo_server.data, "state_history")
    counts = history.groupby("fid")["at"].nunique()
    fid = str(counts.idxmax())
    assert counts.max() > 500
    times = sorted(history[history["fid"] == fid]["at"].unique())
    open_page(page, demo_server.base + f"/folder/{fid}")
    assert page.locator("#folder-slider .dash-slider-mark").count() <= 500
    thumb = page.locator("#folder-slider [role=slider]")
    thumb.focus()
    thumb.press("Home")
    for i in (0, 1, 2):
        if i:
            thumb.press("ArrowRight")
        want = pd.Timestamp(times[i]).strftime("%Y-%m-%dT%H:%M:%S")
        page.wait_for_function(f"() => document.querySelector('#folder-at').innerText.includes('{want}')")
        assert float(thumb.get_attribute("aria-valuenow")) == pytest.approx(
            (times[i] - times[0]).total_seconds(), abs=1e-3
        )


def test_a_store_link_in_a_replayed_table_moves_within_the_page(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    """The slider's tables are drawn as one component each (app/frozen.py): their links still
    move inside the single-page app, as dcc.Link does, with no reload; a modified click does not."""
    open_page(page, demo_server.base + "/folder/1-1")
    page.evaluate("() => { window.pfNoReload = 'still here'; }")
    link = page.locator("#pf-replicas a[data-pf-link]").first
    store = link.inner_text()
    assert link.get_attribute("href") == f"/store/{store}"
    link.click()
    page.wait_for_url(f"**/store/{store}")
    page.wait_for_function(
        f"() => (document.querySelector('main h1') || {{innerText: ''}}).innerText.includes('{store}')"
    )
    assert page.evaluate("() => window.pfNoReload") == "still here"


def test_a_large_folder_opens_its_matrix_as_counts_and_switches_to_cn_sets(demo_server: Server, page) -> None:  # type: ignore[no-untyped-def]
    """The hierarchy of ten stores: counts only (no wall of CN text) until asked, and the view
    survives a slider step."""
    state = table(demo_server.data, "state_table")
    state = state[state["fid"] == "1-1"]
    assert state["observer"].nunique() > 6
    open_page(page, demo_server.base + "/folder/1-1")
    assert page.locator("#pf-matrix").get_attribute("data-view") == "counts"
    assert page.locator("#pf-matrix .pf-cn-range").count() == 0
    counts = dict(
        zip(zip(state["observer"], state["subject"], strict=True), state["cnset_count"], strict=True)
    )
    cells = page.locator("#pf-matrix td.pf-cell").evaluate_all(
        "cs => cs.map(c => [c.dataset.observer, c.dataset.subject, c.querySelector('.pf-cell-count').innerText])"
    )
    assert cells and all(
        text == (f"{int(counts[(o, s)]):,} CN" + ("" if counts[(o, s)] == 1 else "s")) for o, s, text in cells
    )
    thumb = page.locator("#folder-slider [role=slider]")
    thumb.focus()
    thumb.press("Home")
    page.wait_for_function("() => document.querySelector('#folder-at').innerText.startsWith('at ')")
    page.wait_for_load_state("networkidle")
    assert page.locator("#pf-matrix").get_attribute("data-view") == "counts"
    page.locator("#folder-view-switch").click()
    page.wait_for_url("**view=full**")
    page.wait_for_function(
        "() => (document.querySelector('#pf-matrix') || {dataset: {}}).dataset.view === 'full'"
    )
    assert page.locator("#pf-matrix .pf-cn-range").count() > 0
