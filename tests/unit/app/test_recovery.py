"""The forecast of many replicas (app/figures/recovery.py): in words for the causes, the store page
and the reports, as a grid's and a table's columns, and as the recovery chart (two step lines and
the floor of the replicas that will not catch up)."""

from __future__ import annotations

import pandas as pd

from pfscope.app.figures import recovery as rc
from pfscope.spark_jobs.model.forecast.folder import unblock_text

T = pd.Timestamp
AS_OF = T("2026-11-08T23:59:59Z")
DOWN = "PFJNB02 is down since 2026-11-07T00:00:00Z: it processes nothing until it is back"


def rows(*specs: tuple[str, str, str | None, str | None, str | None]) -> pd.DataFrame:
    """Forecast rows: (store, fid, in_sync_at, latest_in_sync_at, blocked_by)."""
    frame = pd.DataFrame(
        [
            {
                "store": s,
                "fid": f,
                "in_sync_at": a,
                "latest_in_sync_at": b,
                "sources": ["PFDUB01"] if a else [],
                "blocked_by": why,
            }
            for s, f, a, b, why in specs
        ]
    )
    for col in ("in_sync_at", "latest_in_sync_at"):
        frame[col] = pd.to_datetime(frame[col], utc=True)
    return frame


FORECAST = rows(
    ("PFDUB01", "1-2A", "2026-11-09T00:10:00Z", "2026-11-09T00:40:00Z", None),
    ("PFDUB02", "1-2A", "2026-11-09T06:00:00Z", "2026-11-10T02:10:00Z", None),
    ("PFRED01", "1-2B", "2026-11-08T23:59:59Z", "2026-11-08T23:59:59Z", None),
    ("PFJNB02", "1-2A", None, None, DOWN),
    ("PFJNB02", "1-2B", None, None, DOWN),
    ("PFSIN01", "1-2C", None, None, "only PFJNB02 holds PFJNB02:1-40,45: down since 2026-11-07T09:15:00Z"),
    ("PFSIN02", "1-2D", None, None, "only PFJNB02 holds PFJNB02:7: down since 2026-11-07T09:15:00Z"),
)


# -- in words --------------------------------------------------------------------------------


def test_blocked_groups_name_cn_sets_generically_and_count_most_first() -> None:
    groups = rc.blocked_groups(FORECAST)
    assert groups == [
        (DOWN, 2),
        ("only PFJNB02 holds CNs it lacks: down since 2026-11-07T09:15:00Z", 2),  # a time is no CN set
    ]
    # each reason of a joined text counts once per replica; "still lacks …" reads as CNs
    two = rows(
        (
            "PFS3",
            "1-1",
            None,
            None,
            "nothing on its way tells PFS3 of PFS1:3 (x); PFS3 still lacks PFS1:3 at the horizon",
        ),
        ("PFS4", "1-1", None, None, None),
    )
    assert rc.blocked_groups(two) == [
        ("PFS3 still lacks CNs at the horizon", 1),
        ("no reason given", 1),
        ("nothing on its way tells PFS3 of CNs it lacks (x)", 1),
    ]
    assert rc.blocked_groups(FORECAST.iloc[0:3]) == []


def test_forecast_summary_says_the_last_in_sync_the_bound_and_who_will_not_catch_up() -> None:
    coming = FORECAST.iloc[0:2]
    assert rc.forecast_summary(coming) == (
        "forecast: all 2 replicas in sync by ~Mon 11-09 06:00 (Tue 11-10 02:10 at the latest)"
    )
    mixed = FORECAST.iloc[[0, 1, 3]]
    assert rc.forecast_summary(mixed) == (
        "forecast: 2 replicas in sync by ~Mon 11-09 06:00 (Tue 11-10 02:10 at the latest); "
        f"1 replica will not catch up within 14 days: {DOWN}"
    )
    blocked = FORECAST.iloc[3:]
    said = rc.forecast_summary(blocked)
    assert said.startswith("forecast: all 4 replicas will not catch up within 14 days: ")
    assert f"{DOWN} (2)" in said and "only PFJNB02 holds CNs it lacks" in said
    # one replica: as the verdict says it; none: nothing
    assert rc.forecast_summary(FORECAST.iloc[[0]]).startswith(
        "forecast: in sync by ~Mon 11-09 00:10 via PFDUB01"
    )
    assert rc.forecast_summary(FORECAST.iloc[0:0]) == ""
    # the same minute at the latest: said once; a bound beyond the horizon: said so
    same = rows(
        ("A", "1", "2026-11-09T01:00:00Z", "2026-11-09T01:00:30Z", None),
        ("B", "1", "2026-11-09T00:00:00Z", None, None),
    )
    assert rc.forecast_summary(same) == (
        "forecast: all 2 replicas in sync by ~Mon 11-09 01:00 (also at the latest; 1 not within 14 days if a reply "
        "is lost)"
    )


