"""Reading a published run: LATEST, filtered reads, run-keyed caching, on the worked example."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.compute as pc
import pytest

from pfscope.app import figures as f
from pfscope.app.data import NoRunError, RunData, empty_frame, find_run, read_table, require_run
from pfscope.app.figures.older_run import older_run_notice
from pfscope.spark_jobs.model.tables import TABLES
from tests.published_runs import HOSTILE_CHILD, HOSTILE_LINES, HOSTILE_PATH


class DictCache:
    """A cache with the get/set interface, recording keys (flask-caching's is exercised by e2e)."""

    def __init__(self) -> None:
        self.store: dict[str, Any] = {}
        self.sets = 0

    def get(self, key: str) -> Any:
        return self.store.get(key)

    def set(self, key: str, value: Any, timeout: int | None = None) -> bool:
        self.sets += 1
        self.store[key] = value
        return True


def test_find_run_follows_latest(we_data: Path, tmp_path: Path) -> None:
    run = find_run(we_data)
    latest = json.loads((we_data / "LATEST").read_text())
    assert run is not None and run.run_id == latest["run_id"] and run.path == we_data / latest["path"]
    assert find_run(tmp_path) is None
    with pytest.raises(NoRunError, match="no published run"):
        require_run(tmp_path)


def test_every_table_reads_with_its_declared_columns(we_data: Path) -> None:
    run = find_run(we_data)
    assert run is not None
    for table, cols in TABLES.items():
        frame = read_table(run, table)
        assert list(frame.columns) == [n for n, _ in cols], table
        for name, kind in cols:
            if kind == "timestamp" and not frame.empty:
                assert str(frame[name].dtype) == "datetime64[ns, UTC]", (table, name)


def test_filtered_reads_return_only_the_rows_asked_for(we_data: Path) -> None:
    run = find_run(we_data)
    assert run is not None
    everything = pd.read_parquet(run.path / "state_history")
    one = read_table(
        run, "state_history", ["observer", "at", "cnset"], {"fid": "1-123", "observer": ["PFS3"]}
    )
    want = everything[(everything["fid"] == "1-123") & (everything["observer"] == "PFS3")]
    assert list(one.columns) == ["observer", "at", "cnset"]
    assert len(one) == len(want) > 0 and set(one["observer"]) == {"PFS3"}
    none = read_table(run, "state_history", filters={"fid": "1-NOPE"})
    assert none.empty and list(none.columns) == [n for n, _ in TABLES["state_history"]]
    not_self = read_table(run, "state_table", ["is_self"], where=pc.field("is_self") == False)  # noqa: E712
    assert not not_self["is_self"].any()


def test_run_data_is_cached_per_run_id(we_data: Path, tmp_path: Path) -> None:
    cache = DictCache()
    data = RunData(require_run(we_data), cache)
    first = data.state_history("1-123")
    sets = cache.sets
    again = data.state_history("1-123")
    assert cache.sets == sets and again.equals(first)
    assert all(k.startswith(f"pfscope:{data.run_id}:") for k in cache.store)
    # a second published run in the same folder: new keys, never the old run's entries
    copy = tmp_path / "runs"
    latest = json.loads((we_data / "LATEST").read_text())
    shutil.copytree(we_data / latest["path"], copy / "runs" / "R2")
    (copy / "LATEST").write_text(json.dumps({"run_id": "R2", "path": "runs/R2"}))
    other = RunData(require_run(copy), cache)
    other.state_history("1-123")
    assert any(k.startswith("pfscope:R2:") for k in cache.store)


def test_folder_breadcrumb_and_hostile_text_unchanged(we_data: Path) -> None:
    data = RunData(require_run(we_data))
    folder = data.folder("1-123")
    assert (
        folder is not None
        and folder["path"] == HOSTILE_PATH
        and folder["replicas"] == ["PFS1", "PFS2", "PFS3"]
    )
    assert data.folder("1-999") is None
    crumbs = data.breadcrumb(HOSTILE_CHILD["fid"])
    assert [fid for fid, _ in crumbs] == ["1-1", "1-123", HOSTILE_CHILD["fid"]]
    assert crumbs[-1][1] == HOSTILE_CHILD["path"]
    assert sorted(data.rejects()["text"]) == sorted(HOSTILE_LINES)
    assert data.summary()["rejected"] == len(HOSTILE_LINES)


def test_figures_on_the_worked_example(we_data: Path) -> None:
    """Seed 004 from the published tables: PFS3's entry, its request, and the final matrix."""
    data = RunData(require_run(we_data))
    entries = data.backfill_entries(fid="1-123")
    pfs3 = entries[entries["observer"] == "PFS3"].sort_values("opened_at").iloc[0]
    assert pfs3["cnset_opened"] == "PFS1:12-16;PFS2:21-28"
    # replayed at the moment PFS3 opened its entry: its own row lacks exactly those CNs
    m = f.who_knows_what(f.cells_at(data.state_history("1-123"), pfs3["opened_at"])).set_index(
        ["observer", "subject"]
    )
    assert m.loc[("PFS3", "PFS3"), "lacks_cnset"] == "PFS1:12-16;PFS2:21-28"
    assert m.loc[("PFS1", "PFS1"), "state"] == "owned"
    # as of the run: the matrix equals the published state table, and lag matches lag_count
    now = f.who_knows_what(f.cells_now(data.state_table(fid="1-123"))).set_index(["observer", "subject"])
    st = data.state_table(fid="1-123").set_index(["observer", "subject"])
    for key, row in st.iterrows():
        assert now.loc[key, "cnset"] == row["cnset"]
        if not row["is_self"]:
            assert now.loc[key, "lag_count"] == row["lag_count"]
    marks = f.entry_timeline_marks(entries, data.backfill_requests(fid="1-123"))
    assert {"opened", "request"} <= set(marks["event"])
    cands = f.explain_candidates(data.backfill_candidates(pfs3["entry_id"], 1))
    assert cands["decided_by"].iloc[0] == "first in the sort order"
    assert set(cands["candidate"]) <= {"PFS1", "PFS2"}


def test_empty_frame_has_typed_times() -> None:
    frame = empty_frame("backfill_entries")
    assert str(frame["opened_at"].dtype) == "datetime64[ns, UTC]" and frame.empty


def test_a_run_published_before_store_periods_and_the_reality_columns_still_loads(
    we_data: Path, tmp_path: Path
) -> None:
    """An older version's run: no ``store_periods`` table, no ``replicas.at_risk_count`` and the
    other columns of what is so. The table reads empty, the columns as nulls; nothing fails."""
    import pyarrow.parquet as pq

    latest = json.loads((we_data / "LATEST").read_text())
    old = tmp_path / "runs"
    shutil.copytree(we_data / latest["path"], old / "runs" / "OLD")
    (old / "LATEST").write_text(json.dumps({"run_id": "OLD", "path": "runs/OLD"}))
    shutil.rmtree(old / "runs" / "OLD" / "store_periods")
    shutil.rmtree(old / "runs" / "OLD" / "transits")
    reality = [
        "really_unique_cnset",
        "really_unique_count",
        "at_risk_cnset",
        "at_risk_count",
        "lacks_cnset",
        "lacks_count",
        "not_told_cnset",
        "not_told_count",
    ]
    for part in (old / "runs" / "OLD" / "replicas").glob("*.parquet"):
        table = pq.read_table(part)
        pq.write_table(table.drop_columns([c for c in reality if c in table.column_names]), part)
    data = RunData(require_run(old))
    periods = data.store_periods()
    assert periods.empty and list(periods.columns) == [n for n, _ in TABLES["store_periods"]]
    summary = data.replica_summary()
    assert not summary.empty and summary["at_risk_count"].isna().all()
    assert list(data.replicas(fid="1-123").columns) == [n for n, _ in TABLES["replicas"]]
    heads = {h.key: h.count for h in f.headline_counts(data.stores(), summary, data.open_entries(), 0)}
    assert heads["at-risk"] == 0
    assert f.outage_rows(periods, data.summary()["as_of"]).empty
    assert data.transits().empty and list(data.transits().columns) == [n for n, _ in TABLES["transits"]]
    missing = data.missing()
    assert missing["store_periods"] == [n for n, _ in TABLES["store_periods"]]
    assert missing["replicas"] == reality and set(missing) == {"store_periods", "transits", "replicas"}
    notice = older_run_notice(missing)
    assert notice is not None and "content at risk" in notice and "not as zero" in notice


def test_a_run_of_this_version_lacks_nothing(we_data: Path) -> None:
    """Every declared table and column is in a fresh run (empty tables keep their schema), so
    no page says the run is an older one's."""
    data = RunData(require_run(we_data))
    assert data.missing() == {}
    assert older_run_notice({}) is None


def test_store_periods_newest_first(we_data: Path) -> None:
    data = RunData(require_run(we_data))
    periods = data.store_periods()
    assert list(periods.columns) == [n for n, _ in TABLES["store_periods"]]
    assert list(periods["down_at"]) == sorted(periods["down_at"], reverse=True)
