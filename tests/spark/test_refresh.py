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
from spark_jobs.model.timeutil import parse_ts
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
    hold = {4: {stores[0]: ("change", "receive")}, 7: {stores[1]: ("change", "send", "receive", "replicas")}}
    said = []
    for step, cut in enumerate(cuts):
        share.grow(cut, hold=hold.get(step))
        said.append(compute(data, share.root, out, capsys))
        assert_published_equals_replay(out, data, share.root)
    assert said[0] == "full: no earlier run to go on from"
    assert said[8].startswith("full: new lines change the verdict on "), said[8]
    # every other step went on from the one before, the late lines of step 5 included
    assert [i for i, line in enumerate(said) if line.startswith("incremental: ")] == [1, 2, 3, 4, 5, 6, 7, 9], said
    latest = read_latest(out)
    assert latest is not None and latest["refresh"] == said[-1]


def test_what_forbids_a_refresh_is_said_and_the_run_is_full(spark, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    data, lines = simulate(tmp_path, "worked-example", 1, [])
    times = sorted(stamp(line) for line in lines)
    share = Share(tmp_path / "logs", lines)
    out = tmp_path / "out"
    share.grow(times[len(times) // 2])
    assert compute(data, share.root, out, capsys).startswith("full: ")
    # nothing new: a refresh with no new line, the as-of unchanged
    assert compute(data, share.root, out, capsys).startswith("incremental: 0 new lines")
    assert_published_equals_replay(out, data, share.root)
    # --full forces it
    assert compute(data, share.root, out, capsys, "--full") == "full: --full was given"
    # a file read before, rewritten (same size, other bytes)
    first = sorted(share.root.iterdir())[0]
    text = first.read_text(encoding="utf-8")
    first.write_text(text[:10] + ("X" if text[10] != "X" else "Y") + text[11:], encoding="utf-8")
    said = compute(data, share.root, out, capsys)
    assert said == f"full: {first} was rewritten since it was read"
    first.write_text(text, encoding="utf-8")
    assert compute(data, share.root, out, capsys).startswith("full: ")  # rewritten back
    # a file that shrank
    first.write_text(text[: len(text) // 2], encoding="utf-8")
    assert compute(data, share.root, out, capsys) == f"full: {first} is shorter than when it was read"
    first.write_text(text, encoding="utf-8")
    compute(data, share.root, out, capsys)
    # a new file that sorts before the files read before
    (share.root / "AAA.jsonl").write_text("", encoding="utf-8")
    said = compute(data, share.root, out, capsys)
    assert said.startswith(f"full: {share.root / 'AAA.jsonl'} is new and sorts before"), said
    # an --as-of before the previous run's
    said = compute(data, share.root, out, capsys, "--as-of", "2026-11-02T00:00:00Z")
    assert said == "full: the --as-of is before the earlier run's"
    # the rest of the log, after the as-of of an earlier run: an incremental run again
    compute(data, share.root, out, capsys)
    share.grow(times[-1])
    assert compute(data, share.root, out, capsys).startswith("incremental: ")
    assert_published_equals_replay(out, data, share.root)
