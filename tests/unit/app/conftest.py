"""The worked example published by the real Spark job (once per session, shared with tests/e2e)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.published_runs import published


@pytest.fixture(scope="session")
def we_data() -> Path:
    return published("worked-example")
