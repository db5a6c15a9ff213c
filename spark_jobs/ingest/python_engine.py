"""``ingest --engine python``: the reference ingest (``exchange.run_ingest``) in this process,
keeping what each export's records are between runs, so that an hour's run reads only the exports
no earlier run read.

What a file's records are on their own (``classify_one``: parsed, an error kept, or a reject and
why) depends on its bytes, the time offset or zone, and the readers' code; it is kept per file,
pickled, under ``OUT/.ingest_state/python/``, named by the file's key (path, size, times and inode,
``runtime.kept.file_key``) and those options, and holding whose records they are. Everything that
compares records with each other (duplicates, messages, REPLIDs, the derivation, the folders) runs
again over the whole share each run, so the outputs equal a fresh ingest's by construction. A file
that could not be read whole is not kept: it is read again on every run, and so are files whose key
changed while they were read.

``kept.json`` beside the pickles says what the outputs were last built from; when no file is new or
gone and nothing else changed, a run does nothing (as ingest on Spark does). It is written after
the outputs; a run that fails keeps the last outputs, and pickles no run uses are removed by the
next run that succeeds. A run here also removes what ingest on Spark kept (``incremental.drop``):
Spark cannot go on from outputs it did not write. The kept records stay good whoever writes the
outputs next. The collector is paused for the run: loading the kept records, and the build, make
millions of objects it would scan for nothing (126,452 records loaded in 1.7 CPU s instead of 6.9).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from pfscope.spark_jobs.exchange import FileReader, is_break, run_ingest
from pfscope.spark_jobs.exchange.classify import Classified, Outcome
from pfscope.spark_jobs.exchange.formats import expand_log_paths
from pfscope.spark_jobs.exchange.records import RawRecord
from pfscope.spark_jobs.ingest import incremental
from pfscope.spark_jobs.ingest.job import IngestRun, IngestSettings
from pfscope.spark_jobs.runtime.collector import cyclic_gc_paused
from pfscope.spark_jobs.runtime.kept import dump_kept, file_key, load_kept, pickle_name
from pfscope.spark_jobs.runtime.sources import source_digest

KEPT_DIR = "python"
KEPT_STATE = "kept.json"
VERSION = 1


def code_digest() -> str:
    """The readers', the classification's and the model's sources, and what they read with (Python
    itself: expat, csv, times; the ``evtx`` reader; ``tzdata``'s zones): the pickles hold their
    objects."""
    import pfscope.spark_jobs.exchange as exchange
    import pfscope.spark_jobs.model as model

    return source_digest(exchange, model, salt=f"kept-{VERSION}-{sys.version}-{_versions('evtx', 'tzdata')}")


def _versions(*packages: str) -> str:
    found = []
    for name in packages:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name} none")
    return ", ".join(found)


def kept_root(out: str | os.PathLike[str]) -> Path:
    return incremental.state_root(out) / KEPT_DIR


@dataclass
class KeptFiles:
    """The files earlier runs read, as ``run_ingest``'s ``kept`` (``exchange.Keeper``)."""

    root: Path
    #: what a file's outcomes depend on besides its bytes (``--time-offset``, ``--timezone``, code)
    options: str
    #: read every file again (``--full``), keeping what it reads
    again: bool = False
    #: pickle names this run used, by file
    used: dict[str, str] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    read_now: list[str] = field(default_factory=list)
    #: pickles written this run, beside their places until the run's outputs are in (``commit``)
    pending: list[Path] = field(default_factory=list)

    def classified(self, f: str, read: FileReader) -> Iterable[Classified]:
        key = file_key(f)
        about = {"source": f, "key": key, "options": self.options}
        path = self.root / pickle_name(key, f, self.options)
        if not self.again:
            got = load_kept(path, about, _is_classified(f))
            if got is not None:
                self.used[f], self.counts[f] = path.name, len(got)
                return got
        records = list(read(f))
        self.read_now.append(f)
        self.counts[f] = len(records)
        if not any(is_break(r) for r, _ in records) and file_key(f) == key:
            # pickled beside its place until the run's outputs are in, as read: the build changes them
            tmp = path.with_name(path.name + ".partial")
            dump_kept(tmp, about, records)
            self.pending.append(tmp)
            self.used[f] = path.name
        return records

    def commit(self) -> None:
        """The pickles this run wrote, renamed into place once its outputs are."""
        for tmp in self.pending:
            tmp.replace(tmp.with_suffix(""))
        self.pending.clear()

    def discard(self) -> None:
        """A failed run keeps nothing of its own: its pickles go, and the folder if it is empty."""
        for tmp in self.pending:
            with contextlib.suppress(OSError):
                tmp.unlink()
        with contextlib.suppress(OSError):
            self.root.rmdir()

    def prune(self) -> None:
        """Remove the pickles this run did not use (files gone, changed, or read with other options)."""
        keep = set(self.used.values()) | {KEPT_STATE}
        for p in self.root.iterdir():
            if p.name not in keep:
                with contextlib.suppress(OSError):
                    p.unlink()


