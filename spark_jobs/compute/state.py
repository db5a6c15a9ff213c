"""What a run keeps for the next one, and whether the next one can go on from it.

A published run holds, beside its tables, ``_state/``: ``manifest.json`` (this module), the
lines it judged (``lines``, for the rules between lines), the accepted events stamped after its
as-of (``pending``) and every folder's fold state (``folds``). The next ``compute`` into the same
folder reads only what is new in the log and folds on from those states (``refresh``)
when :func:`plan_refresh` finds nothing that forbids it; otherwise it runs in full and says why
in one line.

The manifest records, per file read, its size, how many lines that was, whether its last line
had no newline yet, and a checksum of the bytes read: a file that shrank, or whose bytes read
before changed, is noticed (a file replaced by one that begins with the same bytes, as a new
export of a log that only grew, is not a change).
It also records the topology's and the code's digests: a state is only ever read by the code
version that wrote it (it is pickled).

Plain Python: no Spark import.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pfscope.spark_jobs.model.timeutil import default_as_of
from pfscope.spark_jobs.model.topology import HIERARCHY_FID
from pfscope.spark_jobs.runtime.sources import source_digest

STATE_DIR = "_state"
MANIFEST = "manifest.json"
#: the run's topology as the job read it (a plan on the run needs the sites and versions)
TOPOLOGY = "topology.json"
FORMAT = 1
_CHUNK = 4 * 1024 * 1024
#: above this share of the log's bytes in files rewritten since they were read, a full run: a
#: refresh parses the lines it reads in the driver, and folds their folders from their first
#: event (12 exports, hour 2: 62 of 64 files rewritten, 97 % of the bytes; the refresh took
#: 53.3 s, a full run 27.7 s)
RETAKE_LIMIT = 0.4


@dataclass
class FileRead:
    """One file as a run read it."""

    path: str
    size: int  # bytes read
    lines: int  # lines in them
    open_tail: bool  # the last line had no newline (a writer may still be writing it)
    fingerprint: str

    @classmethod
    def of(cls, path: str, size: int, lines: int) -> FileRead:
        return cls(path, size, lines, _open_tail(path, size), fingerprint(path, size))


@dataclass
class Manifest:
    """What the next run needs to know of this one."""

    run_id: str
    as_of: int
    last_ts: int | None  # the last accepted event's time (pending ones included)
    code: str
    topology: str
    files: list[FileRead]
    lines_read: int
    accepted: int
    duplicates: int
    #: accepted store_status lines: (ts, seq, store, down), pending ones included
    status: list[tuple[int, int, str, bool]] = field(default_factory=list)
    stable: bool = True  # False: a file changed while the run read it
    folders: int | None = None  # folders with a fold state
    format: int = FORMAT
    #: what computed the run: ``spark`` keeps the state a refresh goes on from; ``python`` (the
    #: replay, ``compute.python_engine``) keeps only the fold states
    engine: str = "spark"

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Manifest:
        d = json.loads(text)
        d["files"] = [FileRead(**f) for f in d["files"]]
        d["status"] = [tuple(s) for s in d["status"]]
        return cls(**d)


def fingerprint(path: str, size: int) -> str:
    """A checksum of the first ``size`` bytes, all of them: a file rewritten with other bytes in
    the middle (an export re-rendered, an edit) is noticed, not only one cut short. CRC-32 reads
    at page-cache speed (1.7 GB/s here, against 0.5 for SHA-256): it guards against accidents,
    which is all a log folder the operator controls needs."""
    crc = 0
    left = size
    with open(path, "rb") as fh:
        while left > 0:
            chunk = fh.read(min(_CHUNK, left))
            if not chunk:
                break
            crc = zlib.crc32(chunk, crc)
            left -= len(chunk)
    return f"{size}:crc32:{crc:08x}"


def _open_tail(path: str, size: int) -> bool:
    if size == 0:
        return False
    with open(path, "rb") as fh:
        fh.seek(size - 1)
        return fh.read(1) != b"\n"


@functools.cache
def code_version() -> str:
    """A digest of the source of everything that makes or reads a state: the model and the job.
    Taken once per process, at the start of a run (``entry._run``): the code running is the code
    imported then, even if an upgrade rewrites the files while the run goes on (a digest taken when
    the manifest is written named new code for a state the old code had pickled)."""
    import pfscope.spark_jobs.compute as compute
    import pfscope.spark_jobs.model as model

    return source_digest(model, compute, salt=str(FORMAT))


def topology_digest(topology_json: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(topology_json, sort_keys=True).encode()).hexdigest()[:16]


def sizes(files: list[str]) -> dict[str, int]:
    """Each local file's size now (taken before a run reads them, and again after)."""
    return {f: os.path.getsize(f) for f in files}


# --------------------------------------------------------------------------------------------
# can the next run go on from a state?
# --------------------------------------------------------------------------------------------
@dataclass
class NewBytes:
    """What is new in one file: bytes ``start`` to ``end``, its lines numbered from ``first_line``."""

    index: int  # the file's place in the sorted list (its lines' ``seq``)
    path: str
    start: int
    end: int
    first_line: int


