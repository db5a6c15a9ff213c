"""The forecast of every folder of a replay: its inputs read from the log (the mail on its way at
the as-of) and the replay's folds, its rows for the ``forecast`` and ``forecast_requests`` tables.
The Spark job makes the same rows folder by folder inside its partitions (``forecast_folder``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pfscope.spark_jobs.model.events import Event, Message
from pfscope.spark_jobs.model.fold import FolderFold
from pfscope.spark_jobs.model.forecast.folder import forecast_folder
from pfscope.spark_jobs.model.forecast.world import Transits
from pfscope.spark_jobs.model.org import OrgContext
from pfscope.spark_jobs.model.rules.timeouts import QUEUE_EXPIRY


def in_flight(events: Iterable[Event], as_of: int) -> dict[str, list[tuple[Message, str]]]:
    """Per folder, the messages on their way at the as-of: sent less than the queue expiry before
    it, with each recipient that had not processed them by then (``events``: those up to it)."""
    events = list(events)
    processed = {(e.message.msg, e.store) for e in events if e.kind == "receive" and e.message is not None}
    out: dict[str, list[tuple[Message, str]]] = {}
    for ev in events:
        m = ev.message
        if ev.kind != "send" or m is None or as_of - m.sent_at >= QUEUE_EXPIRY:
            continue
        for dst in m.to:
            if (m.msg, dst) not in processed:
                out.setdefault(m.fid, []).append((m, dst))
    return out


def forecast_tables(
    folds: Mapping[tuple[str, str], FolderFold],
    org: OrgContext,
    mail: Mapping[str, list[tuple[Message, str]]],
    as_of: int,
    transits: Transits,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``forecast`` and ``forecast_requests`` rows of every folder (``folds`` by (store, fid))."""
    by_folder: dict[str, dict[str, FolderFold]] = {}
    for (store, fid), fold in folds.items():
        by_folder.setdefault(fid, {})[store] = fold
    forecast: list[dict[str, Any]] = []
    requests: list[dict[str, Any]] = []
    for fid in sorted(by_folder):
        rows = forecast_folder(org, fid, by_folder[fid], mail.get(fid, ()), as_of, transits)
        forecast += rows.forecast
        requests += rows.requests
    return forecast, requests
