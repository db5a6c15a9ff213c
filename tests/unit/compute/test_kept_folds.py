"""``compute --engine python`` folds on from kept fold states (``kept_folds``): hour after hour of a
share whose servers' exports end at their own times (lines stamped before the previous as-of in
every hour), with an export rewritten, a store going down in the past, an earlier as-of and a
topology change on the way, every run equals the replay of the whole log as it is then."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from pfscope.app.cli import main
from pfscope.spark_jobs.compute.kept_folds import CHECKPOINTS, HOLDS, KEPT
from pfscope.spark_jobs.model.timeutil import HOUR, format_ts, parse_ts
from pfscope.spark_jobs.published.runs import read_latest
from pfscope.spark_jobs.simulator import build, run_scenario
from tests.spark.table_compare import assert_published_equals_replay

SCALE = {"stores": 5, "sites": 2, "folders": 10, "replicas": 3, "days": 3, "changes_per_day": 12}
HOURS = 6


class Share:
    """A simulated organisation's log as the exports of its stores, each hour every store's next
    export: its lines up to a cut of its own, a few hours of log time behind the latest."""

    def __init__(self, root: Path, seed: int) -> None:
        scenario = build("scale", seed, SCALE)
        buf = io.StringIO()
        run_scenario(scenario, buf, seed)
        self.lines = [
            (parse_ts(json.loads(t)["ts"]), json.loads(t)["store"], t) for t in buf.getvalue().splitlines()
        ]
        self.stores = sorted({s for _, s, _ in self.lines})
        self.root, self.events = root, root / "events"
        self.events.mkdir(parents=True)
        (root / "topology.json").write_text(json.dumps(scenario.topology.to_json()))
        self.rng = random.Random(seed)
        self.done = dict.fromkeys(self.stores, -(1 << 62))  # each store's last exported time
        self.first, self.last = self.lines[0][0], max(t for t, _, _ in self.lines)

    def hour(self, k: int) -> None:
        """Hour ``k`` of ``HOURS``: each store's export up to its own cut (the last hour: all)."""
        cut = self.first + (self.last - self.first) * (HOURS + k) // (2 * HOURS)
        for store in self.stores:
            lag = 0 if k == HOURS else self.rng.randrange(0, 6) * HOUR
            mine = [t for ts, s, t in self.lines if s == store and self.done[store] < ts <= cut - lag]
            self.done[store] = max(self.done[store], cut - lag)
            if mine:
                (self.events / f"h{k:02d}-{store}.jsonl").write_text("\n".join(mine) + "\n")


def _compute(share: Share, out: Path, capsys: pytest.CaptureFixture[str], as_of: str = "") -> dict[str, Any]:
    inputs = ["--topology", str(share.root / "topology.json"), "--events", str(share.events)]
    more = ["--as-of", as_of] if as_of else []
    status = main(["compute", "--engine", "python", *inputs, "--out", str(out), *more])
    said = capsys.readouterr().out.splitlines()
    assert status == 0, said
    assert_published_equals_replay(
        out, share.root, events=share.events, as_of=parse_ts(as_of) if as_of else None
    )
    latest = read_latest(out)
    assert latest is not None
    run = out / str(latest["path"])
    summary: dict[str, Any] = pq.read_table(run / "summary").to_pylist()[0]
    assert said[0] == latest["refresh"]
    holds = pq.read_table(run / HOLDS)
    assert len(set(holds["at"].to_pylist())) <= KEPT
    assert len(list((run / CHECKPOINTS).glob("*"))) <= KEPT - 1
    as_of = json.loads((run / "_state" / "manifest.json").read_text())["as_of"]
    return {**summary, "line": said[0], "run": run, "as_of": as_of}


@pytest.mark.parametrize("seed", [3, 11, 29])
def test_hours_of_late_exports_fold_on_and_equal_the_replay(
    tmp_path: Path, seed: int, capsys: pytest.CaptureFixture[str]
) -> None:
    share, out = Share(tmp_path / "log", seed), tmp_path / "runs"
    share.hour(1)
    assert _compute(share, out, capsys)["refresh"] == "full"
    went_on = from_start = 0
    for k in range(2, HOURS + 1):
        share.hour(k)
        got = _compute(share, out, capsys)
        assert got["refresh"] == "incremental", got["line"]
        went_on += got["folders_refolded"] + got["folders_carried"] - got["folders_from_start"]
        from_start += got["folders_from_start"]
        assert got["line"].startswith(f"incremental: {got['lines_new']:,} new lines, "), got["line"]
    assert went_on and from_start  # the hours did both: folded on, and from the first event (late lines)