@dataclass
class Plan:
    """Incremental (``reason`` empty) with what to read, or full and why (one line)."""

    reason: str = ""
    new: list[NewBytes] = field(default_factory=list)
    #: folders the topology added or changed (and the hierarchy, when it gained stores): folded
    #: again from their first event, as late lines' folders are
    refold: tuple[str, ...] = ()
    #: files read before whose bytes changed, each read again whole: their earlier lines are
    #: taken back (``compute.retaken``), and why, by file index (``"{path} was rewritten ..."``)
    retaken: dict[int, str] = field(default_factory=dict)

    @property
    def incremental(self) -> bool:
        return not self.reason


def full(reason: str) -> Plan:
    return Plan(reason=reason)


@dataclass(frozen=True)
class TopologyChange:
    """How the topology changed since the earlier run: ``reason`` (empty: a refresh can take it),
    and the folders to fold again from their first event."""

    reason: str = ""
    refold: tuple[str, ...] = ()
    #: stores whose server, site, version or preferred source changed: every folder they take
    #: part in is folded again too (``folders_of_stores``)
    stores: tuple[str, ...] = ()


def topology_change(
    before: dict[str, Any], after: dict[str, Any], *, rejected_before: bool
) -> TopologyChange:
    """What a refresh makes of a topology that changed (``Topology.to_json`` of each).

    A topology that only gains sites, stores and folders, or changes a folder's path, parent or
    replica list, or a store's server, site, version or preferred source (ingest's, as exports
    name and describe more of the organisation), is taken: those folders are folded again from
    their first event with the new topology's start, and the hierarchy (every store is its
    replica) when stores were added; a changed store's folders too (``stores``: a store takes part
    only in the folders it is a replica of or logs lines of, and its site, version and preferred
    source weigh only in those). What it cannot take, with why: a site gone or costs changed
    (every backfill choice may change), a store gone, a folder gone; stores added when an earlier
    run rejected lines (``rejected_before``: a line naming a store unknown then is accepted now)."""
    if not set(before.get("sites", [])) <= set(after.get("sites", [])) or before.get("costs") != after.get(
        "costs"
    ):
        return TopologyChange("the topology changed: its sites or costs")
    old_stores = {s["name"]: s for s in before.get("stores", [])}
    new_stores = {s["name"]: s for s in after.get("stores", [])}
    gone = sorted(set(old_stores) - set(new_stores))
    if gone:
        return TopologyChange(f"the topology changed: store {gone[0]} is gone")
    changed = tuple(sorted(name for name, store in old_stores.items() if new_stores[name] != store))
    added = sorted(set(new_stores) - set(old_stores))
    if added and rejected_before:
        return TopologyChange(
            f"the topology changed: it gained store {added[0]}, and lines rejected before may name it"
        )
    old_folders = {f["fid"]: f for f in before.get("folders", [])}
    new_folders = {f["fid"]: f for f in after.get("folders", [])}
    gone = sorted(set(old_folders) - set(new_folders))
    if gone:
        return TopologyChange(f"the topology changed: folder {gone[0]} is gone from it")
    refold = {fid for fid, f in new_folders.items() if old_folders.get(fid) != f}
    if added or changed:
        refold.add(HIERARCHY_FID)
    return TopologyChange("", tuple(sorted(refold)), changed)


