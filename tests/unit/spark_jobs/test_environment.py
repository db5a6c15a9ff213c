"""Whole numbers from PFSCOPE_* variables."""

from __future__ import annotations

import pytest

from spark_jobs.environment import env_int


class LayerError(Exception):
    pass


def test_unset_blank_and_numbers() -> None:
    assert env_int({}, "PFSCOPE_X", LayerError) is None
    assert env_int({"PFSCOPE_X": "  "}, "PFSCOPE_X", LayerError) is None
    assert env_int({"PFSCOPE_X": " 7 "}, "PFSCOPE_X", LayerError) == 7
    assert env_int({"PFSCOPE_X": "-2"}, "PFSCOPE_X", LayerError) == -2  # the caller checks the range


def test_other_text_is_the_callers_error_naming_the_variable() -> None:
    with pytest.raises(LayerError, match=r"PFSCOPE_X='many' is not a whole number"):
        env_int({"PFSCOPE_X": "many"}, "PFSCOPE_X", LayerError)
