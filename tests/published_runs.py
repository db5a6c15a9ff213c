"""Published runs for the dashboard tests, made by the real Spark job (``pfscope compute``).

Each scenario is simulated and computed once per test session by this worktree's ``pfscope``,
called in the test process that first needs it, and shared with the suite's other test process
(pytest-xdist): the runs live in one folder per session (``$PFSCOPE_TEST_SHARED``, made by
``tests/conftest.py``), and a lock per scenario makes the other process wait for the build and
read it rather than build it again. a compute runs in the suite's one
SparkSession (``suite_session``), so no run starts a JVM of its own (the spawned ``pfscope
compute`` is tested in ``tests/spark/test_retention.py`` and ``test_cluster.py``). The worked example gets hostile text: its folder
path carries ``<script>`` and ``<img onerror>``, a child folder carries markup too, and the log
gets unusable lines (so the run has rejects, one of them markup, one naming the accepted line it
conflicts with).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import io
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOSTILE_PATH = 'IPM_SUBTREE\\Folder1 <script>window.__pfxss=1</script><img src=x onerror="window.__pfxss=2">'
HOSTILE_CHILD = {
    "fid": "1-124",
    "path": "IPM_SUBTREE\\Folder1\\<b>bold</b> & <i>co</i>",
    "parent": "1-123",
    "replicas": ["PFS1", "PFS2"],
}
HOSTILE_LINES = [
    "<script>window.__pfxss=3</script>",
    '{"ts": "2026-11-02T01:00:00Z", "store": "NOPE", "kind": "change"}',
    # not above PFS1's change 17 to 1-123 (line 115 of the worked example): a reject that names it
    '{"ts": "2026-11-04T20:00:00Z", "store": "PFS1", "kind": "change", "fid": "1-123", "cn": 16, '
    '"item": "<b>again</b>"}',
]
#: the line of the worked example's log that the last hostile line conflicts with
HOSTILE_CONFLICT_LINE = 115

#: the environment variable naming the session's folder of runs shared by its test processes
SHARED = "PFSCOPE_TEST_SHARED"
_published: dict[str, Path] = {}
_root: list[Path] = []


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("PFSCOPE_SPARK_MASTER", "local[2]")
    return env


def suite_session():  # type: ignore[no-untyped-def]
    """The test suite's one SparkSession (local[2], UI off, few shuffle partitions)."""
    from pfscope.spark_jobs.runtime.session import spark_session

    return spark_session("local[2]", "pfscope-tests", for_tests=True)


def _pfscope(*args: str) -> None:
    from pfscope.app.cli import main

    if args[0] == "compute":
        suite_session()  # the compute's getOrCreate finds it
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    if code != 0:
        raise RuntimeError(f"pfscope {' '.join(args)} failed ({code}): {err.getvalue()[-2000:]}")


def _base() -> Path:
    """``$PFSCOPE_E2E_REUSE`` to keep the runs between sessions (faster local iterations; delete it
    after changing the Spark job), else the session's shared folder, else a temporary one."""
    if not _root:
        keep = os.environ.get("PFSCOPE_E2E_REUSE") or os.environ.get(SHARED)
        if keep:
            path = Path(keep)
            path.mkdir(parents=True, exist_ok=True)
        else:
            path = Path(tempfile.mkdtemp(prefix="pfscope-e2e-"))
            atexit.register(shutil.rmtree, path, True)
        _root.append(path)
    return _root[0]


