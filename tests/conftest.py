"""Shared fixtures and the suite's two test processes. Tests mirror the code's layout: unit/
(plain Python), spark/, e2e/.

``scripts/test`` runs the suite in two processes (pytest-xdist, ``--dist loadgroup``), which
share what is costly to make:

- the published runs (``tests/published_runs.py``) are built once, by the process that first
  needs one, in a folder of the session made here (``$PFSCOPE_TEST_SHARED``), and read by both;
- a test file runs whole in one process (its module fixtures are made once), the longest files
  first: the e2e, integration and Spark files, then the plain-Python ones
  (:func:`pytest_xdist_make_scheduler`).

Each process has its own SparkSession, browser and served dashboards. Run alone (no ``-n``),
the suite is the same with one process.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

import pytest

from tests.published_runs import SHARED

#: the test folders whose files go first: few tests each, but long ones
LONG = ("e2e", "integration", "spark")


def pytest_configure(config: pytest.Config) -> None:
    """In the first process (xdist's controller, or the only one), the session's shared folder of
    published runs; the test processes it starts inherit its name."""
    if hasattr(config, "workerinput") or os.environ.get(SHARED):
        return
    path = tempfile.mkdtemp(prefix="pfscope-tests-")
    os.environ[SHARED] = path
    config.add_cleanup(lambda: (shutil.rmtree(path, ignore_errors=True), os.environ.pop(SHARED, None)))


@pytest.hookimpl(optionalhook=True)  # an xdist hook: none without xdist (-p no:xdist)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under ``--dist loadgroup``, xdist's load-by-scope scheduler with a file as the scope and
    the long folders' files first. (xdist's own ``xdist_group`` marks have no effect with
    pytest 9: they rename the node id through an attribute pytest no longer reads.)"""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    config.option.loadscopereorder = False  # the files in collection order, not by number of tests

    class LongFilesFirst(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return nodeid.split("::", 1)[0]

    return LongFilesFirst(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The long folders' tests first (so their files are scheduled first), each folder's in order."""

    def long_first(item: pytest.Item) -> int:
        parts = item.nodeid.split("/")
        return 0 if len(parts) > 2 and parts[1] in LONG else 1

    items.sort(key=long_first)  # stable: the order within each kind is kept
