"""Run folders and LATEST: readers never see a half-written run."""

from __future__ import annotations

import json
import os

import pytest

from pfscope.spark_jobs.published.runs import (
    LATEST,
    PublishError,
    abandon,
    new_run_id,
    publish,
    read_latest,
    start_run,
)


def test_nothing_published_yet(tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert read_latest(tmp_path) is None


def test_publish_points_latest_at_the_complete_run(tmp_path) -> None:  # type: ignore[no-untyped-def]
    run = start_run(tmp_path)
    (run.path / "stores").mkdir()
    pointer = publish(run, {"as_of": "2026-11-08T23:59:00Z"})
    assert pointer["run_id"] == run.run_id and pointer["path"] == f"runs/{run.run_id}"
    latest = read_latest(tmp_path)
    assert latest == json.loads((tmp_path / LATEST).read_text())
    assert (tmp_path / latest["path"] / "stores").is_dir()
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".LATEST.")]  # no temporary left


def test_a_failed_run_leaves_the_previous_one(tmp_path) -> None:  # type: ignore[no-untyped-def]
    good = start_run(tmp_path)
    publish(good, {})
    bad = start_run(tmp_path)
    (bad.path / "half-written").write_text("x")
    abandon(bad)
    assert not bad.path.exists()
    assert read_latest(tmp_path)["run_id"] == good.run_id


def test_run_ids_sort_by_time_and_do_not_collide() -> None:
    from datetime import UTC, datetime

    a = new_run_id(datetime(2026, 11, 1, tzinfo=UTC))
    b = new_run_id(datetime(2026, 11, 2, tzinfo=UTC))
    assert a < b
    assert len({new_run_id() for _ in range(50)}) == 50


def test_unusable_output_folder_is_one_clear_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(PublishError, match="cannot create the output folder"):
        start_run(blocker / "out")


def test_corrupt_pointer_is_reported(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / LATEST).write_text("{not json")
    with pytest.raises(PublishError, match="unreadable"):
        read_latest(tmp_path)
    (tmp_path / LATEST).write_text('{"run": 1}')
    with pytest.raises(PublishError, match="not a pfscope LATEST pointer"):
        read_latest(tmp_path)


# --------------------------------------------------------------------------------------------
# retention and the lock
# --------------------------------------------------------------------------------------------
def _ids(n: int) -> list[str]:
    from datetime import UTC, datetime, timedelta

    t0 = datetime(2026, 11, 1, tzinfo=UTC)
    return [new_run_id(t0 + timedelta(hours=i)) for i in range(n)]


def test_plan_keeps_the_newest_published_runs() -> None:
    from pfscope.spark_jobs.published.runs import RunFolder, plan_pruning

    ids = _ids(8)
    runs = [RunFolder(r, True) for r in ids]
    plan = plan_pruning(runs, 5, current=ids[-1], previous=ids[-2])
    assert plan.old == ids[:3] and plan.leftovers == [] and plan.spared == []
    assert plan_pruning(runs, 0, current=ids[-1], previous=ids[-2]).old == []  # 0 keeps every run
    assert plan_pruning(runs, 8, current=ids[-1], previous=ids[-2]).old == []


def test_plan_never_removes_the_published_run_nor_the_one_before_it() -> None:
    from pfscope.spark_jobs.published.runs import RunFolder, plan_pruning

    ids = _ids(6)
    runs = [RunFolder(r, True) for r in ids]
    # keep 1: the current run and the one LATEST pointed at before it both stay
    assert plan_pruning(runs, 1, current=ids[-1], previous=ids[-2]).old == ids[:4]
    # the run before is not always the newest older one (an older run republished by hand)
    assert plan_pruning(runs, 1, current=ids[-1], previous=ids[1]).old == [ids[0], *ids[2:5]]
    # the current run stays even when newer published folders exist (a clock set back)
    plan = plan_pruning(runs, 2, current=ids[0], previous=None)
    assert ids[0] not in plan.old and plan.old == ids[1:4]
    # the run before stays even when its folder does not look published (written before the
    # markers, by a committer that leaves no _SUCCESS): a reader may still hold it
    unmarked = [*[RunFolder(r, True) for r in ids[:4]], RunFolder(ids[4], False), RunFolder(ids[5], True)]
    plan = plan_pruning(unmarked, 1, current=ids[5], previous=ids[4])
    assert ids[4] not in plan.old + plan.leftovers and ids[5] not in plan.old + plan.leftovers


def test_plan_removes_only_dead_older_leftovers() -> None:
    import socket

    from pfscope.spark_jobs.published.runs import RunFolder, plan_pruning

    ids = _ids(7)
    here = socket.gethostname()
    runs = [
        RunFolder(ids[0], True),
        RunFolder(ids[1], False, here, writer_alive=False),  # killed: removed
        RunFolder(ids[2], False, None),  # killed before it wrote its marker: removed
        RunFolder(ids[3], False, here, writer_alive=True),  # still being written here: spared
        RunFolder(ids[4], False, "other-host"),  # another machine's: spared
        RunFolder(ids[5], True),  # the current run
        RunFolder(ids[6], False, here),  # started after the current one: spared
    ]
    plan = plan_pruning(runs, 5, current=ids[5], previous=ids[0])
    assert plan.leftovers == [ids[1], ids[2]]
    assert plan.spared == [ids[3], ids[4], ids[6]]
    assert plan.old == []
    # leftovers go even when keep is 0 (keep every published run)
    assert plan_pruning(runs, 0, current=ids[5], previous=ids[0]).leftovers == [ids[1], ids[2]]


