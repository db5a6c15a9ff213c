"""A refresh that reads a rewritten file again whole equals a full run: the differential of
``compute.retaken``.

The log is split into files by block and folder, as ingest writes it (a receive goes with its
message's send; up/down lines in a file of their own), and every step writes each file again with the
lines it holds then, in log order, as a later export changes ingest's output: a store's receives
arrive a step late (inserted in the middle of the files they belong to), a send first names
fewer recipients and later all of them (its receive by the missing one arrives with the full
list), a line goes away. After every step every published table equals the replay of the files
as they are then.
"""

from __future__ import annotations

import json
import random
import re
import zlib
from pathlib import Path
from typing import Any

from pfscope.spark_jobs.compute import job, state
from pfscope.spark_jobs.compute.job import STATE_EVENTS, STATE_LINES
from pfscope.spark_jobs.compute.writing import final_files
from pfscope.spark_jobs.exchange.event_files import block_of
from tests.spark.table_compare import assert_published_equals_replay
from tests.spark.test_refresh import SMALL, compute, simulate, stamp

BUCKETS = 4
STATUS = "0000-status.jsonl"  # sorts first: its lines are not by folder


class FolderShare:
    """Files by block and folder, written again whole at every step from the lines shown then."""

    def __init__(self, root: Path, lines: list[str]):
        self.root = root
        root.mkdir()
        self.lines = lines
        self.recs = [json.loads(line) for line in lines]
        sends = {r["msg"]: (r["fid"], block_of(r["ts"])) for r in self.recs if r["kind"] == "send"}
        self.home = [self._file(r, sends) for r in self.recs]
        # every block's files from the first (as ingest writes them: none sorts before one read)
        self.names = sorted(
            {STATUS} | {f"{block_of(r['ts'])}-b{b}.jsonl" for r in self.recs for b in range(BUCKETS)}
        )
        self.edits: dict[int, str] = {}  # a line written otherwise than in the log
        self.extra: dict[str, list[str]] = {}  # lines written at the end of a file

    @staticmethod
    def _file(rec: dict[str, Any], sends: dict[str, tuple[str, str]]) -> str:
        fid, block = rec.get("fid"), block_of(rec["ts"])
        if rec["kind"] == "receive":
            fid, block = sends.get(str(rec["msg"]), (None, block))
        if fid is None:
            return STATUS
        return f"{block}-b{zlib.crc32(str(fid).encode()) % BUCKETS}.jsonl"

    def write(self, shown: set[int]) -> None:
        files: dict[str, list[str]] = {name: [] for name in self.names}
        for i in sorted(shown):
            name = self.home[i]
            files[name].append(self.edits.get(i, self.lines[i]) + "\n")
        for name, rows in self.extra.items():
            files[name] += [row + "\n" for row in rows]
        for name, rows in files.items():
            path = self.root / name
            text = "".join(rows)
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                path.write_text(text, encoding="utf-8")


def test_rewritten_files_are_taken_back(spark, tmp_path: Path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # a small log's files are each a large part of it: taken back all the same, to be held equal
    monkeypatch.setattr(state, "RETAKE_LIMIT", 1.0)
    data, lines = simulate(tmp_path, "scale", 5, SMALL)
    # the kept lines and events in several files of consecutive lines, as a large log's are: a
    # file read again takes back the rows of the files that hold its lines, the others are kept
    monkeypatch.setattr(job, "SEQ_FILE_ROWS", len(lines) // 40)
    share = FolderShare(tmp_path / "logs", lines)
    recs = share.recs
    times = [stamp(line) for line in lines]
    rng = random.Random(5)
    cuts = [*sorted(rng.sample(sorted(times)[len(times) // 5 : -1], 4)), max(times)]
    stores = sorted({r["store"] for r in recs})
    late = stores[1]  # whose receives arrive a step late
    # a send to several stores, first written with one recipient fewer (ingest had not yet read
    # that recipient's export), its receive by the missing one held back with it
    sends = [
        i
        for i, r in enumerate(recs)
        if r["kind"] == "send" and len(r["to"]) > 1 and cuts[0] < times[i] <= cuts[1]
    ]
    partial = sends[len(sends) // 2]
    missing = recs[partial]["to"][-1]
    got_by_missing = {
        i
        for i, r in enumerate(recs)
        if r["kind"] == "receive" and r["msg"] == recs[partial]["msg"] and r["store"] == missing
    }
    assert got_by_missing, "the message's receive by the missing recipient"
    out = tmp_path / "out"
    said = []

    def step(cut: int, held: set[int], *extra: str) -> None:
        share.write({i for i, t in enumerate(times) if t <= cut and i not in held})
        said.append(compute(data, share.root, out, capsys, *extra))
        assert_published_equals_replay(out, data, share.root)

    late_receives = {i for i, r in enumerate(recs) if r["kind"] == "receive" and r["store"] == late}
    # 0: the first run, with the late store's receives not yet exported
    step(cuts[0], late_receives)
    # 1: more of the log; one send with a recipient fewer; a line that is not JSON and a repeat
    # of a line read before at the end of a file (a reject and a duplicate, taken back next)
    share.edits[partial] = json.dumps({**recs[partial], "to": recs[partial]["to"][:-1]})
    first = min(i for i, t in enumerate(times) if t <= cuts[0] and share.home[i] != STATUS)
    share.extra[share.home[first]] = ["{not json", lines[first]]
    step(cuts[1], late_receives | got_by_missing)
    # 2: the late receives arrive, in the middle of the files; the send names every recipient;
    # the reject and the repeat are gone
    del share.edits[partial]
    share.extra.clear()
    step(cuts[2], set())
    # 3: a line goes away (a change seen twice by ingest, say), and the log grows to its end
    gone = max(i for i, r in enumerate(recs) if r["kind"] == "change" and times[i] <= cuts[2])
    before = max((out / "runs").iterdir())
    files_before = {t: [f.stat().st_ino for f in final_files(before, t)] for t in (STATE_LINES, STATE_EVENTS)}
    step(cuts[4], {gone})

    assert said[0] == "full: no earlier run to go on from", said
    last = max((out / "runs").iterdir())
    for table in (STATE_LINES, STATE_EVENTS):
        now = {f.stat().st_ino for f in final_files(last, table)}
        kept = [ino in now for ino in files_before[table]]
        # the files of the lines before the one file read again are kept as they are
        assert len(kept) >= 3 and kept[0] and not all(kept), (table, kept)
    for line in said[1:4]:
        assert line.startswith("incremental: "), said
    # a later block's file that shares a store's changes with one rewritten is read again with it
    shared = r"( \(\d+ more sharing their lines\))?$"
    assert any("more sharing their lines" in line for line in said), said  # 6-hour blocks: a step does
    assert re.search(r", \d+ rewritten files? read again" + shared, said[2]), said
    assert re.search(r", 1 rewritten file read again" + shared, said[3]), said
    # (a file that shares a message with another runs in full: ``tests/unit/compute/test_retaken.py``
    # holds each rule, and ``test_refresh.py`` refuses one store's rewritten file end to end)
