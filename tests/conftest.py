"""Shared fixtures. Tests mirror the code's layout: unit/ (plain Python), spark/, e2e/.

``scripts/test`` runs the suite in two processes (pytest-xdist, ``--dist loadgroup``): the e2e
tests stay together in one (they share the published runs, the served dashboards and the
browser of that process's session), the Spark tests together in the other as far as the
scheduler can (they share one SparkSession), and the plain-Python tests go wherever a process
is free. Run alone (no ``-n``), the groups mean nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
#: the test folders whose tests share a process's session-scoped fixtures under xdist
GROUPS = ("e2e", "spark")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.pluginmanager.hasplugin("xdist"):  # -p no:xdist: no groups to mark
        return
    for item in items:
        try:
            folder = Path(str(item.fspath)).resolve().relative_to(HERE).parts[0]
        except ValueError:
            continue
        if folder in GROUPS:
            item.add_marker(pytest.mark.xdist_group(folder))