def test_retention_keeps_zero_or_more_runs() -> None:
    from pfscope.spark_jobs.published.runs import check_keep

    assert check_keep(0) == 0 and check_keep(12) == 12
    with pytest.raises(PublishError, match="keep -1"):
        check_keep(-1)


def _dead_pid() -> int:
    import subprocess
    import sys

    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_prune_on_disk_keeps_readers_and_clears_a_killed_run(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from pfscope.spark_jobs.published.runs import WRITER, prune_runs

    published = []
    for _ in range(4):
        run = start_run(tmp_path)
        (run.path / "stores").mkdir()
        published.append(publish(run, {}))
    assert [p.get("previous_run_id") for p in published] == [None] + [p["run_id"] for p in published[:3]]
    killed = start_run(tmp_path)  # a run SIGKILLed mid-write: its writer is gone
    (killed.path / "state_history" / "_temporary").mkdir(parents=True)
    marker = json.loads((killed.path / WRITER).read_text())
    (killed.path / WRITER).write_text(json.dumps({**marker, "pid": _dead_pid()}))
    running = start_run(tmp_path)  # this very process writes it: alive
    current = start_run(tmp_path)
    (current.path / "stores").mkdir()
    pointer = publish(current, {})
    plan = prune_runs(tmp_path, 2, pointer)
    assert plan.leftovers == [killed.run_id] and not killed.path.exists()
    assert plan.spared == [running.run_id] and running.path.is_dir()
    # keep 2: the current run and the one before it; the three older published runs go
    assert plan.old == [p["run_id"] for p in published[:3]]
    left = sorted(os.listdir(tmp_path / "runs"))
    assert left == sorted([published[3]["run_id"], running.run_id, current.run_id])
    assert read_latest(tmp_path)["run_id"] == current.run_id


def test_prune_treats_complete_unmarked_folders_as_published(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from pfscope.spark_jobs.model.tables import TABLES
    from pfscope.spark_jobs.published.runs import survey_runs

    ids = _ids(2)
    complete, partial = (tmp_path / "runs" / i for i in ids)
    for t in TABLES:
        (complete / t).mkdir(parents=True)
        (complete / t / "_SUCCESS").write_text("")
    (partial / "stores").mkdir(parents=True)
    (partial / "stores" / "_SUCCESS").write_text("")
    (tmp_path / "runs" / "not-a-run").mkdir()
    found = {r.run_id: r.published for r in survey_runs(tmp_path)}
    assert found == {ids[0]: True, ids[1]: False}


def test_the_lock_refuses_a_second_holder_with_who_holds_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import time

    from pfscope.spark_jobs.published.runs import RunLocked, run_lock

    with run_lock(tmp_path):
        with (
            pytest.raises(RunLocked, match=rf"another run holds .*\.lock \(pid {os.getpid()} on "),
            run_lock(tmp_path),
        ):
            pass
        started = time.monotonic()
        with pytest.raises(RunLocked, match=r"after waiting 0\.4 s"), run_lock(tmp_path, wait=0.4):
            pass
        assert time.monotonic() - started >= 0.4
    with run_lock(tmp_path):  # released
        pass


def test_a_held_lock_is_an_operator_error_with_its_own_status(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """``pfscope ingest`` into a folder another ingest holds: one line and 75, as before, though
    ``RunLocked`` is now an ``OperatorError`` (which the command line otherwise ends with 2)."""
    from pfscope.app.cli import main
    from pfscope.spark_jobs.ingest.incremental import state_root
    from pfscope.spark_jobs.model.errors import ExitStatus, OperatorError
    from pfscope.spark_jobs.published.runs import RunLocked, run_lock

    assert issubclass(RunLocked, OperatorError) and RunLocked("x").exit_status == ExitStatus.LOCKED == 75
    assert OperatorError("x").exit_status == 2
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "EX07.xml").write_text("", encoding="utf-8")
    out = tmp_path / "out"
    with run_lock(state_root(out)):  # taken before any Spark: this test starts none
        status = main(["ingest", "--logs", str(tmp_path / "logs"), "--out", str(out), "--engine", "spark"])
    err = capsys.readouterr().err
    assert status == ExitStatus.LOCKED
    assert err.startswith("pfscope ingest: another run holds ") and err.count("\n") == 1
    assert not (out / "events.jsonl").exists()


def test_the_lock_between_two_processes_and_after_sigkill(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import signal
    import subprocess
    import sys
    import time

    from pfscope.spark_jobs.published.runs import RunLocked, run_lock

    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pfscope.spark_jobs.published.runs import run_lock\n"
            f"with run_lock({str(tmp_path)!r}):\n    print('held', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(RunLocked, match=f"pid {holder.pid} "), run_lock(tmp_path):
            pass
        holder.send_signal(signal.SIGKILL)  # the kernel releases an flock with its holder
        holder.wait()
        started = time.monotonic()
        with run_lock(tmp_path, wait=10):
            assert time.monotonic() - started < 5
    finally:
        if holder.poll() is None:
            holder.kill()


def test_a_refused_run_leaves_no_output_folder_it_created(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from pfscope.spark_jobs.published.runs import LOCK, run_lock

    fresh = tmp_path / "new" / "out"
    with pytest.raises(ValueError), run_lock(fresh):
        assert (fresh / LOCK).exists()
        raise ValueError("bad topology")
    assert not fresh.exists()
    with run_lock(tmp_path):  # an existing folder keeps its lock file
        pass
    assert (tmp_path / LOCK).exists()
    with run_lock(fresh):  # a run that published keeps everything
        run = start_run(fresh)
        publish(run, {})
    assert read_latest(fresh)["run_id"] == run.run_id and (fresh / LOCK).exists()