def test_a_cell_and_a_short_cell() -> None:
    first, blocked = FORECAST.iloc[0].to_dict(), FORECAST.iloc[3].to_dict()
    assert rc.forecast_cell(first) == "in sync by ~Mon 11-09 00:10 (Mon 11-09 00:40 at the latest)"
    assert rc.forecast_cell(blocked) == f"will not catch up within 14 days: {DOWN}"  # as its verdict says
    assert rc.forecast_cell(FORECAST.iloc[2].to_dict()) == "in sync by ~Sun 11-08 23:59 (also at the latest)"
    assert rc.forecast_cell(None) == ""
    assert rc.forecast_short(first) == "in sync by ~Mon 11-09 00:10"
    assert rc.forecast_short(blocked) == "not within 14 days"
    assert rc.forecast_at_s(first) == T("2026-11-09T00:10:00Z").timestamp()
    assert rc.forecast_at_s(blocked) is None


def test_forecast_columns_join_each_row_to_its_replica() -> None:
    entries = pd.DataFrame(
        {"observer": ["PFDUB02", "PFJNB02", "PFDUB02", "PFXXX"], "fid": ["1-2A", "1-2B", "1-2A", "1-2A"]}
    )
    got = rc.forecast_columns(entries, FORECAST, store="observer")
    assert got["forecast"].tolist() == [
        "in sync by ~Mon 11-09 06:00",
        "not within 14 days",
        "in sync by ~Mon 11-09 06:00",
        "",
    ]
    assert got["forecast_in_sync_at"].tolist()[0] == "2026-11-09 06:00:00Z"
    assert got["forecast_latest_at"].tolist()[0] == "2026-11-10 02:10:00Z"
    assert got["forecast_detail"].tolist()[1] == f"forecast: will not catch up within 14 days: {DOWN}"
    assert got["forecast_s"].iloc[0] == T("2026-11-09T06:00:00Z").timestamp() and pd.isna(
        got["forecast_s"].iloc[1]
    )
    wide = rc.forecast_columns(entries, FORECAST, store="observer", long=True)
    assert wide["forecast"].iloc[0] == "in sync by ~Mon 11-09 06:00 (Tue 11-10 02:10 at the latest)"
    # no forecast at all (a run published before it): empty cells, the rows kept
    none = rc.forecast_columns(entries, pd.DataFrame(), store="observer")
    assert none["forecast"].tolist() == [""] * 4 and len(none) == 4


# -- the recovery chart ----------------------------------------------------------------------


def test_recovery_steps_down_at_each_in_sync_time_to_the_floor() -> None:
    r = rc.recovery(FORECAST, AS_OF)
    assert (r.total, r.blocked, r.unbounded) == (7, 4, 0)
    assert r.last == T("2026-11-09T06:00:00Z") and r.last_bound == T("2026-11-10T02:10:00Z")
    # x: from the as-of to the last forecast time (and a little after, to see the last step)
    assert r.start == AS_OF and T("2026-11-10T02:10:00Z") < r.end < T("2026-11-10T04:00:00Z")
    steps = list(zip(r.steps["at"], r.steps["lacking"], strict=True))
    assert steps == [
        (AS_OF, 7),
        (AS_OF, 6),  # in sync at the as-of: mail on its way arrives then
        (T("2026-11-09T00:10:00Z"), 5),
        (T("2026-11-09T06:00:00Z"), 4),
        (r.end, 4),
    ]
    assert list(r.bound["lacking"]) == [7, 6, 5, 4, 4]
    assert list(r.bound["at"])[2:4] == [T("2026-11-09T00:40:00Z"), T("2026-11-10T02:10:00Z")]
    assert r.why[0] == (DOWN, 2)


