"""One SparkSession for the whole Spark suite (local[2], UI off, few shuffle partitions)."""

from __future__ import annotations

import os
import time

import pytest

os.environ["TZ"] = "UTC"  # collected timestamps come back in this process's local time
time.tzset()


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    from tests.published_runs import suite_session

    session = suite_session()
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def _release_cached_tables(request):  # type: ignore[no-untyped-def]
    """Each job caches its parsed log and verdicts; a long-lived test session must drop them
    between tests, as a finished ``pfscope compute`` does by exiting."""
    yield
    if "spark" in request.fixturenames:
        request.getfixturevalue("spark").catalog.clearCache()
