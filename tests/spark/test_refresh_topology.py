"""A refresh takes a topology that grows: the differential of ``compute`` run again after the
topology gained a store and a folder and a folder's replica list changed (what ``ingest``'s
topology does as exports name more of the organisation). Each run equals the replay of the log
with the topology as it is then; the runs after the change went on from the one before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pfscope.spark_jobs.model.timeutil import parse_ts
from tests.spark.table_compare import assert_published_equals_replay
from tests.spark.test_refresh import SMALL, Share, compute, said_figures, simulate


def _with_topology(tmp: Path, name: str, topo: dict[str, Any]) -> Path:
    d = tmp / name
    d.mkdir()
    (d / "topology.json").write_text(json.dumps(topo), encoding="utf-8")
    return d


def test_a_topology_that_grows_is_folded_on(spark, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """Before: the topology without its last folder (its events come anyway: a folder the log
    first shows). Then: that folder in it, a new store with no events yet, and the new store on
    another folder's replica list (it lacks all its content: backfill). Refolded from their first
    event: those two folders and the hierarchy (every store is its replica). Last, a store moved
    to a new site and of another version: its folders refolded."""
    data, lines = simulate(tmp_path, "scale", 5, SMALL)
    whole = json.loads((data / "topology.json").read_text(encoding="utf-8"))
    times = sorted(parse_ts(json.loads(line)["ts"]) for line in lines)
    cuts = [times[len(times) // 3], times[2 * len(times) // 3], times[-1]]
    before = json.loads(json.dumps(whole))
    added = before["folders"].pop()
    grown = json.loads(json.dumps(whole))
    site = grown["stores"][0]["site"]
    grown["stores"].append(
        {
            "name": "PFNEW",
            "server": "EXNEW",
            "site": site,
            "version": "2003",
            "preferred_backfill_source": None,
        }
    )
    listed = grown["folders"][0]
    listed["replicas"] = [*listed["replicas"], "PFNEW"]
    # last, a store described anew (its own export, after others' named it): in a new site, of
    # another version
    described = json.loads(json.dumps(grown))
    moved = described["stores"][1]
    described["sites"] = [*described["sites"], "SITE-NEW"]
    moved["site"] = "SITE-NEW"
    moved["version"] = "2000" if moved["version"] != "2000" else "2007"
    t1, t2 = _with_topology(tmp_path, "t1", before), _with_topology(tmp_path, "t2", grown)
    t3 = _with_topology(tmp_path, "t3", described)
    share = Share(tmp_path / "logs", lines)
    out = tmp_path / "out"
    said = []
    for cut, topo in zip(cuts, (t1, t2, t3), strict=True):
        share.grow(cut)
        said.append(compute(topo, share.root, out, capsys))
        assert_published_equals_replay(out, topo, share.root)
    assert said[0] == "full: no earlier run to go on from"
    assert said[1].startswith("incremental: "), said
    assert said[2].startswith("incremental: "), said
    # the two folders and the hierarchy at least (and those with late lines or fresh events)
    assert said_figures(said[1])["folders_refolded"] >= 3, said
    assert {added["fid"], listed["fid"]} <= {f["fid"] for f in grown["folders"]}
