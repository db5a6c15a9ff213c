"""Rows a Python worker writes to Parquet itself, a file per kind, in Spark's partitioned layout.

Ingest's workers make most of their rows in Python (step 1's records, the build steps' links,
messages and lines). Handed back to Spark, each row would cross to the JVM as Arrow, become one of
Spark's rows and be encoded by Spark's Parquet writer: in the 12-export benchmark that cost the
JVM 6.5 of its 20.7 CPU seconds, and the run 4 of its 24.5 s. Written here by pyarrow, the rows
go from the worker's dicts to the file; Spark reads them as it reads its own
(``DEST/kind=parsed/part-00003.parquet``, the kind from the folder's name), and the task hands
back only what the driver needs (a status, the few rows a step merges).

A task's files are written under hidden names of their own (Spark's reader skips names starting
with ``.``) and renamed into place when the task ends, so an attempt that fails while writing
leaves nothing Spark would read; a retried or speculative one replaces what another attempt
left, whole (as it does a file of an attempt that failed after writing, handing its rows back). The destination is a folder every
worker can reach, as the rest of ingest's state is (the driver joins the lines' files).
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Sequence
from typing import Any

#: rows of one kind buffered before they are written as one row group
ROW_GROUP_ROWS = 5_000


class KindFiles:
    """The files of one task: ``add`` each row (a dict holding ``column``), ``close`` when done
    (``with``: closed at the end, or removed if the block fails).

    ``compression`` and ``dictionary`` (the columns that get one; None: all) are Parquet's."""

    def __init__(
        self,
        dest: str,
        schema: Any,
        column: str,
        name: str,
        *,
        compression: str = "snappy",
        dictionary: Sequence[str] | None = None,
    ):
        self.dest, self.column, self.name = dest, column, name
        self.schema = schema.remove(schema.get_field_index(column))  # the folder's name says it
        self.compression = compression
        self.dictionary = True if dictionary is None else [c for c in dictionary if c != column]
        self.attempt = uuid.uuid4().hex  # two attempts of one task (a speculative copy) never share a file
        self.pending: dict[str, list[dict[str, Any]]] = {}
        self.writers: dict[str, Any] = {}
        self.counts: dict[str, int] = {}

    def __enter__(self) -> KindFiles:
        return self

    def __exit__(self, failed: object, *_: object) -> None:
        if failed is not None:
            self.abort()
            return
        try:
            self.close()
        except BaseException:
            self.abort()
            raise

    def add(self, row: dict[str, Any]) -> None:
        kind = row[self.column]
        got = self.pending.get(kind)
        if got is None:
            got = self.pending[kind] = []
        got.append(row)
        if len(got) >= ROW_GROUP_ROWS:
            self._flush(kind)

    def _path(self, kind: str, hidden: bool) -> str:
        folder = os.path.join(self.dest, f"{self.column}={kind}")
        return os.path.join(folder, f".{self.name}.{self.attempt}.tmp" if hidden else f"{self.name}.parquet")

    def _flush(self, kind: str) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        rows = self.pending.pop(kind, [])
        if not rows:
            return
        writer = self.writers.get(kind)
        if writer is None:
            os.makedirs(os.path.dirname(self._path(kind, True)), exist_ok=True)
            writer = self.writers[kind] = pq.ParquetWriter(
                self._path(kind, True),
                self.schema,
                compression=self.compression,
                use_dictionary=self.dictionary,
            )
        writer.write_batch(pa.RecordBatch.from_pylist(rows, schema=self.schema), row_group_size=len(rows))
        self.counts[kind] = self.counts.get(kind, 0) + len(rows)

    def close(self) -> dict[str, int]:
        """Every file written and renamed into place; the rows of each kind."""
        for kind in list(self.pending):
            self._flush(kind)
        for writer in self.writers.values():
            writer.close()
        for kind in self.writers:
            os.replace(self._path(kind, True), self._path(kind, False))
        self.writers.clear()
        return dict(self.counts)

    def abort(self) -> None:
        """The task failed: its unfinished files removed (the task's own error is the one raised)."""
        for kind, writer in self.writers.items():
            with contextlib.suppress(Exception):
                writer.close()
            with contextlib.suppress(OSError):
                os.remove(self._path(kind, True))
        self.writers.clear()
        self.pending.clear()
