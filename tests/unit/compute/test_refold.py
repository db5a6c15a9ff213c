"""Which folders a refresh folds again, and from where (no Spark: ``refold.refolded``)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from pfscope.spark_jobs.compute.checkpoints import Checkpoints
from pfscope.spark_jobs.compute.refold import _unmatched_as_tuples, of_folders, refolded, unmatched

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


_ITEM = st.sampled_from(["S1", "S2", "", "S1\x1fS2", None])
_ROW = st.tuples(
    st.integers(0, 3),  # seq
    st.sampled_from(["F1", "F2", None]),  # fid
    st.integers(0, 2),  # ts
    st.one_of(st.none(), st.lists(_ITEM, max_size=3)),  # to
)
_EVENTS = pa.schema(
    [("seq", pa.int64()), ("fid", pa.string()), ("ts", pa.int64()), ("to", pa.list_(pa.string()))]
)


def _table(rows: list[tuple[object, ...]]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(_EVENTS.names, r, strict=True)) for r in rows], schema=_EVENTS)


@settings(max_examples=300, deadline=None)
@given(st.lists(_ROW, max_size=8), st.lists(_ROW, max_size=8))
def test_a_files_events_then_and_now_differ_as_multisets_of_rows(then: list, now: list) -> None:  # type: ignore[type-arg]
    """Counted in Arrow (lists keyed by length and joined items) or as tuples (a list holding a
    null or the joining character), the rows unmatched are those of EXCEPT ALL both ways."""
    before, after = _table(then), _table(now)
    got = unmatched(before, after, _EVENTS.names).to_pylist()
    key = (
        [(r[0], r[1], r[2], None if r[3] is None else tuple(r[3])) for r in then],
        [(r[0], r[1], r[2], None if r[3] is None else tuple(r[3])) for r in now],
    )
    a, b = Counter(key[0]), Counter(key[1])
    expected = {(r[1], r[2]) for r in (a - b) + (b - a)}
    assert {(r["fid"], r["ts"]) for r in got} == expected
    assert bool(got) == bool(expected)
    both = _unmatched_as_tuples(before, after, _EVENTS.names).to_pylist()
    assert {(r["fid"], r["ts"]) for r in both} == expected


def test_lists_that_join_alike_are_still_told_apart() -> None:
    # [] and [""], ["a", ""] and ["a\x1f"]: their joined items alike, their lengths or items not
    empty, blank = _table([(1, "F1", 5, [])]), _table([(1, "F1", 5, [""])])
    assert unmatched(empty, blank, _EVENTS.names).to_pylist() == [{"fid": "F1", "ts": 5}] * 2
    joined, holding = _table([(2, "F1", 6, ["a", ""])]), _table([(2, "F1", 6, ["a\x1f"])])
    assert unmatched(joined, holding, _EVENTS.names).to_pylist() == [{"fid": "F1", "ts": 6}] * 2
    same = _table([(1, "F1", 5, ["a", "b"]), (1, "F1", 5, ["a", "b"])])
    assert unmatched(same, same, _EVENTS.names).num_rows == 0
