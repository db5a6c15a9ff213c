"""A plan on a published run (``compute.planning``, ``pfscope plan``): its baseline is the run's own
published forecast, a plan that changes nothing equals it, a bad action is one line and exit
status 2, and a plan never writes into the run."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest

from pfscope.app.cli import main
from pfscope.spark_jobs.compute import plan_workers
from pfscope.spark_jobs.compute.planning import (
    add_suggestions,
    folder_starts,
    involved_folders,
    make_plan,
    open_run,
    with_backups,
)
from pfscope.spark_jobs.model.errors import ExitStatus
from pfscope.spark_jobs.model.forecast.actions import Restore
from pfscope.spark_jobs.model.forecast.plan import PlanError, parse_plan
from pfscope.spark_jobs.model.forecast.planner import play_plan
from pfscope.spark_jobs.model.forecast.suggest import at_issue
from pfscope.spark_jobs.model.forecast.verdict import judge
from pfscope.spark_jobs.model.timeutil import DAY, format_ts
from tests.published_runs import published

STORE = "PFDUB01"


@pytest.fixture(scope="module")
def demo() -> Path:
    return published("demo")


def _published_forecast(plan_path: Path, fids: set[str]) -> dict[tuple[str, str], dict[str, Any]]:
    rows = ds.dataset(str(plan_path / "forecast"), format="parquet").to_table().to_pylist()
    out = {}
    for r in rows:
        if r["fid"] in fids:
            for k in ("in_sync_at", "latest_in_sync_at"):
                r[k] = format_ts(round(r[k].timestamp() * 1_000_000)) if r[k] is not None else None
            out[(r["store"], r["fid"])] = r
    return out


def _as_written(rows: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    out = {}
    for r in rows:
        r = dict(r)
        for k in ("in_sync_at", "latest_in_sync_at"):
            r[k] = format_ts(r[k]) if r[k] is not None else None
        out[(r["store"], r["fid"])] = r
    return out


def test_the_plan_s_baseline_is_the_published_forecast(demo: Path) -> None:
    """With its bounds played (``bounds``), every column of the baseline's rows."""
    run = open_run(demo)
    actions = parse_plan([f"down {STORE} at +2h until +8h"], run.known)
    starts = folder_starts(run, involved_folders(run, actions))
    played = play_plan(run.org, starts, run.as_of, run.transits, actions, bounds=True)
    fids = set(played.baseline)
    assert len(fids) > 5  # the store's folders, read from the run's fold states
    published_rows = _published_forecast(run.path, fids)
    baseline = _as_written([r for f in played.baseline.values() for r in f.forecast])
    assert published_rows  # some of its folders have replicas that lack CNs
    assert set(baseline) == set(published_rows)
    for key, row in published_rows.items():
        for column, value in baseline[key].items():
            assert row[column] == value, (key, column)


def test_a_plan_that_changes_nothing_equals_the_baseline(demo: Path) -> None:
    plan = make_plan(demo, [f"up {STORE}"])  # up already: nothing changes
    for fid, base in plan.played.baseline.items():
        assert plan.played.planned[fid].forecast == base.forecast
        assert plan.played.planned[fid].requests == base.requests
    assert plan.result.safe and plan.result.changed == [] and plan.result.traffic == []