def test_what_an_hour_cannot_fold_on_from_is_folded_from_the_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A rewritten export, a store down in the past, an earlier as-of, a topology change: the
    folders they reach fold from their first event (or from an older state that still holds),
    and every run equals the replay."""
    share, out = Share(tmp_path / "log", 7), tmp_path / "runs"
    for k in range(1, 4):
        share.hour(k)
        _compute(share, out, capsys)
    as_ofs = sorted(set(pq.read_table(_latest(out) / HOLDS)["at"].to_pylist()))
    assert len(as_ofs) == 3

    # an export rewritten with one of its changes otherwise (its lines in their places): that
    # folder's states no longer hold
    first = sorted(share.events.glob("h01-*.jsonl"))[0]
    lines = first.read_text().splitlines()
    at = max(i for i, t in enumerate(lines) if json.loads(t)["kind"] == "change")
    change = json.loads(lines[at])
    fid = change["fid"]
    lines[at] = json.dumps({**change, "bytes": (change.get("bytes") or 0) + 1})
    first.write_text("\n".join(lines) + "\n")
    got = _compute(share, out, capsys)
    assert got["refresh"] == "incremental" and got["folders_from_start"] == 1
    holds = pq.read_table(got["run"] / HOLDS).to_pylist()
    assert {h["at"] for h in holds if h["fid"] == fid} == {got["as_of"]}  # only its own state now

    # a store down, stamped between the two latest kept as-ofs: the older one still holds
    store = share.stores[0]
    when = (as_ofs[1] + as_ofs[2]) // 2
    down = {"ts": format_ts(when), "store": store, "kind": "store_status", "status": "down"}
    (share.events / "h09-late.jsonl").write_text(json.dumps(down) + "\n")
    older = {h["fid"] for h in holds if h["at"] < when}  # states stamped before the line
    got = _compute(share, out, capsys)
    assert got["refresh"] == "incremental" and older
    assert got["folders_from_start"] == len({h["fid"] for h in holds} - older)

    # an as-of before the published run's: only states at or before it
    got = _compute(share, out, capsys, as_of=format_ts(as_ofs[1]))
    assert got["refresh"] == "incremental"

    # a folder's replicas in the topology changed: that folder from its first event
    topology = json.loads((share.root / "topology.json").read_text())
    changed = topology["folders"][0]
    changed["replicas"] = changed["replicas"][:2]
    (share.root / "topology.json").write_text(json.dumps(topology))
    got = _compute(share, out, capsys)
    assert got["refresh"] == "incremental" and got["folders_from_start"] == 1


def _latest(out: Path) -> Path:
    latest = read_latest(out)
    assert latest is not None
    return out / str(latest["path"])


def test_a_damaged_state_or_table_is_folded_again_never_a_failed_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Kept states torn: the folders go on from an older state that can be read (the torn one is
    kept no further); a final table torn: every folder from its first event. Each run equals the
    replay."""
    share, out = Share(tmp_path / "log", 13), tmp_path / "runs"
    for k in range(1, 4):
        share.hour(k)
        _compute(share, out, capsys)
    torn_at = json.loads((_latest(out) / "_state" / "manifest.json").read_text())["as_of"]
    for f in (_latest(out) / "_state" / "folds").glob("*.parquet"):
        f.write_bytes(f.read_bytes()[:50])
    share.hour(4)
    got = _compute(share, out, capsys)
    assert got["refresh"] == "incremental"  # from the older states
    assert torn_at not in set(pq.read_table(got["run"] / HOLDS)["at"].to_pylist())
    for f in (got["run"] / "state_history").glob("*.parquet"):
        f.write_bytes(b"not parquet")
    share.hour(5)
    assert _compute(share, out, capsys)["refresh"] == "full"
