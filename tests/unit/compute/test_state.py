"""Whether a run can go on from the previous one's state, and what it must read: every reason for
a full run, said in one line; the new bytes of each file, split into lines as the reader does."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from pfscope.spark_jobs.compute import state
from pfscope.spark_jobs.compute.state import (
    FileRead,
    Manifest,
    NewBytes,
    TopologyChange,
    code_version,
    nothing_new,
    plan_refresh,
    read_new_lines,
    topology_change,
)
from pfscope.spark_jobs.model.events import read_lines

LINES = [b'{"a": 1}\n', b'{"b": 2}\r\n', b"\xff\xfe not utf-8\n", b"\n", b'{"c": 3}\n']


def manifest(files: list[Path], **over: object) -> Manifest:
    reads = [FileRead.of(str(f), f.stat().st_size, f.read_bytes().count(b"\n")) for f in files]
    m = Manifest(
        run_id="r",
        as_of=1_000,
        last_ts=1_000,
        code=code_version(),
        topology="t",
        files=reads,
        lines_read=sum(r.lines for r in reads),
        accepted=0,
        duplicates=0,
    )
    return replace(m, **over)


@pytest.fixture
def share(tmp_path: Path) -> list[Path]:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_bytes(b"".join(LINES))
    b.write_bytes(b"".join(LINES[:2]))
    return [a, b]


def plan(m: Manifest | None, files: list[Path], **kw: object):  # type: ignore[no-untyped-def]
    return plan_refresh(m, [str(f) for f in files], topology=kw.pop("topology", "t"), **kw)  # type: ignore[arg-type]


def test_nothing_new_is_a_refresh_of_nothing(share: list[Path]) -> None:
    p = plan(manifest(share), share, as_of=None)
    assert p.incremental and p.new == []


def test_nothing_new_publishes_no_run_unless_the_as_of_would_move(share: list[Path], tmp_path: Path) -> None:
    """The same bytes, topology and as-of: the previous run is what a refresh would publish. The
    as-of moves when one is given, or when the run's clock held the previous one back."""
    m, files, later = manifest(share), [str(f) for f in share], 2_000

    def unchanged(m: Manifest, files: list[str], as_of: int | None = None, topology: str = "t") -> bool:
        p = plan_refresh(m, files, topology=topology, as_of=as_of)
        return nothing_new(p, m, files, topology, as_of, clock=later)

    assert unchanged(m, files) and unchanged(m, files, as_of=1_000)
    assert not unchanged(m, files, as_of=1_500)  # a later as-of: timers fire, status falls due
    assert not unchanged(replace(m, as_of=900), files)  # the clock held it back: it moves now
    assert not unchanged(replace(m, last_ts=3_000), files)  # still held back, but to a later time
    assert unchanged(replace(m, as_of=0, last_ts=None), files)  # nothing accepted, ever
    assert not unchanged(m, files, topology="u")  # a store or folder more: a refresh refolds
    assert not unchanged(m, files, as_of=500)  # a run in full, said why
    c = tmp_path / "c.jsonl"
    c.write_bytes(b"")
    assert not unchanged(m, [*files, str(c)])  # an empty file more: the manifest lists it
    with open(share[1], "ab") as fh:
        fh.write(LINES[0])
    assert not unchanged(m, files)  # a line more
    share[1].write_bytes(b"X" + share[1].read_bytes()[1:])
    assert not unchanged(m, files)  # a file rewritten


