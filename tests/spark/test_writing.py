"""``writing.InputFiles``: its SQL test (what a refresh drops of the earlier state in Spark) and
its pyarrow twin (what it reads and rewrites in the driver) pick the same rows."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.parquet as pq

from pfscope.spark_jobs.compute.writing import UNIQUE_COLUMNS, InputFiles, write_table
from pfscope.spark_jobs.model.events import make_seq


def test_input_files_sql_and_arrow_agree(spark) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(7)
    seqs = [make_seq(rng.randrange(6), rng.choice([0, 1, 2**31, 2**32 - 1])) for _ in range(300)]
    seqs += [None, make_seq(0, 0), make_seq(5, 2**32 - 1)]
    rows = [(i, s) for i, s in enumerate(seqs)]
    df = spark.createDataFrame(rows, "i int, seq long")
    table = pa.table({"i": [i for i, _ in rows], "seq": pa.array(seqs, pa.int64())})
    for indexes in ({0}, {5}, {1, 3}, set(range(6)), {9}):
        inputs = InputFiles(frozenset(indexes))
        in_sql = {r["i"] for r in df.where(inputs.sql()).collect()}
        in_arrow = set(table.filter(inputs.holds(table.column("seq"))).column("i").to_pylist())
        expected = {i for i, s in rows if s is not None and s >> 32 in indexes}
        assert in_sql == in_arrow == expected
        # the complement keeps every other row, those without a line among them
        kept = {r["i"] for r in df.where(f"NOT {inputs.sql()}").collect()}
        assert kept == {i for i, _ in rows} - expected


def test_unique_columns_are_written_without_a_dictionary(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    # the dictionary of a column whose values never repeat is built, then thrown away; a column
    # with few values keeps its own. Here every column repeats (so Parquet's default keeps each
    # one's dictionary) and the option alone leaves it out
    rows = [(make_seq(0, i % 7), f"key-{i % 11:06d}", f"store-{i % 3}") for i in range(3000)]
    df = spark.createDataFrame(rows, "seq long, key string, store string")
    assert {"seq", "key"} <= set(UNIQUE_COLUMNS["_state/lines"])
    for name, unique in (("_state/lines", {"seq", "key"}), ("state_table", set())):
        out = tmp_path / name.replace("/", "_")
        write_table(df, name, str(out))
        encodings: dict[str, set[str]] = {}
        for f in out.glob("*.parquet"):
            meta = pq.ParquetFile(f).metadata
            for g in range(meta.num_row_groups):
                for c in range(meta.num_columns):
                    col = meta.row_group(g).column(c)
                    encodings.setdefault(col.path_in_schema, set()).update(col.encodings)
        dictionary = {c for c, e in encodings.items() if {"PLAIN_DICTIONARY", "RLE_DICTIONARY"} & e}
        assert "store" in dictionary, name
        assert dictionary.isdisjoint(unique), (name, encodings)
        if not unique:  # Spark's default: a dictionary on every column where it pays
            assert {"seq", "key"} <= dictionary
