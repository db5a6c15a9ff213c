"""A refresh equals a full run of the same input: the differential of ``compute`` run again on a
log that grew.

Simulated logs are split into one file per store (as each server's log grows) and fed to
``pfscope compute`` in steps: each step appends every line stamped up to a cut time (so a send
may be read in one step and its receive in the next), some steps add a file, hold a store's lines
back until a later step (late data), rewrite a file read before, or bring replica changes and
outages after the cut. After every step, every published table equals the replay of the files as
they are then (the replay is the oracle the full run is held to), and the run said whether it
went on from the previous one or read everything, and why.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from app.cli import main
from spark_jobs.model.timeutil import format_ts, parse_ts
from spark_jobs.publish import read_latest
from tests.spark.published import assert_published_equals_replay

SMALL = ["--stores", "5", "--sites", "2", "--folders", "6", "--replicas", "3", "--days", "2",
         "--changes-per-day", "8"]


def simulate(tmp: Path, scenario: str, seed: int, options: list[str]) -> tuple[Path, list[str]]:
    data = tmp / "sim"
    assert main(["simulate", "--scenario", scenario, "--out", str(data), "--seed", str(seed), "--no-progress",
                 *options]) == 0
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
    assert main(["compute", "--topology", str(data / "topology.json"), "--events", str(logs), "--out", str(out),
                 "--master", "local[2]", "--partitions", "2", "--keep", "2", *extra]) == 0
    said = [line for line in capsys.readouterr().out.splitlines() if line.startswith(("full:", "incremental:"))]
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


def test_ten_refreshes_in_a_row_equal_the_replay(spark, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    data, lines = simulate(tmp_path, "scale", 3, SMALL)
    times = sorted(stamp(line) for line in lines)
    rng = random.Random(3)
    cuts = [*sorted(rng.sample(times[len(times) // 10:-1], 9)), times[-1]]
    share = Share(tmp_path / "logs", lines)
    out = tmp_path / "out"
    stores = share.stores
    # step 4 holds back one store's changes and receives (they arrive a step late: they refold
    # the folders they reach); step 7 holds back all of another store's lines (then the other
    # stores' receives of its messages, read before, were receives of messages never sent)
    recs = [json.loads(line) for line in lines]
    sent = {r["msg"]: (r["store"], parse_ts(r["ts"])) for r in recs if r["kind"] == "send"}
    received = [sent[r["msg"]][0] for r in recs if r["kind"] == "receive"
                and cuts[6] < sent[r["msg"]][1] and parse_ts(r["ts"]) <= cuts[7]]
    # whose messages, sent and received in step 7, the others receive most
    muted = max((s for s in stores if s != stores[0]), key=received.count)
    assert received.count(muted) > 0
    hold = {4: {stores[0]: ("change", "receive")}, 7: {muted: ("change", "send", "receive", "replicas")}}
    said = []
    for step, cut in enumerate(cuts):
        share.grow(cut, hold=hold.get(step))
        said.append(compute(data, share.root, out, capsys))
        assert_published_equals_replay(out, data, share.root)
    assert said[0] == "full: no earlier run to go on from"
    assert said[8].startswith("full: new lines change the verdict on "), said
    # every other step went on from the one before, the late lines of step 5 included
    assert [i for i, line in enumerate(said) if line.startswith("incremental: ")] == [1, 2, 3, 4, 5, 6, 7, 9], said
    latest = read_latest(out)
    assert latest is not None and latest["refresh"] == said[-1]


def test_a_refresh_of_nothing_new_then_of_lines_waiting_after_an_as_of(spark, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """What only a run shows (every reason for a full run is ``tests/unit/spark_jobs/test_state.py``'s):
    a refresh with no new line, after an ``--as-of`` in the middle left lines read but not
    applied, which it folds; a rewritten file read in full; a refresh after that full run."""
    data, lines = simulate(tmp_path, "worked-example", 1, [])
    times = sorted(stamp(line) for line in lines)
    share = Share(tmp_path / "logs", lines)
    out = tmp_path / "out"
    share.grow(times[len(times) // 2])
    middle = times[len(times) // 4]
    assert compute(data, share.root, out, capsys, "--as-of", format_ts(middle)) == (
        "full: no earlier run to go on from")
    # the lines after that as-of wait; the next run, as of their last, folds them without new lines
    assert compute(data, share.root, out, capsys).startswith("incremental: 0 new lines")
    assert_published_equals_replay(out, data, share.root)
    first = sorted(share.root.iterdir())[0]
    text = first.read_bytes()
    first.write_bytes(text[:10] + (b"X" if text[10:11] != b"X" else b"Y") + text[11:])
    assert compute(data, share.root, out, capsys) == f"full: {first} was rewritten since it was read"
    share.grow(times[-1])  # the rest, after the file as rewritten: a refresh again
    assert compute(data, share.root, out, capsys).startswith("incremental: ")
    assert_published_equals_replay(out, data, share.root)
