"""``compute --engine python`` parses only the files the previous run did not (``kept_lines``): every
run still equals the replay of the log as it is then, whatever changed between runs."""

from __future__ import annotations

import io
import json
import pickle
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pfscope.app.cli import main
from pfscope.spark_jobs.compute.kept_lines import PARSED
from pfscope.spark_jobs.model.timeutil import parse_ts
from pfscope.spark_jobs.published.runs import read_latest
from pfscope.spark_jobs.simulator import build, run_scenario
from tests.spark.table_compare import assert_published_equals_replay

SCALE = {"stores": 5, "sites": 2, "folders": 8, "replicas": 3, "days": 2, "changes_per_day": 10}
NOISE = [
    "{not json",
    '{"ts": "2026-10-01T00:00:00Z", "kind": "teleport"}',
    '{"ts": "2026-10-01T00:00:00Z", "store": "%s", "kind": "receive", "msg": "never-sent"}',
    # a store no topology names yet: accepted once one does
    '{"ts": "2026-10-01T00:00:00Z", "store": "PF0099", "kind": "store_status", "status": "down"}',
]


def _log(tmp: Path) -> tuple[Path, list[str]]:
    """A simulated organisation's log over four files, the second with noise, a line that is not
    UTF-8 and repeated lines; the lines it holds back for later runs."""
    scenario = build("scale", 5, SCALE)
    buf = io.StringIO()
    run_scenario(scenario, buf, 5)
    lines = buf.getvalue().splitlines()
    store = next(iter(scenario.topology.stores))
    (tmp / "topology.json").write_text(json.dumps(scenario.topology.to_json()))
    events = tmp / "events"
    events.mkdir()
    shown, later = lines[: len(lines) * 3 // 4], lines[len(lines) * 3 // 4 :]
    quarter = len(shown) // 4
    for i in range(4):
        part = shown[i * quarter : (i + 1) * quarter if i < 3 else None]
        if i == 1:
            part = [*part, *(n.replace("%s", store) for n in NOISE), *part[:3]]
        (events / f"b{i}.jsonl").write_text("\n".join(part) + "\n")
    with (events / "b1.jsonl").open("ab") as fh:
        fh.write(b'{"ts": "\xff"}\n')
    return tmp, later


def _compute(out: Path, log: Path, capsys: pytest.CaptureFixture[str], *flags: str, as_of: str = "") -> str:
    inputs = ["--topology", str(log / "topology.json"), "--events", str(log / "events")]
    more = ["--as-of", as_of] if as_of else []
    status = main(["compute", "--engine", "python", *inputs, "--out", str(out), *more, *flags])
    said = capsys.readouterr().out.splitlines()
    assert status == 0, said
    assert_published_equals_replay(out, log, events=log / "events", as_of=parse_ts(as_of) if as_of else None)
    return said[0]


def _run(out: Path) -> Path:
    latest = read_latest(out)
    assert latest is not None
    return out / str(latest["path"])


def _pickle_of(run: Path, name: str) -> Path:
    """The pickle that keeps the lines of the file ``name``."""
    for p in (run / PARSED).glob("*.pickle"):
        if Path(pickle.loads(p.read_bytes())["about"]["source"]).name == name:
            return p
    raise AssertionError(f"no pickle of {name} in {run}")


def _linked(out: Path, before: Path) -> set[str]:
    """The files whose lines the published run took as the run ``before`` parsed them: their
    pickles are the same file (linked, not copied)."""
    earlier = {p.stat().st_ino for p in (before / PARSED).glob("*.pickle")}
    run = _run(out)
    pickles = list((run / PARSED).glob("*.pickle"))
    return {
        Path(pickle.loads(p.read_bytes())["about"]["source"]).name
        for p in pickles
        if p.stat().st_ino in earlier
    }


FIRST = "full: the python engine replays the whole log (--engine python)"


def test_a_run_parses_only_what_changed_and_equals_the_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log, later = _log(tmp_path)
    events, out = log / "events", tmp_path / "runs"
    assert _compute(out, log, capsys) == FIRST
    first = _run(out)
    assert len(list((first / PARSED).glob("*.pickle"))) == 4
    summary = pq.read_table(first / "summary").to_pylist()[0]
    assert summary["rejected"] == len(NOISE) + 1 and summary["duplicates"] == 3  # the case holds them

    # a file grown, a new one, a pickle torn, one of another shape: only the last file is kept,
    # though it is written anew with the same bytes, as ingest writes its events folder each run
    same = events / "b3.jsonl"
    (events / "b3.new").write_bytes(same.read_bytes())
    (events / "b3.new").replace(same)
    with (events / "b2.jsonl").open("a") as fh:
        fh.write("\n".join(later[:10]) + "\n")
    (events / "b4.jsonl").write_text("\n".join(later[10:40]) + "\n")
    torn, other = _pickle_of(first, "b0.jsonl"), _pickle_of(first, "b1.jsonl")
    torn.write_bytes(torn.read_bytes()[:100])
    about = pickle.loads(other.read_bytes())["about"]
    other.write_bytes(pickle.dumps({"about": about, "items": [1]}))
    said = _compute(out, log, capsys)
    assert _linked(out, first) == {"b3.jsonl"}
    second = _run(out)
    assert len(list((second / PARSED).glob("*.pickle"))) == 5
    parsed = sum(len((events / f"b{i}.jsonl").read_bytes().splitlines()) for i in (0, 1, 2, 4))
    assert said.startswith(f"incremental: {parsed:,} new lines, "), said  # the lines of the files parsed

    # nothing changed but the as-of: every file as parsed
    _compute(out, log, capsys, as_of="2026-10-02T12:00:00Z")
    assert _linked(out, second) == {f"b{i}.jsonl" for i in range(5)}

    # a topology whose folders change keeps the lines; one with another store parses them again
    topology = json.loads((log / "topology.json").read_text())
    topology["folders"][0]["replicas"] = topology["folders"][0]["replicas"][:2]
    (log / "topology.json").write_text(json.dumps(topology))
    before = _run(out)
    _compute(out, log, capsys)
    assert _linked(out, before) == {f"b{i}.jsonl" for i in range(5)}
    topology["stores"].append({**topology["stores"][0], "name": "PF0099", "server": "EX0099"})
    (log / "topology.json").write_text(json.dumps(topology))
    before = _run(out)
    assert _compute(out, log, capsys) == FIRST  # and no fold state holds: another organisation
    assert not _linked(out, before)
    assert pq.read_table(_run(out) / "summary").to_pylist()[0]["rejected"] == len(NOISE)  # PF0099's line

    # a file that sorts first moves every other file's lines in the input order: all parsed again
    (events / "a.jsonl").write_text("\n".join(later[40:]) + "\n")
    before = _run(out)
    _compute(out, log, capsys)
    assert not _linked(out, before)

    # --full parses every file again, and folds every folder from its first event
    with (events / "b4.jsonl").open("a") as fh:
        fh.write(later[-1] + "\n")
    before = _run(out)
    assert _compute(out, log, capsys, "--full") == FIRST
    assert not _linked(out, before)