def _pfscope(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*") if p.is_file()}


def test_the_command_says_the_verdict_first_and_writes_nothing(demo: Path) -> None:
    before = _files(demo)
    code, out, _ = _pfscope("plan", "--data", str(demo), "--action", f"down {STORE}", "--json")
    said = json.loads(out)
    assert list(said)[:5] == ["verdict", "reasons", "at_risk", "settles_at", "changed"]
    assert code == (ExitStatus.OK if said["verdict"] == "safe" else ExitStatus.NOT_SAFE)
    # down for good: what it alone holds is at risk (it survives only by mail already on its way)
    assert said["at_risk"] and said["verdict"] == "not safe"
    for risk in said["at_risk"]:
        assert risk["store"] == STORE and risk["cause"] == "down"
        assert risk["survives"] == (risk["until"] is not None)
        assert any(risk["cnset"] in reason for reason in said["reasons"])
    code_text, text, _ = _pfscope("plan", "--data", str(demo), "--action", f"down {STORE}")
    assert code_text == code and text.splitlines()[0].startswith(said["verdict"])
    assert _files(demo) == before


@pytest.mark.parametrize(
    ("action", "said"),
    [
        ("down NOPE", "no store named 'NOPE'"),
        (f"remove {STORE} from 9-FFFF", "no folder with FID '9-FFFF'"),
        (f"restore {STORE} from 2000-01-01T00:00:00Z", "the log knows only from"),
        (f"down {STORE} at 2000-01-01T00:00:00Z", "before the run's as-of"),
    ],
)
def test_a_bad_action_is_one_line_and_exit_status_2(demo: Path, action: str, said: str) -> None:
    code, out, err = _pfscope("plan", "--data", str(demo), "--action", action)
    assert code == ExitStatus.USAGE and out == ""
    assert said in err and len(err.strip().splitlines()) == 1
    with pytest.raises(PlanError):
        make_plan(demo, [action])


@pytest.mark.parametrize(
    "texts",
    [
        [f"down {STORE} at +2h until +8h"],
        [f"down {STORE} at +1d until +2d", "down PFJNB02 at +2h", "up PFJNB02 at +5h"],
        ["up PFJNB02 at +3h"],
        ["decommission PFRED03"],
        ["remove PFDUB01 from 1-2B51", "add PFSIN02 to 1-2B51 at +1h"],
    ],
)
def test_the_baseline_taken_from_a_play_the_plan_did_not_change_is_the_baseline(
    demo: Path, texts: list[str]
) -> None:
    """A folder whose play the plan did not change is not played again for the baseline: the same
    rows, requests and traffic as playing it."""
    run = open_run(demo)
    actions = parse_plan(texts, run.known)
    starts = folder_starts(run, involved_folders(run, actions))
    quick = play_plan(run.org, starts, run.as_of, run.transits, actions)
    full = play_plan(run.org, starts, run.as_of, run.transits, actions, shortcut=False)
    for fid, base in full.baseline.items():
        got = quick.baseline[fid]
        assert (got.forecast, got.requests, got.traffic) == (base.forecast, base.requests, base.traffic), fid
    assert judge(quick) == judge(full)


@pytest.mark.parametrize(
    "texts",
    [
        [f"down {STORE} at +2h until +8h"],
        ["decommission PFRED03"],
        [f"restore {STORE} from TWO_DAYS_BACK at +1h"],
    ],
)
def test_folders_played_in_forked_workers_equal_those_played_in_turn(
    demo: Path, texts: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plays a plan hands to forked workers (``plan_workers.forked``, every pass: the
    decommission's stop time too) give the plan played in this process, field for field."""
    monkeypatch.setattr(plan_workers, "MIN_FOLDERS", 1)  # the demo's folders are few: fork anyway
    run = open_run(demo)
    texts = [t.replace("TWO_DAYS_BACK", format_ts(run.as_of - 2 * DAY)) for t in texts]
    actions = [with_backups(run, a) if isinstance(a, Restore) else a for a in parse_plan(texts, run.known)]
    starts = folder_starts(run, involved_folders(run, actions))
    assert len(starts) >= 2
    in_this_process = play_plan(run.org, starts, run.as_of, run.transits, actions)
    forked = play_plan(run.org, starts, run.as_of, run.transits, actions, chunks=plan_workers.forked(2))
    assert forked == in_this_process
    assert judge(forked) == judge(in_this_process)


BOUND_COLUMNS = ("latest_in_sync_at", "after_back_s", "latest_after_back_s", "blocked_by")


@pytest.mark.parametrize(
    "texts",
    [
        [f"down {STORE} at +2h until +8h"],
        [f"down {STORE}"],
        ["decommission PFRED03"],
        [f"restore {STORE} from TWO_DAYS_BACK at +1h"],
    ],
)
def test_a_plan_without_its_bounds_plays_the_same_verdict(demo: Path, texts: list[str]) -> None:
    """A plan does not play the forecast's bounds (no verdict reads them): its in-sync times,
    requests, risks, traffic and verdict are those of the plays with the bounds."""
    run = open_run(demo)
    texts = [t.replace("TWO_DAYS_BACK", format_ts(run.as_of - 2 * DAY)) for t in texts]
    actions = [with_backups(run, a) if isinstance(a, Restore) else a for a in parse_plan(texts, run.known)]
    starts = folder_starts(run, involved_folders(run, actions))
    quick = play_plan(run.org, starts, run.as_of, run.transits, actions)
    full = play_plan(run.org, starts, run.as_of, run.transits, actions, bounds=True)
    assert judge(quick) == judge(full)
    rows = 0
    for side in ("planned", "baseline"):
        for fid, f in getattr(full, side).items():
            q = getattr(quick, side)[fid]
            assert (q.requests, q.risks, q.traffic, q.removed) == (f.requests, f.risks, f.traffic, f.removed)
            cut = [{k: v for k, v in r.items() if k not in BOUND_COLUMNS} for r in f.forecast]
            assert [{k: v for k, v in r.items() if k not in BOUND_COLUMNS} for r in q.forecast] == cut, fid
            rows += len(cut)
    assert rows > 0  # not vacuous: some replicas lack CNs


@pytest.mark.parametrize(
    "texts",
    [
        ["decommission PFRED03"],
        ["decommission PFDUB01 at +1d"],
        ["decommission PFRED03 at +2h", f"remove {STORE} from ANY_FOLDER_OF_PFRED03"],
        ["decommission PFSIN01", f"restore {STORE} from TWO_DAYS_BACK"],
    ],
)
def test_a_decommission_s_stop_time_skips_folders_it_cannot_put_at_risk(demo: Path, texts: list[str]) -> None:
    """``stop_time`` does not play the folders where the store holds nothing only it holds and no
    other removal or restore could make it so: the same time as playing every folder."""
    from pfscope.spark_jobs.model.forecast.actions import ByFolder, Decommission, ReplicaChange
    from pfscope.spark_jobs.model.forecast.planner import never_at_risk, stop_time, touched

    run = open_run(demo)
    shared = sorted(f for f, lst in run.known.lists.items() if "PFRED03" in lst and STORE in lst)
    texts = [
        t.replace("TWO_DAYS_BACK", format_ts(run.as_of - 2 * DAY)).replace("ANY_FOLDER_OF_PFRED03", shared[0])
        for t in texts
    ]
    actions = [with_backups(run, a) if isinstance(a, Restore) else a for a in parse_plan(texts, run.known)]
    starts = folder_starts(run, involved_folders(run, actions))
    (d,) = [a for a in actions if isinstance(a, Decommission)]
    rest = [a for a in actions if not isinstance(a, Decommission)]
    removals = [
        ReplicaChange(d.at, d.store, fid, False)
        for fid in touched(starts, actions)
        if (fold := starts[fid].folds.get(d.store)) is not None and fold.on_list
    ]
    plan = [*rest, *removals]
    quick = stop_time(run.org, starts, run.as_of, run.transits, plan, d)
    assert quick == stop_time(run.org, starts, run.as_of, run.transits, plan, d, skip=False)
    by_folder = ByFolder(plan)
    skipped = [f for f in touched(starts, plan) if never_at_risk(starts[f], d.store, by_folder.of(f))]
    restores = any(isinstance(a, Restore) for a in rest)
    assert bool(skipped) != restores  # some folders are not played; with a restore, every one is


def test_what_is_suggested_instead_is_safe_when_opened(demo: Path) -> None:
    """A plan that is not safe offers safe variants; each, opened as a plan of its own (its actions
    as ``pfscope plan`` prints them), is safe on the folders where the first was not."""
    plan = make_plan(demo, ["decommission PFRED03"])
    assert not plan.result.safe and plan.suggestions
    issue = at_issue(plan.result)
    code, out, _ = _pfscope("plan", "--data", str(demo), "--action", "decommission PFRED03", "--json")
    assert code == ExitStatus.NOT_SAFE
    said = json.loads(out)["suggestions"]
    assert [s["why"] for s in said] == [s.why for s in plan.suggestions]
    for offered in said:
        opened = make_plan(demo, offered["actions"])
        assert not any(r.fid in issue for r in opened.result.at_risk), offered["why"]
        assert not at_issue(opened.result) & issue


def test_suggestions_looked_for_later_are_the_same(demo: Path) -> None:
    """The ``/plan`` page shows the verdict first and looks for suggestions after: a plan made
    without them, then given them (once: a second call tries nothing again), offers what one made
    with them offers."""
    at_once = make_plan(demo, ["decommission PFRED03"])
    later = make_plan(demo, ["decommission PFRED03"], suggest=False)
    assert (later.suggestions, later.looked) == ([], False) and later.result == at_once.result
    add_suggestions(later)
    assert later.looked and later.suggestions == at_once.suggestions != []
    first = later.suggestions
    add_suggestions(later)
    assert later.suggestions is first


@pytest.mark.parametrize("bounds", [False, True])
@pytest.mark.parametrize(
    "texts",
    [
        [f"restore {STORE} from TWO_DAYS_BACK"],
        [f"down {STORE} at +2h until +8h"],
        ["decommission PFRED03"],
    ],
)
def test_a_folder_s_two_plays_made_ready_once_equal_each_played_alone(
    demo: Path, texts: list[str], bounds: bool
) -> None:
    """``play_folder`` makes a folder's start ready once for its play under the plan and without
    it (what each replica lacks, the mail in order, the folds pickled: ``FolderStartPlays``): each
    is the folder's forecast made from nothing, field for field."""
    from pfscope.spark_jobs.model.forecast.actions import ByFolder
    from pfscope.spark_jobs.model.forecast.folder import forecast_folder

    run = open_run(demo)
    texts = [t.replace("TWO_DAYS_BACK", format_ts(run.as_of - 2 * DAY)) for t in texts]
    actions = [with_backups(run, a) if isinstance(a, Restore) else a for a in parse_plan(texts, run.known)]
    starts = folder_starts(run, involved_folders(run, actions))
    played = play_plan(run.org, starts, run.as_of, run.transits, actions, shortcut=False, bounds=bounds)
    by_folder = ByFolder(played.played)
    rows = 0
    for fid, planned in played.planned.items():
        s = starts[fid]
        alone = forecast_folder(
            run.org, fid, s.folds, s.mail, run.as_of, run.transits, by_folder.of(fid), bound=bounds
        )
        base = forecast_folder(
            run.org, fid, s.folds, s.mail, run.as_of, run.transits, always=True, bound=bounds
        )
        assert planned == alone, fid
        assert played.baseline[fid] == base, fid
        rows += len(alone.forecast) + len(base.forecast)
    assert rows > 0 and any(f.diverged for f in played.planned.values())  # not vacuous


def test_a_plan_leaves_the_cyclic_collector_as_it_found_it(demo: Path) -> None:
    """``make_plan`` pauses the cyclic garbage collector (``compute.planning``): it is back on
    after a plan, after its suggestions and after a plan refused; off, it stays off."""
    import gc

    assert gc.isenabled()
    plan = make_plan(demo, ["decommission PFRED03"], suggest=False)
    assert gc.isenabled()
    add_suggestions(plan)
    assert gc.isenabled() and plan.looked
    with pytest.raises(PlanError):
        make_plan(demo, ["down NOPE"])
    assert gc.isenabled()
    gc.disable()
    try:
        make_plan(demo, [f"up {STORE}"])
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_store_s_states_are_read_in_the_workers_that_play_them(
    demo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``folder_starts`` reads a folder's state when a play first asks for it: forked workers read
    their own (none in this process), find there which folders the plan touches, and give the plan
    played in this process from states read here, a folder it does not touch left out."""
    from pfscope.spark_jobs.model.forecast.planner import touched

    monkeypatch.setattr(plan_workers, "MIN_FOLDERS", 1)
    run = open_run(demo)
    texts = [f"restore {STORE} from {format_ts(run.as_of - 2 * DAY)}", "down PFJNB02 at +2h until +6h"]
    actions = [with_backups(run, a) if isinstance(a, Restore) else a for a in parse_plan(texts, run.known)]
    involved = involved_folders(run, actions)
    other = sorted(f for f, stores in run.known.lists.items() if f not in involved)[0]  # untouched
    starts = folder_starts(run, involved | {other})
    forked = play_plan(run.org, starts, run.as_of, run.transits, actions, chunks=plan_workers.forked(2))
    assert starts.made == 0  # every state was read in a worker
    here = {fid: starts[fid] for fid in starts}
    assert starts.made == len(here) == len(involved) + 1
    in_turn = play_plan(run.org, here, run.as_of, run.transits, actions)
    assert forked == in_turn
    assert list(forked.planned) == touched(here, actions) and other not in forked.planned
