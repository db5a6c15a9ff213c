"""What incremental ingest keeps beside its outputs: which files it read, where their rows are.

``OUT/.ingest_state/state.json`` lists every file of the last run's share (its path, size, times and
inode, as a key), the Parquet dataset under ``OUT/.ingest_state/rows/`` holding its
step-1 rows, and how its pieces number their records; with the options step 1 depends on (the
time offset or zone, the ingest code) and a digest of the ``ingest_summary.json`` it was written
with. A later run reuses a file's rows only when all of these still hold; otherwise it reads the
whole share again and says why. The state is written after the outputs, each atomically (a file
beside its place, then renamed): a run killed before its renames leaves the last outputs and
state as they were; one killed between them leaves a state whose digest no longer matches the
summary, so the next run is a full one.

The state also keeps a digest of the build's other inputs (``built_from``): when no file is new
or gone and those are unchanged, a run has nothing to do, and leaves the outputs as they are
without starting Spark (a chain run every minute meets exports that land every hour).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pfscope.spark_jobs.exchange.stage import WHOLE
from pfscope.spark_jobs.runtime.sources import source_digest

STATE_DIR = ".ingest_state"
VERSION = 1
BUILD_SUFFIX = "-build"  # a run's work folder of the build steps, under rows/ (kept as a layer: build_cache)
LAYER_SUFFIX = "-layer"  # its rows with those of the layers before it, as one layer (``build_cache``)


def code_digest() -> str:
    """The readers' and ingest's sources (the rows' encoding included): a change to the rules makes
    stored rows stale."""
    import pfscope.spark_jobs.exchange as exchange
    import pfscope.spark_jobs.ingest as ingest
    from pfscope.spark_jobs.runtime import worker_files

    return source_digest(exchange, ingest, worker_files)


def digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


@dataclass
class Stored:
    """One file's rows kept by an earlier run."""

    dataset: str  # folder name under rows/
    offsets: dict[int, int]
    status: dict[str, Any]  # count, broken, unreadable, empty


@dataclass
class State:
    options: dict[str, Any]
    files: dict[str, Stored]  # by file key
    #: the build's inputs the outputs were made from (``built_from``): equal now, and no file new
    #: or gone, the outputs are those a run would write again
    built_from: str | None = None
    #: the message steps' rows kept for the next build (``build_cache.BuildCache.to_json``)
    build: dict[str, Any] | None = None


def built_from(
    keys: list[str], replids: dict[tuple[str, int], str] | None, topology: Any, strict: bool
) -> str:
    """A digest of what the build steps make the outputs from, beside the rows and ``options``:
    the files in their order (``listed``), ``--replids``' table, ``--topology`` (``topology_text``
    where a run's outputs are compared) and ``--strict``."""
    table = sorted([server, replid, store] for (server, replid), store in (replids or {}).items())
    text = json.dumps(
        {"files": keys, "replids": table, "topology": topology, "strict": strict},
        sort_keys=True,
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def listed(files: list[str], keys: dict[str, str]) -> list[str]:
    """The share's files for ``built_from``: each as given (the records name their file so) and its
    key (path, size, times)."""
    return [f"{f}\0{keys[f]}" for f in files]


def topology_text(path: str | None) -> str | None:
    """``--topology`` as written: which store is a server's own follows the file's order of stores,
    which its parsed form (sorted by name) does not keep."""
    if path is None:
        return None
    return Path(path).read_bytes().decode("utf-8", "surrogateescape")


def state_root(out: str | os.PathLike[str]) -> Path:
    return Path(out) / STATE_DIR


def load(out: str | os.PathLike[str], options: dict[str, Any]) -> tuple[State | None, str]:
    """The usable state and an empty reason, or None and why a full ingest is needed."""
    root = state_root(out)
    try:
        data = json.loads((root / "state.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, f"no state of an earlier ingest in {out}"
    except (OSError, ValueError) as e:
        return None, f"the state in {root} is unreadable ({e})"
    if data.get("version") != VERSION:
        return None, "the state was written by another version of ingest"
    if data.get("summary") != digest(Path(out) / "ingest_summary.json"):
        return None, "the outputs in the folder were not written with this state (another run wrote them)"
    old = data.get("options", {})
    changed = changed_option(old, options)
    if changed:
        return None, changed
    files: dict[str, Stored] = {}
    for key, f in data.get("files", {}).items():
        if not (root / "rows" / f["dataset"]).is_dir():
            return None, f"rows of {f['source']} are missing from the state"
        files[key] = Stored(f["dataset"], {int(p): o for p, o in f["offsets"].items()}, f["status"])
    build = data.get("build")
    if build and not all((root / "rows" / x["dataset"]).is_dir() for x in build.get("layers", [])):
        build = None  # the next build runs whole
    return State(old, files, data.get("built_from"), build), ""


def changed_option(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """Why records read with ``old`` options cannot stand for those read with ``new``, or None."""
    for k, v in new.items():
        if old.get(k) != v:
            return {"code": "the ingest code changed"}.get(k, f"--{k.replace('_', '-')} changed")
    return None


def save_partial(
    out: str | os.PathLike[str],
    options: dict[str, Any],
    files: list[dict[str, Any]],
    built: str,
    build: dict[str, Any] | None = None,
) -> Path:
    """``state.json.partial``, to be renamed in by ``commit`` once the outputs are in place."""
    root = state_root(out)
    root.mkdir(parents=True, exist_ok=True)
    data = {
        "version": VERSION,
        "options": options,
        "summary": digest(Path(out) / "ingest_summary.json.partial"),
        "built_from": built,
        "build": build,
        "files": {f["file_key"]: {k: v for k, v in f.items() if k != "file_key"} for f in files},
    }
    tmp = root / "state.json.partial"
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return tmp


def commit(tmp: Path) -> None:
    tmp.replace(tmp.with_name("state.json"))


def prune(out: str | os.PathLike[str], keep: set[str]) -> None:
    """Remove row datasets no state refers to (a killed run's, or files gone from the share)."""
    rows = state_root(out) / "rows"
    if not rows.is_dir():
        return
    for d in rows.iterdir():
        if d.name not in keep:
            with contextlib.suppress(OSError):
                shutil.rmtree(d)


def drop(out: str | os.PathLike[str]) -> None:
    """Remove the state and its rows: another engine wrote the outputs, so no later run can go on
    from them (``load`` would say so and read the share whole); their space is given back now."""
    root = state_root(out)
    with contextlib.suppress(FileNotFoundError):
        (root / "state.json").unlink()
    shutil.rmtree(root / "rows", ignore_errors=True)


def prune_run(out: str | os.PathLike[str], run_id: str) -> None:
    """Remove the rows a failed run wrote (``run_id``, its second round, its build steps'), but
    those its state refers to: a run that fails after its state was committed keeps them."""
    try:
        data = json.loads((state_root(out) / "state.json").read_text(encoding="utf-8"))
        used = {f["dataset"] for f in data.get("files", {}).values()}
        used |= {x["dataset"] for x in (data.get("build") or {}).get("layers", [])}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        used = set()
    for name in (run_id, run_id + "-whole", run_id + BUILD_SUFFIX, run_id + LAYER_SUFFIX):
        if name not in used:
            with contextlib.suppress(OSError):
                shutil.rmtree(state_root(out) / "rows" / name)


def stored_entries(got: list[dict[str, Any]], resplit: set[str], run_id: str) -> dict[str, Stored]:
    """Per file read this run: its dataset, its pieces' record offsets, how the reading went."""
    pieces: dict[str, dict[int, int]] = {}
    out: dict[str, Stored] = {}
    for g in got:
        k = g["file_key"]
        if g["kind"] == "file":
            status = {"count": g["count"], "broken": g["broken"], "unreadable": bool(g["unreadable"])}
            out[k] = Stored(run_id + "-whole" if k in resplit else run_id, {WHOLE: 0}, status)
        elif g["kind"] == "piece" and k not in resplit:
            pieces.setdefault(k, {})[g["piece"]] = g["count"]
    for k, counts in pieces.items():
        offsets, n = {}, 0
        for p in sorted(counts):
            offsets[p] = n
            n += counts[p]
        out[k] = Stored(run_id, offsets, {"count": n, "broken": None, "unreadable": False})
    return out