def test_recovery_is_at_most_the_horizon_and_an_hour_at_least() -> None:
    unbounded = rows(("A", "1", "2026-11-09T01:00:00Z", None, None))
    r = rc.recovery(unbounded, AS_OF)
    assert r.end == AS_OF + pd.Timedelta(days=14) and r.unbounded == 1
    assert list(r.bound["lacking"]) == [1, 1]  # it never drops within the horizon if a reply is lost
    now = rc.recovery(rows(("A", "1", "2026-11-08T23:59:59Z", "2026-11-08T23:59:59Z", None)), AS_OF)
    assert now.end == AS_OF + pd.Timedelta(hours=1)
    stuck = rc.recovery(FORECAST.iloc[3:], AS_OF)
    assert stuck.end == AS_OF + pd.Timedelta(days=14) and list(stuck.steps["lacking"]) == [4, 4]
    empty = rc.recovery(FORECAST.iloc[0:0], AS_OF)
    assert empty.total == 0 and empty.steps.empty


def test_many_times_are_binned_up_never_earlier() -> None:
    n = rc.STEP_POINTS * 3
    times = pd.date_range(AS_OF + pd.Timedelta(seconds=1), periods=n, freq="7s")
    many = pd.DataFrame(
        {
            "store": [f"S{i}" for i in range(n)],
            "fid": "1-1",
            "in_sync_at": times,
            "latest_in_sync_at": times + pd.Timedelta(minutes=1),
            "blocked_by": None,
        }
    )
    r = rc.recovery(many, AS_OF)
    assert len(r.steps) <= rc.STEP_POINTS + 3
    # at each drawn time, no more replicas are counted in sync than the forecast says are
    for at, lacking in zip(r.steps["at"], r.steps["lacking"], strict=True):
        assert lacking >= n - int((many["in_sync_at"] <= at).sum())
    assert r.steps["lacking"].iloc[-1] == 0


def test_recovery_text() -> None:
    r = rc.recovery(FORECAST, AS_OF)
    assert rc.recovery_text(r) == (
        "7 replicas lack CNs at the as-of (what is so). By the forecast, 3 will be in sync, the last by ~Mon "
        "11-09 06:00 (Tue 11-10 02:10 at the latest, if a reply is lost); 4 will not catch up within 14 days."
    )
    assert rc.recovery_text(rc.recovery(FORECAST.iloc[3:5], AS_OF), of=" of PFJNB02", why=True) == (
        "2 replicas of PFJNB02 lack CNs at the as-of (what is so). By the forecast, none of them catches up "
        f"within 14 days: {DOWN}."
    )
    assert rc.recovery_text(rc.recovery(FORECAST.iloc[0:2], AS_OF)).endswith(
        "all will be in sync, the last by ~Mon 11-09 06:00 (Tue 11-10 02:10 at the latest, if a reply is lost)."
    )
    assert rc.recovery_text(rc.recovery(FORECAST.iloc[0:0], AS_OF), of=" of PFS1") == (
        "No replica of PFS1 lacks CNs at the as-of: nothing to forecast."
    )


def test_the_chart_draws_both_lines_and_the_floor_labelled_with_why() -> None:
    r = rc.recovery(FORECAST, AS_OF)
    fig = rc.fig_recovery(r)
    by = {t.name: t for t in fig.data}
    floor = by["will not catch up within 14 days"]
    assert list(floor.y) == [4, 4] and floor.fill == "tozeroy"
    assert DOWN.split(":")[0] in floor.hovertemplate
    solid, dashed = by["by the forecast"], by["at the latest (the first reply of each entry lost)"]
    assert list(solid.y) == list(r.steps["lacking"]) and solid.line.shape == "hv"
    assert list(dashed.y) == list(r.bound["lacking"]) and dashed.line.dash == "dash"
    label = fig.layout.annotations[0].text.replace("<br>", " ")
    assert (
        label.startswith("4 replicas will not catch up: PFJNB02 is down since") and "1 other reason" in label
    )
    assert list(fig.layout.xaxis.range) == [r.start, r.end]
    # markup from data stays text in plotly's label
    hostile = rows(("A", "1", None, None, "<b>x</b> is down"))
    assert "&lt;b&gt;x&lt;/b&gt;" in rc.fig_recovery(rc.recovery(hostile, AS_OF)).layout.annotations[0].text
    # nothing lacking: a figure that says so
    empty = rc.fig_recovery(rc.recovery(FORECAST.iloc[0:0], AS_OF))
    assert "nothing to forecast" in empty.layout.annotations[0].text and not empty.data


