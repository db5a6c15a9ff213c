"""Kept fold states: a folder that late data reaches folds on from an earlier state, not from its
first event.

A refresh folds each folder on from the previous run's fold state, which holds every event
stamped by the previous as-of. A line stamped before it (a server's export that ends earlier than
the others', an export rewritten) made the folder fold again from its first event: on a share of
exports, most folders every hour. So each run keeps, beside its own fold states
(``_state/folds``), those of the last few runs before it (``_state/checkpoints/<as-of>/``: the
earlier runs' files, linked), and an index of which of them still hold for which folder (``index
.parquet``: folder, as-of).

A folder's state at an as-of ``C`` holds for this run when no event of the folder stamped by
``C`` changed since that run: none was added (a late line, a line judged again) or taken back or
changed (a file read again whole: its old events and its new ones compared row for row, ``seq``
included, so an unchanged line keeps its place). Then folding on from it with every event
stamped after ``C`` gives what folding from the first event gives: the fold sees the same events
in the same order, and the rows the earlier runs wrote for the folder by ``C`` are its rows by
``C`` (each of the fold's final rows is stamped when it is made: ``FINAL_TIMES``). A state at
``C`` with a changed event stamped at ``C`` itself does not hold (a request due at ``C`` was made
before it): strictly before.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from pfscope.spark_jobs.compute.refresh_lines import CannotRefresh
from pfscope.spark_jobs.compute.restarts import sql_list
from pfscope.spark_jobs.model.tables import FINAL_TIMES

#: a run's kept fold states of earlier runs, by as-of, and which hold for which folder
CHECKPOINTS = "_state/checkpoints"
INDEX = "index.parquet"
#: the as-ofs kept per folder: the last runs' (a share's exports end within a few runs' time)
KEPT = 4


@dataclass(frozen=True)
class Resumed:
    """The folders folded on from a kept earlier state: each as-of ``C`` and its folders."""

    by_as_of: dict[int, list[str]] = field(default_factory=dict)

    @property
    def fids(self) -> list[str]:
        return sorted(f for fids in self.by_as_of.values() for f in fids)

    def events(self) -> str:
        """SQL: an event one of them folds on with (stamped after its folder's as-of)."""
        return _or(f"(fid IN ({sql_list(fids)}) AND ts > {c})" for c, fids in sorted(self.by_as_of.items()))

    def rows(self, table: str) -> str:
        """SQL: a final row of ``table`` one of them makes again (made after its folder's as-of)."""
        at = FINAL_TIMES[table]
        return _or(
            f"(fid IN ({sql_list(fids)}) AND {at} > timestamp_micros({c}))"
            for c, fids in sorted(self.by_as_of.items())
        )


def _or(terms: Iterable[str]) -> str:
    return " OR ".join(terms) or "false"


@dataclass(frozen=True)
class Checkpoints:
    """The fold states a refresh may fold on from: the previous run's (``folds``: at its as-of,
    for every folder it has a state of) and the earlier ones its index says still hold."""

    prev_dir: Path
    previous_as_of: int
    folds: Any  # a pyarrow Table: fid, blob
    index: dict[str, list[int]]  # folder -> the as-ofs of its earlier states that hold, ascending

    @classmethod
    def of(cls, prev_dir: Path, previous_as_of: int, folds: Any) -> Checkpoints:
        import pyarrow.parquet as pq

        path = prev_dir / CHECKPOINTS / INDEX
        index: dict[str, list[int]] = {}
        if path.exists():
            t = pq.read_table(path, columns=["fid", "as_of"])
            for fid, c in zip(t.column("fid").to_pylist(), t.column("as_of").to_pylist(), strict=True):
                index.setdefault(fid, []).append(c)
        return cls(prev_dir, previous_as_of, folds, {f: sorted(cs) for f, cs in index.items()})

    @cached_property
    def present(self) -> frozenset[str]:
        """The folders with a state at the previous as-of."""
        return frozenset(self.folds.column("fid").to_pylist())

    def holding(self, fid: str) -> list[int]:
        """The as-ofs of ``fid``'s states that hold before this run's changes, ascending."""
        if fid not in self.present:
            return []
        return [*self.index.get(fid, []), self.previous_as_of]

    def resumed(self, changed: dict[str, int], first: Iterable[str]) -> Resumed:
        """For each folder ``changed`` (its earliest changed event's time), the latest state that
        holds stamped before it; ``first``: folders folded from their first event whatever holds
        (the topology changed their start)."""
        skip = set(first)
        by_as_of: dict[int, list[str]] = {}
        for fid, t in sorted(changed.items()):
            before = [c for c in self.holding(fid) if c < t]
            if before and fid not in skip:
                by_as_of.setdefault(before[-1], []).append(fid)
        return Resumed(by_as_of)

    def next_index(self, changed: dict[str, int], first: Iterable[str]) -> dict[str, list[int]]:
        """What holds for the next run, folder by folder: the states stamped before the folder's
        earliest changed event (``changed``), the last ``KEPT``; none of ``first``'s."""
        skip = set(first)
        out: dict[str, list[int]] = {}
        for fid in sorted(self.present - skip):
            t = changed.get(fid)
            held = [c for c in self.holding(fid) if t is None or c < t]
            if held:
                out[fid] = held[-KEPT:]
        return out

    def states(self, resumed: Resumed) -> Any:
        """The kept states ``resumed`` folds on from (fid, blob), as a pyarrow Table."""
        import pyarrow as pa
        import pyarrow.compute as pc

        from pfscope.spark_jobs.compute.state_rows import rows_where

        parts = []
        for c, fids in sorted(resumed.by_as_of.items()):
            if c == self.previous_as_of:
                wanted = pc.is_in(self.folds.column("fid"), value_set=pa.array(fids, pa.string()))
                parts.append(self.folds.filter(wanted))
                continue
            rows = rows_where(self.prev_dir / CHECKPOINTS / str(c), "fid", fids, ["fid", "blob"])
            if rows is None or rows.num_rows != len(fids):
                raise CannotRefresh(f"the earlier run's kept fold states at {c} are incomplete")
            parts.append(rows)
        schema = pa.schema([("fid", pa.string()), ("blob", pa.string())])
        return (
            pa.concat_tables([p.select(["fid", "blob"]).cast(schema) for p in parts])
            if parts
            else schema.empty_table()
        )

    def keep(self, run_dir: Path, index: dict[str, list[int]], folds_dir: str) -> None:
        """Write the run's kept states: the files of every as-of the index names (the previous
        run's fold states, ``folds_dir``, and its kept ones), linked, and the index."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        out = run_dir / CHECKPOINTS
        out.mkdir(parents=True, exist_ok=True)
        for c in sorted({c for cs in index.values() for c in cs}):
            source = self.prev_dir / (folds_dir if c == self.previous_as_of else f"{CHECKPOINTS}/{c}")
            _link_all(source, out / str(c))
        rows = [(fid, c) for fid, cs in sorted(index.items()) for c in cs]
        table = pa.table(
            {
                "fid": pa.array([r[0] for r in rows], pa.string()),
                "as_of": pa.array([r[1] for r in rows], pa.int64()),
            }
        )
        pq.write_table(table, out / INDEX)


def _link_all(source: Path, dest: Path) -> None:
    """Every Parquet file of ``source`` in ``dest``, linked."""
    from pfscope.spark_jobs.compute.writing import keep_file

    dest.mkdir(parents=True, exist_ok=True)
    for f in sorted(source.glob("*.parquet")):
        keep_file(f, dest / f.name)