@contextlib.contextmanager
def _built_once(name: str) -> Iterator[Path | None]:
    """Hold ``name``'s lock (other test processes wait here) and give its data folder if a
    process built it already, else ``None`` (then build it under the lock: marked when done)."""
    base = _base()
    with (base / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = base / name / "built"
        if done.exists():
            yield base / name / "runs"
            return
        shutil.rmtree(base / name, ignore_errors=True)
        yield None
        done.touch()


def make_hostile(folder: Path) -> None:
    """The worked example with markup in folder paths and unusable (markup) lines in the log."""
    topo_file = folder / "topology.json"
    topo = json.loads(topo_file.read_text())
    for f in topo["folders"]:
        if f["fid"] == "1-123":
            f["path"] = HOSTILE_PATH
    topo["folders"].append(HOSTILE_CHILD)
    topo_file.write_text(json.dumps(topo, indent=2))
    with (folder / "events.jsonl").open("a", encoding="utf-8") as fh:
        for line in HOSTILE_LINES:
            fh.write(line + "\n")


def ingest_worked_example(work: Path) -> tuple[Path, Path]:
    """The worked example rendered as Exchange events (wevtutil /f:RenderedXml, one file per
    server) and read back by ``pfscope ingest``: a log whose CN sets and changes are derived."""
    from collections import defaultdict

    from pfscope.spark_jobs.model.topology import load_topology
    from tests.render import render_log
    from tests.unit.exchange.exports import write_wevtutil_xml

    sim = work / "sim"
    _pfscope("simulate", "--scenario", "worked-example", "--out", str(sim), "--no-progress")
    rendered = render_log(
        load_topology(sim / "topology.json"), (sim / "events.jsonl").read_text(encoding="utf-8").splitlines()
    )
    by_server: dict[str, list] = defaultdict(list)  # type: ignore[type-arg]
    for rec in rendered.records:
        by_server[rec.server.split(".")[0]].append(rec)
    logs = work / "logs"
    logs.mkdir(parents=True)
    for server, recs in sorted(by_server.items()):
        write_wevtutil_xml(recs, logs / f"{server}.xml")
    _pfscope(
        "ingest",
        "--logs",
        str(logs),
        "--out",
        str(work / "ingested"),
        "--topology",
        str(sim / "topology.json"),
    )
    return work / "ingested" / "topology.json", work / "ingested" / "events.jsonl"


def published(scenario: str) -> Path:
    """The data folder (``compute --out``) of ``scenario``, computed once per session
    (``ingested``: the worked example through Exchange's event logs and ``pfscope ingest``)."""
    if scenario not in _published:
        with _built_once(scenario) as built:
            _published[scenario] = built or _build(scenario, _base() / scenario)
    return _published[scenario]


def _build(scenario: str, work: Path) -> Path:
    out = work / "runs"
    if scenario == "ingested":
        topology, events = ingest_worked_example(work)
    else:
        _pfscope("simulate", "--scenario", scenario, "--out", str(work), "--no-progress")
        if scenario == "worked-example":
            make_hostile(work)
        topology, events = work / "topology.json", work / "events.jsonl"
    if scenario == "demo":  # as scripts/demo: a day before the end first, so the record has forecasts
        _pfscope(
            "compute",
            "--topology",
            str(topology),
            "--events",
            str(events),
            "--out",
            str(out),
            "--as-of",
            day_before(events),
        )
    _pfscope("compute", "--topology", str(topology), "--events", str(events), "--out", str(out))
    return out


def day_before(events: Path) -> str:
    """A day before the log's last event (the demo's first run, as ``scripts/demo`` makes it)."""
    from pfscope.spark_jobs.model.timeutil import DAY, format_ts, parse_ts

    with events.open(encoding="utf-8") as fh:
        return format_ts(max(parse_ts(json.loads(line)["ts"]) for line in fh) - DAY)


#: the 200-store organisation of the history tests: every store a row of the per-store chart
SCALE_200 = ("--stores", "200", "--sites", "8", "--folders", "1000", "--days", "3")


def published_scale(name: str, flags: tuple[str, ...]) -> Path:
    """A ``scale`` organisation sized by ``flags`` (``pfscope simulate --scenario scale``),
    computed once per session like :func:`published` (``name``: its folder)."""
    if name not in _published:
        with _built_once(name) as built:
            _published[name] = built or _build_scale(_base() / name, flags)
    return _published[name]


def _build_scale(work: Path, flags: tuple[str, ...]) -> Path:
    _pfscope("simulate", "--scenario", "scale", *flags, "--out", str(work), "--no-progress")
    out = work / "runs"
    _pfscope(
        "compute",
        "--topology",
        str(work / "topology.json"),
        "--events",
        str(work / "events.jsonl"),
        "--out",
        str(out),
    )
    return out
