"""How many workers ``pfscope serve`` starts."""

from __future__ import annotations

import pytest

from app.serve import default_workers, workers_from
from app.settings import SettingsError


def test_flag_wins_over_the_environment_which_wins_over_the_default() -> None:
    assert workers_from(3, {"PFSCOPE_WORKERS": "5"}) == 3
    assert workers_from(None, {"PFSCOPE_WORKERS": "5"}) == 5
    assert workers_from(None, {"PFSCOPE_WORKERS": " "}) == default_workers()
    assert workers_from(None, {}) == default_workers()
    assert 1 <= default_workers() <= 12


@pytest.mark.parametrize(("flag", "env", "match"), [
    (None, {"PFSCOPE_WORKERS": "lots"}, "PFSCOPE_WORKERS='lots' is not a whole number"),
    (None, {"PFSCOPE_WORKERS": "0"}, r"workers: 0 \(need at least 1\)"),
    (-1, {}, r"workers: -1 \(need at least 1\)"),
])
def test_bad_counts_are_one_line_errors(flag: int | None, env: dict[str, str], match: str) -> None:
    with pytest.raises(SettingsError, match=match):
        workers_from(flag, env)
