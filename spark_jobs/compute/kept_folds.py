"""The python engine folds on from kept fold states: a folder the new lines do not reach by an
earlier run's as-of is not folded again from its first event.

Each run keeps every folder's fold state at its as-of (``_state/folds``, as the Spark job keeps
them) and those of the few runs before it that still hold (``_state/python/checkpoints/<as-of>/``,
the earlier runs' files, linked), with an index of which hold for which folder
(``_state/python/holds.parquet``: folder, as-of, digest). A folder's state at ``C`` holds for a
run when what its folds read up to ``C`` is what the earlier runs read: the folder's events
stamped by ``C`` (each by its input position, its line, and for a receive the send it resolves
to), the folder's entry in the topology, and the organisation's (its stores, sites and costs, and
every up/down line stamped by ``C``). The digest of these is kept with the state and taken again
by the next run; equal, the fold goes on from ``C`` with the folder's events stamped after it
(``replay.FoldStart``), and the fold's final rows stamped by ``C`` (``tables.FINAL_TIMES``) are
the published run's, whose events by ``C`` were the same. Equal digests at ``C`` mean the same
events in the same order, so the fold sees what folding from the first event would show it, and
makes the same rows (each final row is stamped when it is made): the run equals the replay of
the whole log, which ``tests/unit/compute/test_kept_folds.py`` holds. A run of other code, or
after a Spark run, folds every folder from its first event.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pfscope.spark_jobs.compute.arrow_rows import ARROW_TYPES
from pfscope.spark_jobs.compute.state import code_version, load_manifest
from pfscope.spark_jobs.compute.stream import load_state
from pfscope.spark_jobs.model.events import Event
from pfscope.spark_jobs.model.replay import FoldStart
from pfscope.spark_jobs.model.tables import FINAL_TIMES, FOLD_OF_ROW, TABLES
from pfscope.spark_jobs.model.topology import HIERARCHY_FID, Topology
from pfscope.spark_jobs.runtime.kept import link_or_copy

HOLDS = "_state/python/holds.parquet"
CHECKPOINTS = "_state/python/checkpoints"
FOLDS = "_state/folds"
#: the as-ofs whose states a run keeps: its own and the last runs' (a share's exports end within a
#: few runs' time of each other)
KEPT = 4
_HOLDS = pa.schema([("fid", pa.string()), ("at", pa.int64()), ("digest", pa.string())])

#: folder -> as-of -> digest of what its folds read up to then
Digests = dict[str, dict[int, str]]


@dataclass
class KeptFolds:
    """Which folders this run folds on from a kept state, from which as-of; what it keeps for the
    next run."""

    as_of: int
    earlier: Path | None = None
    #: the earlier run's index: folder -> as-of -> digest; its own as-of (its ``_state/folds``)
    before: Digests = field(default_factory=dict)
    earlier_as_of: int | None = None
    #: this run's digests, at the earlier as-ofs and its own
    now: Digests = field(default_factory=dict)
    starts: dict[str, FoldStart] = field(default_factory=dict)

    #: the published run's final tables, in their declared types (read once: a state is used only
    #: when they can be)
    finals: dict[str, pa.Table] = field(default_factory=dict)

    @classmethod
    def plan(
        cls, earlier: Path | None, topo: Topology, events: list[Event], texts: dict[int, str], as_of: int
    ) -> KeptFolds:
        """The states of the ``earlier`` (published) run's index that still hold, loaded: for each
        folder the latest one that can be read (a state or a table that cannot be read is folded
        from the first event, never a failed run)."""
        held_before = _read_holds(earlier) if earlier is not None else None
        if earlier is None or held_before is None:
            return cls(as_of, now=digests(topo, events, texts, [as_of]))
        before, earlier_as_of = held_before
        ats = sorted({at for by_at in before.values() for at in by_at if at <= as_of})
        now = digests(topo, events, texts, [*ats, as_of])
        kept = cls(as_of, earlier, before, earlier_as_of, now, finals=_final_tables(earlier))
        if len(kept.finals) < len(FINAL_TIMES):
            return kept
        holding = {
            fid: {at for at, d in by_at.items() if at <= as_of and now.get(fid, {}).get(at) == d}
            for fid, by_at in before.items()
        }
        for at in sorted(ats, reverse=True):  # each folder from the latest state it has
            want = {fid for fid, held in holding.items() if at in held and fid not in kept.starts}
            if want:
                kept.starts.update(_load_starts(kept.states_dir(at), at, want))
        return kept

    def states_dir(self, at: int) -> Path:
        """Where the earlier run keeps the states at ``at``: its own, or an earlier run's it keeps."""
        assert self.earlier is not None
        return self.earlier / (FOLDS if at == self.earlier_as_of else f"{CHECKPOINTS}/{at}")

    def carried(self, table: str, data: pa.Table) -> pa.Table:
        """``data`` (a final table's rows this run made) with the published run's rows of the folds
        that went on from a kept state, stamped by its as-of."""
        if not self.starts or table not in FINAL_TIMES:
            return data
        earlier = self.finals[table]
        fold = FOLD_OF_ROW.get(table, "observer")
        keys = [f"{fid}\0{o}" for fid, s in self.starts.items() for o in s.folds]
        ats = [s.at for s in self.starts.values() for _ in s.folds]
        row_keys = pc.binary_join_element_wise(earlier["fid"], earlier[fold], "\0")
        row_at = pc.take(pa.array(ats, pa.int64()), pc.index_in(row_keys, pa.array(keys, pa.string())))
        made = pc.cast(earlier[FINAL_TIMES[table]], pa.int64())
        return pa.concat_tables([data, earlier.filter(pc.less_equal(made, row_at))])

    def keep(self, run_dir: Path, fids: Iterable[str]) -> None:
        """This run's index: every folder's state at its as-of, and the earlier states that still
        hold, the last ``KEPT - 1`` as-ofs of them (their files linked into this run; a folder
        whose state is not in them is left out)."""
        rows = [(fid, self.as_of, self.now[fid][self.as_of]) for fid in sorted(fids)]
        ats = sorted({at for by_at in self.before.values() for at in by_at if at < self.as_of})
        for at in ats[-(KEPT - 1) :]:
            held = [
                (fid, at, digest)
                for fid, by_at in self.before.items()
                if (digest := by_at.get(at)) is not None and self.now.get(fid, {}).get(at) == digest
            ]
            if held and self.earlier is not None:
                here = run_dir / CHECKPOINTS / str(at)
                _link_all(self.states_dir(at), here)
                present = _state_fids(here)
                rows.extend(r for r in held if r[0] in present)
        path = run_dir / HOLDS
        path.parent.mkdir(parents=True, exist_ok=True)
        columns = [list(c) for c in zip(*rows, strict=True)] if rows else [[], [], []]
        table = pa.table(dict(zip(_HOLDS.names, columns, strict=True)), schema=_HOLDS)
        pq.write_table(table.replace_schema_metadata(_versions()), path)


