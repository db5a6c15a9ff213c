"""The event lines of ingest's build, written where the workers made them: ``events.jsonl`` and
the log by block and folder (``exchange.event_files``), in one pass over the lines sorted by their
place in the log, which never passes through the driver."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from pfscope.spark_jobs.exchange.event_files import AppendFiles, block_of_file, fill_blocks

LINES_PER_PART = 200_000  # event lines per range of the final sort (about 40 MB)


def _joined(parts: list[Path], path: Path) -> None:
    """``parts`` joined in their order into ``path``."""
    with open(path, "wb") as fh:
        for f in parts:
            with open(f, "rb") as part_file:
                shutil.copyfileobj(part_file, fh, 1 << 20)


def write_lines(lines: DataFrame, n: int, work: str, path: Path, folder: Path) -> None:
    """``events.jsonl`` and the log by block and folder (``event_files``) from the lines as the
    workers made them, in one pass: the lines sorted in ranges of at most ``LINES_PER_PART``,
    each range written by its worker whole and a file per name, then the files joined in range
    order. A line with a message only goes in the file of the last send of it in the log (a
    broadcast of the sends). The lines never pass through the driver's JVM (converting 172,000
    rows for Python cost more than writing them) nor its Python (parsing them again there to
    place them: 11 s at 1M events)."""
    sends = (
        lines.where("skey IS NOT NULL")
        .groupBy("skey")
        .agg(F.max_by("sname", "sort").alias("via"))
        .withColumnRenamed("skey", "mkey")
    )
    root = os.path.abspath(work)  # a worker's working folder is not the driver's
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        from pyspark import TaskContext

        task = TaskContext.get()
        assert task is not None  # a Spark task runs this
        # an attempt writes apart and is renamed in whole: a task tried again starts afresh
        mine = Path(root) / f"part-{task.partitionId():05d}"
        attempt = Path(root) / f".attempt-{task.partitionId():05d}-{task.attemptNumber()}"
        shutil.rmtree(attempt, ignore_errors=True)
        (attempt / "by_name").mkdir(parents=True)
        with (
            AppendFiles(attempt / "by_name") as by_name,
            open(attempt / "range", "w", encoding="utf-8") as whole,
        ):
            for batch in batches:
                names, texts = batch.column(0).to_pylist(), batch.column(1).to_pylist()
                for name, text in zip(names, texts, strict=True):
                    line = text + "\n"
                    whole.write(line)
                    by_name.write(name, line)
        shutil.rmtree(mine, ignore_errors=True)
        attempt.rename(mine)
        return iter(())

    lines.join(F.broadcast(sends), "mkey", "left").selectExpr(
        "coalesce(via, name) AS name", "sort", "text"
    ).repartitionByRange(n, "sort").sortWithinPartitions("sort").select("name", "text").mapInArrow(
        run, "n long"
    ).collect()
    ranges = sorted(Path(root).glob("part-*"))
    _joined([r / "range" for r in ranges], path)
    folder.mkdir(parents=True)
    named: dict[str, list[Path]] = {}
    for r in ranges:
        for f in sorted((r / "by_name").iterdir()):
            named.setdefault(f.name, []).append(f)
    for name, files in named.items():
        _joined(files, folder / name)
    fill_blocks(folder, {block_of_file(name) for name in named})
