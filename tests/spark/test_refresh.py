"""A refresh equals a full run of the same input: the differential of ``compute`` run again on a
log that grew.

Simulated logs are split into one file per store (as each server's log grows) and fed to
``pfscope compute`` in steps: each step appends every line stamped up to a cut time (so a send
may be read in one step and its receive in the next), some steps hold a store's lines back until
a later step (late data), leave lines after an ``--as-of`` or rewrite a file read before, and
replica changes and an outage fall after cuts. Every reason for a full run is
``tests/unit/spark_jobs/test_state.py``'s. After every step, every published table equals the replay of the files as
they are then (the replay is the oracle the full run is held to), and the run said whether it
went on from the previous one or read everything, and why.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from pfscope.app.cli import main
from pfscope.app.data import RunData, require_run
from pfscope.app.metrics import exposition
from pfscope.spark_jobs.compute import writing
from pfscope.spark_jobs.compute.refresh import open_entries
from pfscope.spark_jobs.model.events import R_CN_NOT_INCREASING
from pfscope.spark_jobs.model.forecast.outcome import WITHIN
from pfscope.spark_jobs.model.timeutil import DAY, format_ts, parse_ts
from pfscope.spark_jobs.published.runs import read_latest
from tests.spark.table_compare import RecordOracle, assert_published_equals_replay

SMALL = [
    "--stores",
    "5",
    "--sites",
    "2",
    "--folders",
    "6",
    "--replicas",
    "3",
    "--days",
    "2",
    "--changes-per-day",
    "8",
]


def simulate(tmp: Path, scenario: str, seed: int, options: list[str]) -> tuple[Path, list[str]]:
    data = tmp / "sim"
    assert (
        main(
            [
                "simulate",
                "--scenario",
                scenario,
                "--out",
                str(data),
                "--seed",
                str(seed),
                "--no-progress",
                *options,
            ]
        )
        == 0
    )
    return data, (data / "events.jsonl").read_text(encoding="utf-8").splitlines()


def by_store(lines: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in lines:
        out.setdefault(json.loads(line)["store"], []).append(line)
    return out


def stamp(line: str) -> int:
    return parse_ts(json.loads(line)["ts"])


def compute(data: Path, logs: Path, out: Path, capsys, *extra: str) -> str:  # type: ignore[no-untyped-def]
    """Run ``pfscope compute``; its one line on how it went about it."""
    assert (
        main(
            [
                "compute",
                "--topology",
                str(data / "topology.json"),
                "--events",
                str(logs),
                "--out",
                str(out),
                "--master",
                "local[2]",
                "--partitions",
                "2",
                "--keep",
                "2",
                *extra,
            ]
        )
        == 0
    )
    said = [
        line for line in capsys.readouterr().out.splitlines() if line.startswith(("full:", "incremental:"))
    ]
    assert len(said) == 1, said
    return said[0]


class Share:
    """A folder of per-store logs that grows step by step."""

    def __init__(self, root: Path, lines: list[str]):
        self.root = root
        root.mkdir()
        self.left = by_store(lines)  # each store's lines not written yet, in time order

    @property
    def stores(self) -> list[str]:
        return sorted(self.left)

    def grow(self, until: int, *, hold: dict[str, tuple[str, ...]] | None = None) -> int:
        """Append each store's lines stamped up to ``until``, but those of the kinds ``hold``
        names for a store (they stay for a later step: a late part of that store's export)."""
        hold = hold or {}
        added = 0
        for store, lines in self.left.items():
            write, keep = [], []
            for line in lines:
                rec = json.loads(line)
                if stamp(line) > until or rec["kind"] in hold.get(store, ()):
                    keep.append(line)
                else:
                    write.append(line)
            if write:
                with open(self.root / f"{store}.jsonl", "a", encoding="utf-8") as fh:
                    fh.write("".join(line + "\n" for line in write))
            self.left[store] = keep
            added += len(write)
        return added


def small_final_files(out: Path) -> dict[str, int]:
    """Per table of the published run, the runs its final files below ``SMALL_FILE_BYTES`` come from."""
    run = out / str(read_latest(out)["path"])  # type: ignore[index]
    return {
        d.name: len(
            {writing.run_of(f) for f in d.glob("final-*") if f.stat().st_size < writing.SMALL_FILE_BYTES}
        )
        for d in run.rglob("*")
        if d.is_dir() and any(d.glob("final-*"))
    }


def test_ten_refreshes_in_a_row_equal_the_replay(spark, tmp_path: Path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Every step equals the replay of the files as they are. On the way: lines left waiting by an
    ``--as-of`` in the middle, then folded by a refresh of nothing new; part of one store's export
    a step late (its folders refolded); all of another's a step late (the other stores' receives
    of its messages were read before their sends, and rejected as never sent: judged again, the
    receives accepted now and their folders refolded); a file rewritten; last,
    nothing new three days on (the folders with no new event and no open entry carried as they
    were, their next status times brought to the as-of). Small final files are compacted once from
    three runs (24 in use), so compaction runs on the way too."""
    monkeypatch.setattr(writing, "MAX_FINAL_FILES", 3)
    data, lines = simulate(tmp_path, "scale", 3, SMALL)
    times = sorted(stamp(line) for line in lines)
    rng = random.Random(3)
    cuts = [*sorted(rng.sample(times[len(times) // 10 : -1], 8)), times[-1]]
    share = Share(tmp_path / "logs", lines)
    out = tmp_path / "out"
    stores = share.stores
    recs = [json.loads(line) for line in lines]
    sent = {r["msg"]: (r["store"], parse_ts(r["ts"])) for r in recs if r["kind"] == "send"}
    received = [
        sent[r["msg"]][0]
        for r in recs
        if r["kind"] == "receive" and cuts[5] < sent[r["msg"]][1] and parse_ts(r["ts"]) <= cuts[6]
    ]
    # whose messages, sent and received in that step, the others receive most
    muted = max((s for s in stores if s != stores[0]), key=received.count)
    assert received.count(muted) > 0
    middle = (cuts[0] + cuts[1]) // 2
    steps: list[tuple[int | None, dict[str, tuple[str, ...]], list[str]]] = [
        (cuts[0], {}, []),
        (cuts[1], {}, ["--as-of", format_ts(middle)]),  # lines after the as-of wait
        (None, {}, []),  # nothing new: the waiting lines are folded
        (cuts[2], {}, []),
        (cuts[3], {stores[0]: ("change", "receive")}, []),  # part of an export held back...
        (cuts[4], {}, []),  # ... arrives late: its folders refolded
        (cuts[6], {muted: ("change", "send", "receive", "replicas")}, []),  # all of an export held back...
        (cuts[7], {}, []),  # ... arrives late, after the receives of its messages: judged again
        (None, {}, []),  # a file rewritten
        (cuts[8], {}, []),
        # nothing new, three days on: open entries' timers fire; every status message falls due
        # (a folder carried as it was must still lose its next status time)
        (None, {}, ["--as-of", format_ts(times[-1] + 3 * DAY)]),
    ]
    said = []
    record = RecordOracle()
    judged_rows: list[dict[str, Any]] = []
    for step, (cut, hold, extra) in enumerate(steps):
        if cut is not None:
            share.grow(cut, hold=hold)
        if step == 8:
            first = sorted(share.root.iterdir())[0]
            text = first.read_bytes()
            first.write_bytes(text[:10] + (b"X" if text[10:11] != b"X" else b"Y") + text[11:])
        said.append(compute(data, share.root, out, capsys, *extra))
        as_of = middle if step == 1 else parse_ts(extra[1]) if extra else None
        expected = assert_published_equals_replay(out, data, share.root, as_of)
        judged_rows = record.check(out, expected)  # the previous run's forecast, judged by this one
        if step == 7:  # the figures of its one line are the summary's and /metrics'
            figures = said_figures(said[-1])
            summary = RunData(require_run(out)).summary()
            assert {k: summary[k] for k in figures} == figures, (said[-1], summary)
            metrics = exposition(RunData(require_run(out))).decode()
            for name, value in figures.items():
                assert f"pfscope_run_{name} {float(value)}" in metrics, (name, metrics)
        if said[-1].startswith("incremental"):  # kept few: from at most as many runs as compaction allows
            assert max(small_final_files(out).values()) <= 3
    # the same files and as-of once more: the run published is what a refresh would publish again,
    # so none is (no Spark job), and it is said which run stays
    pointer, runs = (out / "LATEST").read_bytes(), sorted((out / "runs").iterdir())
    again = compute(data, share.root, out, capsys, *steps[-1][2])
    latest = read_latest(out)
    assert latest is not None
    assert (
        again
        == f"incremental: nothing new since run {latest['run_id']} (as of {latest['as_of']}): it stays published"
    )
    assert (out / "LATEST").read_bytes() == pointer and sorted((out / "runs").iterdir()) == runs
    assert said[0] == "full: no earlier run to go on from"
    assert said[2].startswith("incremental: 0 new lines"), said
    assert said[7].endswith(" earlier rejects judged again"), said
    # read again whole, it would take back lines whose messages the other stores' files share
    assert said[8].startswith(f"full: {first} was rewritten since it was read, and "), said
    assert " shares a message or a store's changes with it" in said[8], said
    # every other step went on from the one before, the late lines of steps 5 and 7 included
    assert [i for i, line in enumerate(said) if line.startswith("incremental: ")] == [
        1,
        2,
        3,
        4,
        5,
        6,
        7,
        9,
        10,
    ], said
    latest = read_latest(out)
    assert latest is not None and latest["refresh"] == said[-1]
    # the record is not vacuous: forecasts of several runs, judged, some of them come true
    assert len({r["made_at"] for r in judged_rows}) >= 3, judged_rows
    assert {r["outcome"] for r in judged_rows} >= {WITHIN}, judged_rows


def said_figures(line: str) -> dict[str, int]:
    """An incremental run's figures, by the summary's names, from its one line."""
    m = re.fullmatch(
        r"incremental: ([\d,]+) new lines, ([\d,]+) folders refolded(?: \(([\d,]+) from their first event\))?,"
        r" ([\d,]+) carried over(?:, ([\d,]+) earlier rejects judged again)?",
        line,
    )
    assert m, line
    names = ("lines_new", "folders_refolded", "folders_from_start", "folders_carried", "lines_rejudged")
    return {n: int((v or "0").replace(",", "")) for n, v in zip(names, m.groups(), strict=True)}


def final_files(out: Path, table: str) -> set[str]:
    run = out / str(read_latest(out)["path"])  # type: ignore[index]
    return {f.name for f in (run / table).glob("final-*")}


def test_lines_stamped_at_the_previous_as_of(spark, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """A line of the previous as-of's own second, read by the next refresh (the next export's
    lines of that second: the usual case), comes after every line read before at that time: its
    folder folds on from its state, and no final file is written again. Unless a request fell
    due at that very time: the previous run made it before the line, a full run after, so that
    folder is folded again from its first event. Last, a new line that would take back a line
    accepted before: a full run. Each equals the replay."""
    data, lines = simulate(tmp_path, "worked-example", 1, [])
    recs = [json.loads(line) for line in lines]
    # a store's backfill request, sent when its entry fell due (the rules' own time) ...
    asked = next(i for i, r in enumerate(recs) if r.get("type") == "backfill_request")
    t_asked = stamp(lines[asked])
    # ... and a change well before it
    change = next(
        i
        for i in range(asked - 1, 0, -1)
        if recs[i]["kind"] == "change" and stamp(lines[i]) < t_asked - 3_600_000_000
    )
    t_change = stamp(lines[change])
    logs = tmp_path / "logs"
    logs.mkdir()
    written: set[int] = set()

    def write(until: int, *, but: int) -> None:
        for i, line in enumerate(lines):
            if i not in written and i != but and stamp(line) <= until:
                with open(logs / f"{recs[i]['store']}.jsonl", "a", encoding="utf-8") as fh:
                    fh.write(line + "\n")
                written.add(i)

    out = tmp_path / "out"
    write(t_change, but=change)
    assert compute(data, logs, out, capsys, "--as-of", format_ts(t_change)).startswith("full:")
    assert_published_equals_replay(out, data, logs, t_change)
    run = out / str(read_latest(out)["path"])  # type: ignore[index]
    assert (recs[change]["fid"], t_change) not in open_entries(run)

    history = final_files(out, "state_history")
    write(t_asked, but=asked)  # the change arrives: stamped at the previous as-of
    assert compute(data, logs, out, capsys, "--as-of", format_ts(t_asked)).startswith("incremental:")
    assert_published_equals_replay(out, data, logs, t_asked)
    assert history <= final_files(out, "state_history")  # folded on: nothing written again
    run = out / str(read_latest(out)["path"])  # type: ignore[index]
    assert (recs[asked]["fid"], t_asked) in open_entries(run)  # the rules made the request then

    history = final_files(out, "state_history")
    write(stamp(lines[-1]), but=-1)  # the request line arrives, stamped at the previous as-of
    assert compute(data, logs, out, capsys).startswith("incremental:")
    assert_published_equals_replay(out, data, logs)
    assert not history <= final_files(out, "state_history")  # its folder folded again

    # a store's change numbered below its earlier ones, and a repeat of an earlier change: judged
    # against the changes read before (of those before the new lines' time, only the highest
    # number is read again), a reject naming that change, and a duplicate
    files = sorted(logs.iterdir())
    changes = [
        json.loads(line)
        for line in files[1].read_text(encoding="utf-8").splitlines()
        if json.loads(line)["kind"] == "change"
    ]
    low = {**changes[-1], "ts": format_ts(stamp(lines[-1]) + 1_000_000), "cn": changes[0]["cn"]}
    with open(files[1], "a", encoding="utf-8") as fh:
        fh.write(json.dumps(low) + "\n")
    with open(files[2], "a", encoding="utf-8") as fh:
        fh.write(
            next(
                line
                for line in files[2].read_text(encoding="utf-8").splitlines()
                if json.loads(line)["kind"] == "change"
            )
            + "\n"
        )
    said = compute(data, logs, out, capsys)
    assert said.startswith("incremental: 2 new lines"), said
    assert_published_equals_replay(out, data, logs)
    rejects = pq.read_table(out / str(read_latest(out)["path"]) / "rejects").to_pylist()  # type: ignore[index]
    assert [(r["reason"], r["conflict_source"]) for r in rejects if r["source"] == str(files[1])] == [
        (R_CN_NOT_INCREASING, str(files[1]))
    ], rejects

    # a repeat of an accepted change, appended to a file that sorts before the change's own: the
    # earlier line would become the repeat, which a refresh does not take back (a full run, why)
    repeat = next(
        line
        for line in files[1].read_text(encoding="utf-8").splitlines()
        if json.loads(line)["kind"] == "change"
    )
    with open(files[0], "a", encoding="utf-8") as fh:
        fh.write(repeat + "\n")
    said = compute(data, logs, out, capsys)
    assert said.startswith("full: new lines change the verdict on lines accepted before (1: "), said
    assert_published_equals_replay(out, data, logs)