def _is_classified(f: str) -> Callable[[Any], bool]:
    def check(x: Any) -> bool:
        return (
            type(x) is tuple
            and len(x) == 2
            and type(x[0]) is RawRecord
            and type(x[1]) is Outcome
            and x[0].source == f
        )

    return check


@dataclass(frozen=True)
class KeptState:
    """``kept.json``: what the outputs in ``OUT`` were last built from by this engine."""

    built_from: str
    summary: str | None  # the digest of the ``ingest_summary.json`` written with it
    options: dict[str, Any]  # ``--time-offset``, ``--timezone`` and the code it read with

    @classmethod
    def load(cls, root: Path) -> KeptState | None:
        try:
            data = json.loads((root / KEPT_STATE).read_text(encoding="utf-8"))
            if data.get("version") != VERSION:
                return None
            return cls(str(data["built_from"]), data.get("summary"), dict(data.get("options") or {}))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def save(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        tmp = root / (KEPT_STATE + ".partial")
        data = {
            "version": VERSION,
            "built_from": self.built_from,
            "summary": self.summary,
            "options": self.options,
        }
        tmp.write_text(json.dumps(data) + "\n", encoding="utf-8")
        tmp.replace(root / KEPT_STATE)


def _mode(files: int, read_now: int, records_now: int, records_kept: int, why_all: str) -> str:
    """The run's first line: what it read and what it kept, as ingest on Spark says it; ``why_all``
    when it kept no file (none, when nothing was read)."""
    kept = files - read_now
    if not kept and why_all:
        return f"full ingest: {why_all}"
    return (
        f"incremental: {read_now:,} new files, {records_now:,} new records; {kept:,} files "
        f"({records_kept:,} records) not read again"
    )


def ingest_python(s: IngestSettings) -> IngestRun:
    """The reference ingest, reading only the files no earlier run kept (all with ``--full``), under
    the same lock as ingest on Spark. A run that fails writes nothing: no output, nothing kept,
    and no ``out`` folder it made itself."""
    from pfscope.spark_jobs.published.runs import run_lock

    made = not Path(s.out).exists()
    try:
        with run_lock(incremental.state_root(s.out)), cyclic_gc_paused():
            files = expand_log_paths(s.logs)
            inputs, opts, options = _built_from(files, s)
            root = kept_root(s.out)
            last = KeptState.load(root)
            summary_path = Path(s.out) / "ingest_summary.json"
            if not s.full and last == KeptState(inputs, incremental.digest(summary_path), opts):
                return _as_they_are(summary_path, len(files))
            kept = KeptFiles(root, options, again=s.full)
            try:
                summary = run_ingest(
                    s.logs,
                    s.out,
                    replids=s.replids,
                    topology=s.topology,
                    default_offset_min=s.default_offset_min,
                    zone=s.zone,
                    strict=s.strict,
                    kept=kept,
                )
            except BaseException:
                kept.discard()
                raise
            kept.commit()
            KeptState(inputs, incremental.digest(summary_path), opts).save(root)
            kept.prune()
            incremental.drop(s.out)  # ingest on Spark cannot go on from outputs it did not write
    except BaseException:
        if made:
            with contextlib.suppress(OSError):
                Path(s.out).rmdir()
        raise
    now = sum(kept.counts[f] for f in kept.read_now)
    listed, done, rest = len(kept.counts), len(kept.read_now), sum(kept.counts.values()) - now
    mode = _mode(listed, done, now, rest, "--full" if s.full else _why_all(last, opts))
    return IngestRun(summary, mode, listed - done, done, now, rest)


def _built_from(files: list[str], s: IngestSettings) -> tuple[str, dict[str, Any], str]:
    """What the outputs are built from (``incremental.built_from``, and the digest of the options a
    file's records are read with), those options, and their digest."""
    from pfscope.spark_jobs.exchange.identity import load_replids
    from pfscope.spark_jobs.model.topology import load_topology

    if s.topology:
        load_topology(s.topology)  # an unusable topology is the operator's to fix before any reading
    table = load_replids(s.replids) if s.replids else None
    listed = incremental.listed(files, {f: file_key(f) for f in files})
    opts = {"time_offset": s.default_offset_min, "timezone": s.zone, "code": code_digest()}
    options = hashlib.sha256(json.dumps(opts).encode()).hexdigest()[:16]
    topo_text = incremental.topology_text(s.topology)
    return incremental.built_from(listed, table, topo_text, s.strict) + options, opts, options


def _why_all(last: KeptState | None, options: dict[str, Any]) -> str:
    """Why a run that kept no file read them all."""
    if last is None:
        return "no records kept by an earlier run in this process"
    return incremental.changed_option(last.options, options) or "no file of the share was read before"


def _as_they_are(summary_path: Path, files: int) -> IngestRun:
    """A run with nothing new: the last run's outputs, said so (nothing read, nothing written)."""
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    records = int(summary.get("records_read", 0))
    mode = _mode(files, 0, 0, records, "") + "; nothing new: the outputs stay as they are"
    return IngestRun(summary, mode, files, 0, 0, records, unchanged=True)
