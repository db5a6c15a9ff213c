"""``pfscope refresh``: the chain (ingest the share, compute) run hour by hour equals a fresh chain
of the whole share (a fresh ingest, a full compute), every published table; and each run's one
line says what ingest read and what compute folded.

The share is a small simulated organisation rendered as ``wevtutil`` exports, as
``tests/benchmarks/bench_ingest.py`` makes them: hour 1 holds each server's first 80 % of records
but one server's; hour 2 adds that server's (a late export; its store described at last, folders
only it names, replica lists it joins) and the later, overlapping exports of the others; hour 3
every server's last export; hour 4 none (nothing to do). The steps
run in this process (the suite's SparkSession) through ``chain.run_once``, as the command runs them
in processes of their own."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Sequence
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from pfscope.app.chain import ChainSettings, Step, run_once
from pfscope.app.cli import main
from pfscope.spark_jobs.compute import state
from pfscope.spark_jobs.model.tables import TABLES
from pfscope.spark_jobs.published.runs import read_latest
from tests.benchmarks.bench_ingest import export, render
from tests.spark.table_compare import ordered

#: compute's fold in two partitions (its default for a small log would be more tasks than cores)
FEW = ("--partitions=2",)


def in_process(args: Sequence[str]) -> Step:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        status = main(list(args))
    return Step(status, out.getvalue(), err.getvalue())


def tables(out: Path) -> dict[str, list[tuple[Any, ...]]]:
    latest = read_latest(out)
    assert latest is not None
    return tables_of(out / str(latest["path"]))


def tables_of(run: Path) -> dict[str, list[tuple[Any, ...]]]:
    return {t: ordered(t, pq.read_table(run / t).to_pylist()) for t in TABLES}


def fresh_chain(share: Path, out: Path) -> dict[str, list[tuple[Any, ...]]]:
    """The tables of a fresh chain of the share as it is (its ingest in this process: the
    reference, the same outputs byte for byte)."""
    fresh = ChainSettings((str(share),), out, ("--engine=python",), (*FEW, "--master=local[2]"))
    status, line = run_once(fresh, in_process)
    assert status == 0 and "compute: full: no earlier run to go on from" in line, line
    return tables(fresh.published)


def topology(chain: Path) -> dict[str, Any]:
    return json.loads((chain / "ingested" / "topology.json").read_text(encoding="utf-8"))


@pytest.mark.slow
def test_the_chain_hour_by_hour_equals_a_fresh_chain(spark, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # the new exports reach most of this small share's files: taken back all the same (a larger
    # share runs in full then, ``state.RETAKE_LIMIT``), to be held equal to a fresh chain
    monkeypatch.setattr(state, "RETAKE_LIMIT", 1.0)
    _, by_server = render(tmp_path / "sim", 4, 40, 1)
    share = tmp_path / "share"
    share.mkdir()
    servers = sorted(by_server)
    newcomer = servers[-1]
    cut = {s: int(len(recs) * 0.8) for s, recs in by_server.items()}
    cut2 = {s: int(len(recs) * 0.9) for s, recs in by_server.items()}
    chain = ChainSettings((str(share),), tmp_path / "chain", (), FEW, ("--master=local[2]",))
    for s in servers[:-1]:
        export(by_server[s][: cut[s]], share / f"{s}-1.xml")
    said = [run_once(chain, in_process)]
    first = topology(chain.out)
    # hour 2: the new server's export (late: most of it before hour 1's as-of), and the others'
    # later exports, each repeating the first one's last 20 records
    export(by_server[newcomer][: cut[newcomer]], share / f"{newcomer}-1.xml")
    for s in servers[:-1]:
        export(by_server[s][cut[s] - 20 : cut2[s]], share / f"{s}-2.xml", cut[s] - 19)
    said.append(run_once(chain, in_process))
    second = topology(chain.out)
    # hour 3: every server's last export, overlapping its one before
    for s in servers:
        start = cut[s] if s == newcomer else cut2[s]
        export(by_server[s][start - 20 :], share / f"{s}-3.xml", start - 19)
    said.append(run_once(chain, in_process))

    assert [status for status, _ in said] == [0, 0, 0], said
    lines = [line for _, line in said]
    assert "ingest: full ingest: no state of an earlier ingest" in lines[0], lines
    assert "compute: full: no earlier run to go on from" in lines[0], lines
    for line in lines[1:]:  # ingest reads only the new exports
        assert "ingest: incremental: " in line, line
    # and builds again only the message groups they reach, once the share knows every server
    assert re.search(
        r"; built again [1-9][\d,]* message keys and [\d,]+ of [\d,]+ folders, the others kept from \d earlier run",
        lines[2],
    ), lines
    # compute goes on from the run before: ingest rewrote the files of the folders the new exports
    # reach (a send's recipients grow as their exports arrive), and compute took those files
    # back; in hour 2 a store named before is described at last (its folders folded again)
    for line in lines[1:]:
        assert "compute: incremental: " in line and " rewritten files read again" in line, lines
    assert all(", published run " in line and line.endswith(", status 0") for line in lines), lines
    # hour 3's late lines come after hour 2's as-of in some folders: those fold on from the state
    # hour 2 kept, not from their first event
    refolded, from_start = re.search(
        r"(\d+) folders refolded(?: \((\d+) from their first event\))?", lines[2]
    ).groups()  # type: ignore[union-attr]
    assert int(from_start or 0) < int(refolded), lines[2]
    # the topology grew on the way: the new server's store (named by the others' logs before,
    # described by its own now), folders, a replica list changed
    assert first["stores"] != second["stores"]
    before = {f["fid"]: f["replicas"] for f in first["folders"]}
    assert set(before) < {f["fid"] for f in second["folders"]}
    assert any(before.get(f["fid"]) not in (None, f["replicas"]) for f in second["folders"])

    got, want = tables(chain.published), fresh_chain(share, tmp_path / "fresh")
    for t in TABLES:
        assert got[t] == want[t], t
    assert sum(len(r) for r in want.values()) > 1000  # not vacuous

    # hour 4: no export landed. Neither step does anything (no Spark job); the line says so, and the
    # run published stays
    latest = read_latest(chain.published)
    assert latest is not None
    status, line = run_once(chain, in_process)
    assert status == 0, line
    assert "; nothing new: the outputs stay as they are" in line, line
    assert (
        f"compute: incremental: nothing new since run {latest['run_id']} (as of {latest['as_of']}): it stays published"
        in line
    ), line
    assert read_latest(chain.published) == latest