def digests(topo: Topology, events: list[Event], texts: dict[int, str], ats: list[int]) -> Digests:
    """Each folder's digest at each of ``ats``: of what its folds read up to then (the module's
    docstring)."""
    ats = sorted(set(ats))
    topology = topo.to_json()
    org = _org_digests({k: v for k, v in topology.items() if k != "folders"}, events, texts, ats)
    entries = {f["fid"]: json.dumps(f, sort_keys=True) for f in topology.get("folders", [])}
    by_fid: dict[str, list[Event]] = {fid: [] for fid in [*entries, HIERARCHY_FID]}
    for e in events:
        if e.fid is not None:
            by_fid.setdefault(e.fid, []).append(e)
    out: Digests = {}
    for fid, evs in by_fid.items():
        evs.sort(key=lambda e: (e.ts, e.seq))
        h = hashlib.blake2b(entries.get(fid, "").encode(), digest_size=16)
        i, marks = 0, {}
        for at in ats:
            while i < len(evs) and evs[i].ts <= at:
                _update(h, evs[i], texts)
                i += 1
            marks[at] = hashlib.blake2b(org[at] + h.digest(), digest_size=16).hexdigest()
        out[fid] = marks
    return out


def _org_digests(
    org: dict[str, object], events: list[Event], texts: dict[int, str], ats: list[int]
) -> dict[int, bytes]:
    """The organisation's digest at each of ``ats``: its stores, sites and costs, its up/down lines."""
    status = sorted((e for e in events if e.kind == "store_status"), key=lambda e: (e.ts, e.seq))
    h = hashlib.blake2b(json.dumps(org, sort_keys=True).encode(), digest_size=16)
    i, out = 0, {}
    for at in ats:
        while i < len(status) and status[i].ts <= at:
            _update(h, status[i], texts)
            i += 1
        out[at] = h.digest()
    return out


