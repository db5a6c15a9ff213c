"""Rows as an Arrow table of their declared types: read as one array of structs, each column is
what converting that column's values alone gives (the conversion as first written, kept here)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pfscope.spark_jobs.compute.arrow_rows import ARROW_TYPES, arrow_table
from pfscope.spark_jobs.model.tables import TABLES, Columns

COLUMNS: Columns = [(f"c_{kind}", kind) for kind in ARROW_TYPES]
VALUES = {
    "string": st.text(),
    "long": st.integers(-(2**63), 2**63 - 1),
    "double": st.one_of(st.floats(allow_nan=False), st.integers(-(2**53), 2**53)),
    "boolean": st.booleans(),
    "timestamp": st.integers(-(2**62), 2**62),
    "array<string>": st.lists(st.one_of(st.none(), st.text()), max_size=3),
}
row = st.fixed_dictionaries(
    {},
    optional={name: st.one_of(st.none(), VALUES[kind]) for name, kind in COLUMNS} | {"extra": st.integers()},
)


def by_column(columns: Columns, rows: list[dict[str, Any]]) -> pa.Table:
    """Each column's values converted alone."""
    schema = pa.schema([(name, ARROW_TYPES[kind]) for name, kind in columns])
    arrays = []
    for f in schema:
        values = [r.get(f.name) for r in rows]
        if pa.types.is_timestamp(f.type):
            arrays.append(pa.array(values, pa.int64()).cast(f.type))
        else:
            arrays.append(pa.array(values, f.type))
    return pa.Table.from_arrays(arrays, schema=schema)


@settings(deadline=None)
@given(st.lists(row, max_size=30))
def test_rows_as_structs_equal_each_column_alone(rows: list[dict[str, Any]]) -> None:
    got, want = arrow_table(COLUMNS, rows), by_column(COLUMNS, rows)
    assert got.schema == want.schema
    assert got.equals(want)


def test_every_declared_table_of_no_rows() -> None:
    for columns in TABLES.values():
        got = arrow_table(columns, [])
        assert got.num_rows == 0 and got.schema == by_column(columns, []).schema


@pytest.mark.parametrize(("kind", "value"), [("string", 1), ("long", "1"), ("timestamp", "2026-01-01")])
def test_a_value_of_another_type_fails_as_alone(kind: str, value: object) -> None:
    columns: Columns = [("c", kind)]
    with pytest.raises((pa.ArrowTypeError, pa.ArrowInvalid)) as alone:
        by_column(columns, [{"c": value}])
    with pytest.raises(alone.type):
        arrow_table(columns, [{"c": value}])