def test_milestones_give_the_chart_day_by_day() -> None:
    r = rc.recovery(FORECAST, AS_OF)
    got = rc.recovery_milestones(r)
    assert got["at"].tolist()[0] == AS_OF and got["at"].tolist()[-1] == r.end
    assert got["by_forecast"].tolist() == [7, 4, 4] and got["at_the_latest"].tolist() == [7, 5, 4]
    assert rc.recovery_milestones(rc.recovery(FORECAST.iloc[0:0], AS_OF)).empty


# -- replicas that wait for stores that are down ------------------------------------------------

BACK = "in sync ~2 h after PFJNB02 is back, 14 h at the latest if its queued mail expires first or a reply is lost"


def waiting(*specs: tuple[str, list[str] | None, float | None, float | None]) -> pd.DataFrame:
    """Blocked rows that wait for stores: (store, waits_for, after_back_s, latest_after_back_s); the
    blocked_by text ends with what their return would do, as the job writes it."""
    texts = [
        DOWN
        + (f"; {unblock_text({'waits_for': w, 'after_back_s': a, 'latest_after_back_s': b})}" if w else "")
        for _, w, a, b in specs
    ]
    frame = rows(*[(s, "1-2A", None, None, t) for (s, _, _, _), t in zip(specs, texts, strict=True)])
    frame["waits_for"] = [w for _, w, _, _ in specs]
    frame["after_back_s"] = [a for _, _, a, _ in specs]
    frame["latest_after_back_s"] = [b for _, _, _, b in specs]
    return frame


def test_replicas_that_wait_for_a_store_say_what_its_return_would_do() -> None:
    frame = waiting(
        ("A", ["PFJNB02"], 7200.0, 50400.0),
        ("B", ["PFJNB02"], 600.0, None),
        ("C", ["PFJNB02"], None, None),
        ("D", None, None, None),
    )
    # the return's part of blocked_by is not a reason: the reasons group as before
    assert rc.blocked_groups(frame) == [(DOWN, 4)]
    [w] = rc.waits_groups(frame)
    assert (w.stores, w.replicas, w.after, w.latest, w.never, w.unbounded) == (
        ("PFJNB02",),
        3,
        7200.0,
        50400.0,
        1,
        1,
    )
    assert w.text() == (
        "once PFJNB02 is back, 2 in sync within ~2 h (14 h at the latest, 1 of them not within 14 days then); "
        "1 not even then"
    )
    assert rc.forecast_summary(frame) == (
        f"forecast: all 4 replicas will not catch up within 14 days: {DOWN}; once PFJNB02 is back, 2 in sync "
        "within ~2 h (14 h at the latest, 1 of them not within 14 days then); 1 not even then"
    )
    one = rc.waits_groups(frame.iloc[[0]])[0]
    assert one.text() == "once PFJNB02 is back, in sync within ~2 h (14 h at the latest)"
    two = rc.waits_groups(
        waiting(("A", ["PFJNB02", "PFSIN02"], 30.0, 60.0), ("B", ["PFJNB02", "PFSIN02"], 0.0, 90.0))
    )
    assert two[0].text() == "once PFJNB02 and PFSIN02 are back, all 2 in sync at once (2 min at the latest)"
    # a grid's cell: not until it is back (when that would bring it in sync), else not within 14 days
    cells = [rc.forecast_short(r) for r in frame.to_dict("records")]
    assert cells == [
        "not until PFJNB02 is back",
        "not until PFJNB02 is back",
        "not within 14 days",
        "not within 14 days",
    ]
    assert rc.forecast_cell(frame.iloc[0].to_dict()) == f"not in sync until PFJNB02 is back: {DOWN}; {BACK}"
    # the recovery chart's summary says it too; its floor's hover as well
    r = rc.recovery(pd.concat([FORECAST.iloc[0:2], frame.iloc[[0]]], ignore_index=True), AS_OF)
    assert rc.recovery_text(r).endswith(
        "1 will not catch up within 14 days; once PFJNB02 is back, in sync within ~2 h (14 h at the latest)."
    )
    floor = next(t for t in rc.fig_recovery(r).data if t.name == "will not catch up within 14 days")
    assert "once PFJNB02 is back, in sync within ~2 h" in floor.hovertemplate.replace("<br>", " ")
