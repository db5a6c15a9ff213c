"""Which kept fold state a folder folds on from, and which hold for the next run (no Spark)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pfscope.spark_jobs.compute.checkpoints import CHECKPOINTS, INDEX, KEPT, Checkpoints, Resumed
from pfscope.spark_jobs.compute.refresh_lines import CannotRefresh

PREVIOUS = 1_000


def _folds(*fids: str, tag: str = "prev") -> pa.Table:
    return pa.table(
        {"fid": pa.array(fids, pa.string()), "blob": pa.array([f"{tag}:{f}" for f in fids], pa.string())}
    )


def _kept(tmp_path: Path, index: dict[str, list[int]], *fids: str) -> Checkpoints:
    return Checkpoints(tmp_path, PREVIOUS, _folds(*fids), index)


def test_a_folder_goes_on_from_the_latest_state_stamped_strictly_before_its_first_change(
    tmp_path: Path,
) -> None:
    kept = _kept(tmp_path, {"a": [200, 600], "b": [200, 600], "c": [600]}, "a", "b", "c", "d")
    resumed = kept.resumed({"a": 700, "b": 600, "c": 500, "d": 2_000, "new": 900}, first=())
    # a: 600 < 700; b: 600 is not before a change at 600 itself (a request due then came first);
    # c: nothing holds before 500; d: the previous run's state; new: no state at all
    assert resumed.by_as_of == {600: ["a"], 200: ["b"], PREVIOUS: ["d"]}
    assert resumed.fids == ["a", "b", "d"]


def test_a_folder_the_topology_changed_starts_from_its_first_event(tmp_path: Path) -> None:
    kept = _kept(tmp_path, {"a": [200]}, "a")
    assert kept.resumed({"a": 700}, first=("a",)).by_as_of == {}
    assert kept.next_index({}, first=("a",)) == {}


def test_the_next_run_keeps_what_no_change_reached_the_last_few(tmp_path: Path) -> None:
    many = list(range(100, 100 + 100 * (KEPT + 2), 100))
    kept = _kept(tmp_path, {"a": [200, 600], "b": [200, 600], "c": many}, "a", "b", "c", "e")
    index = kept.next_index({"a": 600, "b": 5_000}, first=())
    assert index["a"] == [200]  # 600 and the previous run's are stamped at or after the change
    assert index["b"] == [200, 600, PREVIOUS]  # changed after the previous as-of: all hold
    assert index["c"] == [*many, PREVIOUS][-KEPT:]
    assert index["e"] == [PREVIOUS]
    assert "new" not in kept.next_index({"new": 10}, first=())  # no state of it was kept


def test_the_rows_made_again_are_those_stamped_after_the_state(tmp_path: Path) -> None:
    resumed = Resumed({600: ["a", "b"], 200: ["c"]})
    assert resumed.events() == "(fid IN ('c') AND ts > 200) OR (fid IN ('a', 'b') AND ts > 600)"
    assert resumed.rows("backfill_entries") == (
        "(fid IN ('c') AND closed_at > timestamp_micros(200)) OR (fid IN ('a', 'b') AND closed_at > timestamp_micros(600))"
    )
    assert Resumed().events() == "false"


def test_kept_states_are_linked_read_back_and_indexed(tmp_path: Path) -> None:
    prev, run = tmp_path / "prev", tmp_path / "run"
    (prev / "_state/folds").mkdir(parents=True)
    pq.write_table(_folds("a", "b"), prev / "_state/folds/live-r1-part-0.parquet")
    older = prev / CHECKPOINTS / "600"
    older.mkdir(parents=True)
    pq.write_table(_folds("a", "b", tag="600"), older / "live-r0-part-0.parquet")
    pq.write_table(
        pa.table({"fid": ["a", "b"], "as_of": pa.array([600, 600], pa.int64())}), prev / CHECKPOINTS / INDEX
    )

    kept = Checkpoints.of(prev, PREVIOUS, _folds("a", "b"))
    assert kept.index == {"a": [600], "b": [600]}
    states = kept.states(Resumed({600: ["a"], PREVIOUS: ["b"]}))
    assert dict(zip(states.column("fid").to_pylist(), states.column("blob").to_pylist(), strict=True)) == {
        "a": "600:a",
        "b": "prev:b",
    }

    kept.keep(run, {"a": [600, PREVIOUS], "b": [PREVIOUS]}, "_state/folds")
    assert (run / CHECKPOINTS / "600" / "live-r0-part-0.parquet").stat().st_ino == (
        older / "live-r0-part-0.parquet"
    ).stat().st_ino
    assert (run / CHECKPOINTS / str(PREVIOUS) / "live-r1-part-0.parquet").exists()
    assert Checkpoints.of(run, 2_000, _folds("a", "b")).index == {"a": [600, PREVIOUS], "b": [PREVIOUS]}


def test_a_kept_state_gone_makes_a_full_run(tmp_path: Path) -> None:
    (tmp_path / CHECKPOINTS / "600").mkdir(parents=True)
    pq.write_table(_folds("b", tag="600"), tmp_path / CHECKPOINTS / "600" / "live-part-0.parquet")
    kept = _kept(tmp_path, {"a": [600]}, "a")
    with pytest.raises(CannotRefresh, match="incomplete"):
        kept.states(Resumed({600: ["a"]}))
