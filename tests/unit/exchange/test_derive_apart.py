"""The derivation in parts (``derive_apart``), one process each, against the derivation in one
piece: the same outputs byte for byte on a simulated share with the derivation's own rejects, and
a part that fails fails the run, writing nothing and leaving no process behind."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import psutil
import pytest

import pfscope.spark_jobs.exchange as exchange
from pfscope.spark_jobs.exchange import build, derive_apart, run_ingest
from pfscope.spark_jobs.exchange.event_files import EVENTS_FOLDER
from tests.benchmarks.bench_ingest import export, render
from tests.unit.exchange.exports import write_wevtutil_xml
from tests.unit.exchange.test_build import odd_messages

TIMING = ("seconds", "records_per_second")


def _share(tmp: Path) -> Path:
    """A simulated organisation of 4 servers and 40 folders, and records the derivation rejects."""
    _, by_server = render(tmp / "sim", 4, 40, 1)
    logs = tmp / "logs"
    logs.mkdir()
    for server, recs in sorted(by_server.items()):
        export(recs, logs / f"{server}.xml")
    odd = odd_messages()
    wide = next(r for r in odd if "1-FFFFF" in r.message)
    more = [  # sends the derivation rejects, in several folders (so in several parts)
        replace(
            wide,
            ts=wide.ts + 60_000_000 * n,
            message=wide.message.replace("<W1@", f"<W{n}@").replace(
                "(1-50) IPM_SUBTREE\\Z", f"(1-{50 + n}) Z{n}"
            ),
        )
        for n in range(2, 8)
    ]
    write_wevtutil_xml(odd + more, logs / "odd.xml")
    return logs


def _outputs(out: Path) -> dict[str, Any]:
    got: dict[str, Any] = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    got |= {f"events/{p.name}": p.read_bytes() for p in (out / EVENTS_FOLDER).iterdir()}
    summary = json.loads(got.pop("ingest_summary.json"))
    for k in TIMING:
        summary.pop(k)
    got["summary"] = json.dumps(summary)  # the order of every key and statistic too
    return got


@pytest.mark.parametrize("parts", [2, 3])
def test_in_parts_equals_in_one_piece(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parts: int) -> None:
    logs = _share(tmp_path)
    one = run_ingest([str(logs)], tmp_path / "one")
    calls: list[int] = []

    def spied(*args: Any) -> Any:
        calls.append(args[-1])
        return derive_apart.derive_written(*args)

    monkeypatch.setattr(build, "derive_written", spied)
    monkeypatch.setattr(exchange, "parts_for", lambda messages: parts)
    apart = run_ingest([str(logs)], tmp_path / "apart")
    assert calls == [parts]
    assert one["derived"] and len(one["derived"]) > 1  # statistics to merge in their order
    wide = [n for r, n in one["reject_reasons"].items() if r.startswith("CN range of")]
    assert sum(wide) == 7  # rejects of the derivation, merged in their messages' order
    assert _outputs(tmp_path / "apart") == _outputs(tmp_path / "one")
    assert apart["events_written"] == one["events_written"]


def test_the_share_is_derived_in_parts_from_parts_from_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3, 4, 5})
    assert derive_apart.parts_for(derive_apart.PARTS_FROM - 1) == 1
    assert derive_apart.parts_for(derive_apart.PARTS_FROM) == derive_apart.MAX_PARTS
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3})
    assert derive_apart.parts_for(10 * derive_apart.PARTS_FROM) == 1
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    assert derive_apart.parts_for(derive_apart.PARTS_FROM) == 2
    monkeypatch.delattr(os, "fork")  # as on Windows
    assert derive_apart.parts_for(derive_apart.PARTS_FROM) == 1


def test_a_part_that_fails_fails_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    logs = _share(tmp_path)
    here = os.getpid()
    part = derive_apart._part

    def failing(*args: Any) -> Any:
        if os.getpid() != here:
            raise MemoryError("no room for the lines")
        return part(*args)

    monkeypatch.setattr(derive_apart, "_part", failing)
    monkeypatch.setattr(exchange, "parts_for", lambda messages: 3)
    with pytest.raises(
        RuntimeError, match=r"a part of the derivation \(process \d+\) failed: MemoryError: no room"
    ):
        run_ingest([str(logs)], tmp_path / "out")
    assert not (tmp_path / "out" / "events.jsonl").exists()
    assert not psutil.Process().children()  # every part waited for
