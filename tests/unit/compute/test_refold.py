"""Which folders a refresh folds again, and from where (no Spark: ``refold.refolded``)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from pfscope.spark_jobs.compute.checkpoints import Checkpoints
from pfscope.spark_jobs.compute.refold import of_folders, refolded

PREVIOUS = 1_000


def _kept(tmp_path: Path, index: dict[str, list[int]], *fids: str) -> Checkpoints:
    folds = pa.table({"fid": pa.array(fids, pa.string()), "blob": pa.array(list(fids), pa.string())})
    return Checkpoints(tmp_path, PREVIOUS, folds, index)


def test_late_changes_refold_and_go_on_from_a_state_before_them(tmp_path: Path) -> None:
    kept = _kept(tmp_path, {"a": [200, 600], "b": [200], "c": [200]}, "a", "b", "c", "d", "e")
    changed = {"a": 700, "b": 100, "c": PREVIOUS, "d": PREVIOUS, "e": 5_000}
    # c and d changed at the previous as-of itself: only c had a request due then
    refold = refolded(PREVIOUS, None, [("c", PREVIOUS), ("d", 900), ("e", None)], changed, kept)
    assert refold.resumed.by_as_of == {600: ["a"], 200: ["c"]}
    assert refold.first == ["b"]  # no state holds before 100
    assert refold.fids == ["a", "b", "c"]  # d and e: new events after the as-of, folded on as usual
    assert refold.first_events() == "fid IN ('b')"


def test_the_topologys_folders_fold_from_their_first_event(tmp_path: Path) -> None:
    kept = _kept(tmp_path, {"a": [200]}, "a", "t")
    refold = refolded(PREVIOUS, None, [], {"a": 700}, kept, in_topology=("t",))
    assert refold.first == ["t"] and refold.resumed.fids == ["a"]
    assert refold.where == "fid IN ('a', 't')"


def test_no_folder_is_sql_that_holds_for_no_row() -> None:
    assert of_folders([]) == "false"
    assert of_folders(["1-2", "o'brien"]) == "fid IN ('1-2', 'o\\'brien')"  # Spark SQL's escape