def test_appended_lines_and_a_new_file_after_the_others_are_what_is_read(
    share: list[Path], tmp_path: Path
) -> None:
    m = manifest(share)
    with open(share[0], "ab") as fh:
        fh.write(b"".join(LINES))
    c = tmp_path / "c.jsonl"
    c.write_bytes(LINES[0])
    p = plan(m, [*share, c], as_of=None)
    assert p.incremental
    assert [(n.index, n.path, n.start, n.first_line) for n in p.new] == [
        (0, str(share[0]), len(b"".join(LINES)), 6),
        (2, str(c), 0, 1),
    ]
    # the new lines are what the reference reader reads there, numbered on from the earlier ones
    got, read = read_new_lines(p.new[0])
    want = [(n, text) for _, n, _, text in read_lines([str(share[0])])][5:]
    assert got == want and len(got) == 5 and got[2][1] is None  # not UTF-8: no text
    assert (read.size, read.lines, read.open_tail) == (share[0].stat().st_size, 10, False)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ("full", "--full was given"),
        ("none", "no earlier run to go on from"),
        ("code", "the earlier run's state is from another version of pfscope"),
        ("topology", "the topology changed"),
        ("unstable", "a file changed while the earlier run read it"),
        ("as_of", "the --as-of is before the earlier run's"),
        ("remote", "s3://bucket/log.jsonl is not a local file"),
        ("gone", "{b} was read before and is gone"),
        ("before", "{aa} is new and sorts before a file read before (the order of lines changes)"),
    ],
)
def test_every_reason_for_a_full_run(share: list[Path], tmp_path: Path, change: str, reason: str) -> None:
    a, b = share
    files: list[Path | str] = list(share)
    kw: dict[str, object] = {"as_of": None}
    if change == "tail":
        b.write_bytes(b'{"b": 2}')  # no newline yet
    m = manifest(share)
    if change == "full":
        kw["force_full"] = True
    elif change == "none":
        m = None  # type: ignore[assignment]
    elif change == "code":
        m = replace(m, code="0" * 16)
    elif change == "topology":
        kw["topology"] = "other"
    elif change == "unstable":
        m = replace(m, stable=False)
    elif change == "as_of":
        kw["as_of"] = 999
    elif change == "remote":
        files.append("s3://bucket/log.jsonl")
    elif change == "gone":
        files.remove(b)
    elif change == "before":
        (tmp_path / "aa.jsonl").write_bytes(LINES[0])
        files.insert(1, tmp_path / "aa.jsonl")
    p = plan_refresh(m, [str(f) for f in files], topology=str(kw.pop("topology", "t")), **kw)  # type: ignore[arg-type]
    want = reason.format(a=a, b=b, aa=tmp_path / "aa.jsonl")
    assert not p.incremental and p.reason == want


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ("shorter", "{a} is shorter than when it was read"),
        ("rewritten", "{a} was rewritten since it was read"),
        ("tail", "{b}: its last line had no newline and has grown"),
    ],
)
def test_a_file_whose_lines_changed_is_read_again_whole(
    share: list[Path], change: str, reason: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its earlier lines are taken back by the refresh (``compute.retaken``), which says why."""
    monkeypatch.setattr(state, "RETAKE_LIMIT", 1.0)  # one of two files is most of the log
    a, b = share
    if change == "tail":
        b.write_bytes(b'{"b": 2}')  # no newline yet
    m = manifest(share)
    if change == "shorter":
        a.write_bytes(a.read_bytes()[:-3])
    elif change == "rewritten":  # the same size, one byte other
        data = bytearray(a.read_bytes())
        data[3] ^= 1
        a.write_bytes(bytes(data))
    elif change == "tail":
        b.write_bytes(b'{"b": 2}\n')
    p = plan_refresh(m, [str(f) for f in share], topology="t", as_of=None)
    changed = b if change == "tail" else a
    index = share.index(changed)
    assert p.incremental
    assert p.retaken == {index: reason.format(a=a, b=b)}
    assert [(n.index, n.start, n.end, n.first_line) for n in p.new] == [(index, 0, changed.stat().st_size, 1)]


def test_a_log_mostly_rewritten_is_read_in_full(share: list[Path], tmp_path: Path) -> None:
    """Rewritten files are read again in the driver and their folders folded from the first
    event: above ``RETAKE_LIMIT`` of the log's bytes, a full run is cheaper."""
    small = tmp_path / "c.jsonl"
    small.write_bytes(LINES[0])
    files = [*share, small]
    m = manifest(files)
    small.write_bytes(LINES[1])  # rewritten: a small part of the log
    assert plan(m, files, as_of=None).retaken == {2: f"{small} was rewritten since it was read"}
    a = share[0]
    data = bytearray(a.read_bytes())
    data[3] ^= 1
    a.write_bytes(bytes(data))  # and now about half of it
    p = plan(m, files, as_of=None)
    assert not p.incremental
    assert p.reason.startswith("2 of 3 files were rewritten since they were read (")
    assert p.reason.endswith("% of the log's bytes): a full run reads them faster")


def test_the_manifest_reads_back(share: list[Path], tmp_path: Path) -> None:
    m = manifest(share, status=[(1, 2, "PFS1", True)], folders=7)
    assert Manifest.from_json(m.to_json()) == m


def test_a_file_read_before_whole_grown_reads_only_the_new_bytes(share: list[Path]) -> None:
    a = share[0]
    size = a.stat().st_size
    m = manifest(share)
    a.write_bytes(a.read_bytes() + b'{"d": 4}')  # a last line still being written
    (nb,) = plan(m, share, as_of=None).new
    assert nb == NewBytes(0, str(a), size, size + 8, 6)
    lines, read = read_new_lines(nb)
    assert lines == [(6, '{"d": 4}')] and read.open_tail


def test_the_code_version_is_taken_once_per_process(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """An upgrade that rewrites the sources while a run goes on does not change the version the run
    writes in its manifest: the state it pickled is the old code's."""
    import pfscope.spark_jobs.compute.state as state

    first = state.code_version()
    monkeypatch.setattr(state, "source_digest", lambda *a, **k: "rewritten")
    assert state.code_version() == first


def _topology() -> dict[str, object]:
    store = {"server": "EX1", "site": "A", "version": "2003", "preferred_backfill_source": None}
    return {
        "sites": ["A"],
        "costs": [],
        "stores": [{"name": "PF1", **store}, {"name": "PF2", **store, "server": "EX2"}],
        "folders": [
            {"fid": "1-10", "path": "IPM_SUBTREE\\a", "parent": "1-1", "replicas": ["PF1"]},
            {"fid": "1-11", "path": "IPM_SUBTREE\\b", "parent": "1-1", "replicas": ["PF1", "PF2"]},
        ],
    }


def test_a_topology_that_only_grows_is_refolded_not_run_in_full() -> None:
    """Ingest's topology gains stores and folders and changes replica lists as exports name more
    of the organisation: those folders (and the hierarchy, for a new store) are folded again."""
    before, after = _topology(), _topology()
    after["stores"].append({**after["stores"][0], "name": "PF3", "server": "EX3"})  # type: ignore[attr-defined]
    after["folders"][0]["replicas"] = ["PF1", "PF3"]  # type: ignore[index]
    after["folders"].append({"fid": "1-12", "path": "IPM_SUBTREE\\c", "parent": "1-1", "replicas": ["PF3"]})  # type: ignore[attr-defined]
    change = topology_change(before, after, rejected_before=False)
    assert change == TopologyChange("", ("1-1", "1-10", "1-12"))
    assert topology_change(before, before, rejected_before=True) == TopologyChange("", ())


def test_a_store_described_anew_refolds_its_folders() -> None:
    """A store named by other servers' logs before its own export described it (ingest guessed
    its site and version), or a new site: taken; the hierarchy now, and the store's folders, which
    ``folders_of_stores`` finds in the run (``tests/spark/test_refresh_topology.py``)."""
    before, after = _topology(), _topology()
    after["sites"] = ["A", "B"]
    after["stores"][1]["site"] = "B"  # type: ignore[index]
    after["stores"][1]["version"] = "2007"  # type: ignore[index]
    assert topology_change(before, after, rejected_before=False) == TopologyChange("", ("1-1",), ("PF2",))


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        ("costs", "the topology changed: its sites or costs"),
        ("site gone", "the topology changed: its sites or costs"),
        ("store gone", "the topology changed: store PF2 is gone"),
        ("folder gone", "the topology changed: folder 1-11 is gone from it"),
        ("rejected", "the topology changed: it gained store PF3, and lines rejected before may name it"),
    ],
)
def test_a_topology_change_a_refresh_cannot_take_says_why(share: list[Path], edit: str, reason: str) -> None:
    before, after = _topology(), _topology()
    stores: list[dict[str, object]] = after["stores"]  # type: ignore[assignment]
    if edit == "costs":
        after["costs"] = [{"a": "A", "b": "A", "cost": 1}]
    elif edit == "store gone":
        stores.pop()
    elif edit == "site gone":
        after["sites"] = []
    elif edit == "folder gone":
        after["folders"].pop()  # type: ignore[attr-defined]
    else:
        stores.append({**stores[0], "name": "PF3"})
    change = topology_change(before, after, rejected_before=edit == "rejected")
    assert change.reason == reason
    # and the plan says it, as it runs in full
    p = plan(manifest(share), list(share), as_of=None, topology="other", change=change)
    assert p.reason == reason and not p.incremental
    taken = plan(
        manifest(share), list(share), as_of=None, topology="other", change=TopologyChange("", ("1-10",))
    )
    assert taken.incremental and taken.refold == ("1-10",)


def test_a_run_of_the_python_engine_is_gone_on_from_only_when_nothing_is_new(share: list[Path]) -> None:
    """The replay keeps no state a refresh goes on from: a new byte makes the next run full, and
    the same bytes still publish nothing. A manifest written before engines were named is Spark's."""
    m = manifest(share, engine="python")
    assert nothing_new(plan(m, share, as_of=None), m, [str(f) for f in share], "t", None, clock=2_000)
    with open(share[1], "ab") as fh:
        fh.write(LINES[0])
    p = plan(m, share, as_of=None)
    assert p.reason == "the earlier run was computed by the python engine: it keeps no state to go on from"
    assert plan(manifest(share), share, as_of=None).incremental
    older = json.loads(manifest(share).to_json())
    del older["engine"]
    assert Manifest.from_json(json.dumps(older)).engine == "spark"
