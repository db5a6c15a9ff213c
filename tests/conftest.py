"""Shared fixtures. Tests mirror the code's layout: unit/ (plain Python), spark/, e2e/.

``scripts/test`` runs the suite in two processes (pytest-xdist, ``--dist loadgroup``): the e2e
tests stay together in one (they share the published runs, the served dashboards and the
browser of that process's session), the Spark tests together in the other as far as the
scheduler can (they share one SparkSession), and the plain-Python tests go wherever a process
is free. Run alone (no ``-n``), the groups mean nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
#: the test folders whose tests share a process's session-scoped fixtures under xdist
GROUPS = ("e2e", "spark")


@pytest.hookimpl(optionalhook=True)  # an xdist hook: none without xdist (-p no:xdist)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under ``--dist loadgroup``, xdist's load-by-scope scheduler with a test's scope its folder
    for the e2e and Spark tests (each folder's tests in one process), itself for the others.
    (xdist's own groups, ``xdist_group`` marks, have no effect with pytest 9: they rename the
    node id through an attribute pytest no longer reads.)"""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class FolderGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            parts = nodeid.split("/")
            if len(parts) > 2 and parts[0] == HERE.name and parts[1] in GROUPS:
                return parts[1]
            return nodeid

    return FolderGroups(config, log)