def folders_of_stores(run_dir: Path, stores: tuple[str, ...]) -> set[str]:
    """The folders a published run shows ``stores`` taking part in: on a replica list at any time
    (``replica_lists``, the topology's start included; ``folders``), or logging a line of the
    folder or named in a send's recipients (``_state/lines``)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    wanted = pa.array(list(stores), pa.string())
    out: set[str] = set()

    def listing(table: Any, column: str) -> None:
        lists = table.column(column)
        hit = pc.is_in(pc.list_flatten(lists), value_set=wanted)
        rows = pc.unique(pc.filter(pc.list_parent_indices(lists), hit))
        out.update(table.column("fid").take(rows).drop_null().to_pylist())

    for name in ("replica_lists", "folders"):
        paths = sorted(str(f) for f in (run_dir / name).glob("*.parquet"))
        if paths:
            listing(ds.dataset(paths).to_table(columns=["fid", "replicas"]), "replicas")
    paths = sorted(str(f) for f in (run_dir / STATE_DIR / "lines").glob("*.parquet"))
    if paths:
        lines = ds.dataset(paths).to_table(columns=["fid", "store", "to"])
        by = lines.filter(pc.is_in(lines.column("store"), value_set=wanted)).column("fid")
        out.update(by.drop_null().to_pylist())
        listing(lines.filter(pc.invert(pc.is_null(lines.column("to")))), "to")
    return out


def plan_refresh(
    previous: Manifest | None,
    files: list[str],
    *,
    topology: str,
    as_of: int | None,
    force_full: bool = False,
    change: TopologyChange | None = None,
) -> Plan:
    """Whether a run over ``files`` can go on from ``previous``'s state, and what it must read.

    Full when: asked (``--full``); there is no usable state; the code changed; the topology
    changed in a way a refresh cannot take (``change``, :func:`topology_change`);
    an ``--as-of`` before the previous run's; a file read before is gone; a new file sorts before
    one read before (the input order of lines read before would change); a file is not local.

    A file read before that shrank, was rewritten or had a last line without newline that grew
    is read again whole (``Plan.retaken``): the refresh takes its earlier lines back when no
    other line's verdict depended on its earlier lines (``compute.retaken``), and otherwise runs
    in full with that reason; so does a log whose rewritten files are more than
    ``RETAKE_LIMIT`` of its bytes."""
    if force_full:
        return full("--full was given")
    if previous is None:
        return full("no earlier run to go on from")
    if previous.format != FORMAT or previous.code != code_version():
        return full("the earlier run's state is from another version of pfscope")
    refold: tuple[str, ...] = ()
    if previous.topology != topology:
        if change is None or change.reason:
            return full(change.reason if change else "the topology changed")
        refold = change.refold
    if not previous.stable:
        return full("a file changed while the earlier run read it")
    if as_of is not None and as_of < previous.as_of:
        return full("the --as-of is before the earlier run's")
    remote = [f for f in files if "://" in f]
    if remote:
        return full(f"{remote[0]} is not a local file")
    before = [f.path for f in previous.files]
    if files[: len(before)] != before:
        gone = [p for p in before if p not in files]
        if gone:
            return full(f"{gone[0]} was read before and is gone")
        first_new = next(f for f in files if f not in before)
        return full(f"{first_new} is new and sorts before a file read before (the order of lines changes)")
    plan = Plan(refold=refold)
    for i, path in enumerate(files):
        size = os.path.getsize(path)
        if i < len(before):
            read = previous.files[i]
            why = _changed(path, read, size)
            if why:
                plan.retaken[i] = why
                plan.new.append(NewBytes(i, path, 0, size, 1))
                continue
            if size > read.size:
                plan.new.append(NewBytes(i, path, read.size, size, read.lines + 1))
        elif size:
            plan.new.append(NewBytes(i, path, 0, size, 1))
    retaken = sum(nb.end for nb in plan.new if nb.index in plan.retaken)
    total = sum(os.path.getsize(f) for f in files)
    if plan.retaken and retaken > RETAKE_LIMIT * total:
        return full(
            f"{len(plan.retaken):,} of {len(files):,} files were rewritten since they were read "
            f"({retaken / total:.0%} of the log's bytes): a full run reads them faster"
        )
    if previous.engine != "spark" and (plan.new or plan.refold):  # nothing new: nothing to go on with
        return full(
            f"the earlier run was computed by the {previous.engine} engine: it keeps no state to go on from"
        )
    return plan


def nothing_new(
    plan: Plan, previous: Manifest, files: list[str], topology: str, as_of: int | None, clock: int
) -> bool:
    """A refresh by ``plan`` would publish ``previous`` again: no new or rewritten byte in the same
    files, the same topology, and the same as-of (the one given, or the default the refresh would
    take, ``default_as_of``: with no new line, the last accepted line's time, unless the run's
    clock held it back). So a run every minute between exports that land every hour costs no
    Spark job and publishes no run."""
    if not plan.incremental or plan.new or plan.retaken or plan.refold:
        return False
    if previous.topology != topology or len(files) != len(previous.files):
        return False
    return (as_of if as_of is not None else default_as_of(previous.last_ts, clock)) == previous.as_of


def _changed(path: str, read: FileRead, size: int) -> str:
    """Why the lines of a file read before are no longer those read (empty: they are, and any
    new bytes follow them)."""
    if size < read.size:
        return f"{path} is shorter than when it was read"
    if fingerprint(path, read.size) != read.fingerprint:
        return f"{path} was rewritten since it was read"
    if size > read.size and read.open_tail:
        return f"{path}: its last line had no newline and has grown"
    return ""


def read_new_lines(new: NewBytes) -> tuple[list[tuple[int, str | None]], FileRead]:
    """The new lines of one file as (line number, text; None when not UTF-8), split and cleaned
    as the reader does (``spark_jobs.model.events.read_lines``), and the file as now read."""
    with open(new.path, "rb") as fh:
        fh.seek(new.start)
        data = fh.read(new.end - new.start)
    raws = data.split(b"\n")
    if raws and raws[-1] == b"":
        raws.pop()  # the text after the last newline: none
    out: list[tuple[int, str | None]] = []
    for n, raw in enumerate(raws, start=new.first_line):
        raw = raw.rstrip(b"\r\n")
        try:
            text: str | None = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        out.append((n, text))
    lines = new.first_line - 1 + len(raws)
    return out, FileRead.of(new.path, new.end, lines)


def load_manifest(run_dir: Path) -> Manifest | None:
    """The state's manifest of a published run, or None when it has none that can be read."""
    try:
        return Manifest.from_json((run_dir / STATE_DIR / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError, KeyError):
        return None
