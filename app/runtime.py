"""The running app's view of the data: the settings and cache stored on the Flask app.

Pages call :func:`current_data` in their layouts and callbacks; it follows ``LATEST`` on every
call, so a newly published run is shown without a restart, and its cache keys carry the new
run id.
"""

from __future__ import annotations

from typing import Any

from flask import current_app

from pfscope.app.data import RunData, find_run
from pfscope.app.settings import Settings
from pfscope.spark_jobs.published.runs import PublishError

EXTENSION = "pfscope"


def settings() -> Settings:
    return current_app.extensions[EXTENSION]["settings"]


def cache() -> Any:
    return current_app.extensions[EXTENSION]["cache"]


def current_data() -> RunData | None:
    """The published run's data (cached per run id), or None when nothing is published yet."""
    s = settings()
    try:
        run = find_run(s.data_dir)
    except PublishError as e:  # a damaged LATEST: say "no run" on the page, the reason in the log
        current_app.logger.warning("pfscope: %s", e)
        return None
    if run is None:
        return None
    return RunData(run, cache(), timeout=s.cache_timeout)