def _update(h: hashlib.blake2b, e: Event, texts: dict[int, str]) -> None:
    """An event, by its input position, its line, and a receive's send (the message it resolves to)."""
    text = texts[e.seq].encode("utf-8", "surrogatepass")
    h.update(e.seq.to_bytes(8, "little") + len(text).to_bytes(8, "little") + text)
    if e.kind == "receive" and e.message is not None:
        h.update(e.message.seq.to_bytes(8, "little"))


def _read_holds(run_dir: Path) -> tuple[Digests, int] | None:
    """The run's index and as-of, when this code can read its states: a python run's, of this
    code, pickled by this Python with this pyarrow."""
    manifest = load_manifest(run_dir)
    if manifest is None or manifest.engine != "python" or manifest.code != code_version():
        return None
    try:
        table = pq.read_table(run_dir / HOLDS)
    except (OSError, pa.ArrowException):
        return None
    if (table.schema.metadata or {}) != _versions():
        return None
    out: Digests = {}
    for fid, at, digest in zip(*(table[c].to_pylist() for c in ("fid", "at", "digest")), strict=True):
        out.setdefault(fid, {})[at] = digest
    return out, manifest.as_of


def _versions() -> dict[bytes, bytes]:
    return {b"python": sys.version.encode(), b"pyarrow": pa.__version__.encode()}


def _final_tables(run_dir: Path) -> dict[str, pa.Table]:
    """The run's final tables in their declared types; those it cannot read left out."""
    out = {}
    for table in FINAL_TIMES:
        schema = pa.schema([(name, ARROW_TYPES[kind]) for name, kind in TABLES[table]])
        try:
            out[table] = pq.read_table(run_dir / table, coerce_int96_timestamp_unit="us").cast(schema)
        except (OSError, ValueError, pa.ArrowException):
            continue
    return out


def _load_starts(folder: Path, at: int, fids: set[str]) -> dict[str, FoldStart]:
    """The states of ``fids`` kept in ``folder`` (those it lacks, or cannot give back, fold from
    their first event or an older state)."""
    out: dict[str, FoldStart] = {}
    for f in sorted(folder.glob("*.parquet")):
        try:
            table = pq.read_table(f)
            rows = zip(table["fid"].to_pylist(), table["blob"].to_pylist(), strict=True)
        except (OSError, KeyError, ValueError, pa.ArrowException):
            continue
        for fid, blob in rows:
            if fid in fids:
                try:
                    state = load_state(blob)
                except Exception:  # a damaged state: the folder does without it
                    continue
                out[fid] = FoldStart(at, state.folds, state.responders, state.processed)
    return out


def _state_fids(folder: Path) -> set[str]:
    """The folders whose states ``folder`` holds."""
    found: set[str] = set()
    for f in folder.glob("*.parquet"):
        try:
            found.update(pq.read_table(f, columns=["fid"])["fid"].to_pylist())
        except (OSError, KeyError, ValueError, pa.ArrowException):
            continue
    return found


def _link_all(there: Path, here: Path) -> None:
    """``there``'s state files in ``here`` too."""
    here.mkdir(parents=True, exist_ok=True)
    for f in there.glob("*.parquet"):
        link_or_copy(f, here / f.name)
