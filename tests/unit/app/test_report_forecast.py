"""The reports' forecast (app/report/forecast.py, and the forecast in the attention list and the
folder's verdict), on the Spark-published demo: what they say equals the ``forecast`` table read
straight from Parquet (its blocked replicas: PFJNB02's, down at the as-of)."""

from __future__ import annotations

import html as htmllib
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from pfscope.app.data import RunData, require_run
from pfscope.app.figures.outages import short_time
from pfscope.app.report import build_report
from pfscope.spark_jobs.model.forecast.folder import duration
from tests.published_runs import published
from tests.unit.app.test_report import parquet, read_report, records, values


@pytest.fixture(scope="module")
def demo() -> Path:
    return published("demo")


@pytest.fixture(scope="module")
def demo_run(demo: Path) -> RunData:
    return RunData(require_run(demo))


@pytest.fixture(scope="module")
def org(demo_run: RunData) -> str:
    return build_report(demo_run)


def reasons(row: Any) -> list[str]:
    """A blocked replica's reasons: its blocked_by's parts, without the last of one that waits for
    stores (the data contract: the text then ends with what their return would do)."""
    parts = str(row["blocked_by"]).split("; ")
    waits = row["waits_for"]
    return parts[:-1] if waits is not None and len(waits) and len(parts) > 1 else parts


def _utc(frame: pd.DataFrame) -> pd.DataFrame:
    for col in ("in_sync_at", "latest_in_sync_at"):
        frame[col] = pd.to_datetime(frame[col], utc=True)
    return frame


def test_the_org_report_draws_the_recovery_chart_from_the_forecast(demo: Path, org: str) -> None:
    forecast = _utc(parquet(demo, "forecast"))
    blocked = forecast[forecast["in_sync_at"].isna()]
    assert len(forecast) > 0 and len(blocked) > 0  # the demo: PFJNB02 is down, its replicas held back
    r = read_report(org)
    text = re.sub(r"\s+", " ", "".join(r.section_text["forecast"]))
    assert f"{len(forecast):,} replicas lack CNs at the as-of (what is so)" in text
    assert (
        f"{len(forecast) - len(blocked):,} will be in sync, the last by ~{short_time(forecast['in_sync_at'].max())}"
        in text
    )
    assert f"({short_time(forecast['latest_in_sync_at'].max())} at the latest, if a reply is lost)" in text
    assert f"{len(blocked):,} will not catch up within 14 days" in text
    assert "A forecast of what is so, not a store's belief: the model's rules played forward" in text
    # the chart: both step lines end on the floor, the floor is the blocked replicas
    [fig_id] = [k for k, s in r.figure_section.items() if s == "forecast"]
    traces = {t["name"]: t for t in r.figures[fig_id]["data"]}
    solid = values(traces["by the forecast"]["y"])
    dashed = values(traces["at the latest (the first reply of each entry lost)"]["y"])
    floor = values(traces["will not catch up within 14 days"]["y"])
    assert solid[0] == dashed[0] == len(forecast)
    assert solid[-1] == floor[0] == len(blocked)
    assert dashed[-1] == len(blocked) + int(forecast["latest_in_sync_at"].isna().sum() - len(blocked))
    assert list(solid) == sorted(solid, reverse=True)  # a step line down
    # its numbers in a table (a printed report has no hover), and why the floor is there
    table = records(r.sections["forecast"][0])
    assert table[0]["still lacking CNs, by the forecast"] == f"{len(forecast):,}"
    assert table[-1]["still lacking CNs, by the forecast"] == f"{len(blocked):,}"
    groups = pd.Series([p for _, row in blocked.iterrows() for p in reasons(row)]).value_counts()
    for why, n in groups.items():  # the demo's reasons carry no CN set
        assert f"{n:,} replica{'s' if n > 1 else ''}: {why}" in text
    # what the return of the store they wait for would do
    waiting = blocked[[w is not None and len(w) > 0 for w in blocked["waits_for"]]]
    assert len(waiting) == len(blocked)  # the demo: all of them wait for PFJNB02
    assert (
        f"once PFJNB02 is back, all {len(waiting)} in sync within ~{duration(waiting['after_back_s'].max())}"
        in text
    )
    # the table of contents links to it
    assert '<a href="#forecast">' in org


def test_the_org_reports_causes_and_attention_list_end_with_the_forecast(demo: Path, org: str) -> None:
    forecast = _utc(parquet(demo, "forecast"))
    r = read_report(org)
    summary = htmllib.unescape(" ".join(r.section_text["summary"]))
    blocked = forecast[(forecast["store"] == "PFJNB02") & forecast["in_sync_at"].isna()]
    assert (
        f"{len(blocked)} replicas of its own lack CNs; forecast: all {len(blocked)} replicas will not catch up "
        "within 14 days: PFJNB02 is down since"
    ) in summary
    listed = records(r.sections["worst"][0])
    assert listed and all("forecast" in row for row in listed)
    for row in listed:
        mine = forecast[forecast["fid"] == row["FID"]]
        said = row["forecast"]
        if mine.empty:
            assert said == "none lacks CNs"
            continue
        coming, stuck = mine[mine["in_sync_at"].notna()], mine[mine["in_sync_at"].isna()]
        if len(mine) > 1 and len(coming):
            assert f"in sync by ~{short_time(coming['in_sync_at'].max())}" in said, (row["FID"], said)
        if len(mine) > 1 and len(stuck):
            assert f"{len(stuck)} replica{'s' if len(stuck) > 1 else ''} will not catch up" in said, said
        if len(mine) == 1:
            assert said.startswith(f"{mine.iloc[0]['store']}: "), said


def test_the_folder_reports_verdict_ends_each_replicas_line_with_its_forecast(
    demo: Path, demo_run: RunData
) -> None:
    forecast = _utc(parquet(demo, "forecast"))
    fid = "1-2C3E"  # a replica held back by PFJNB02 and one that catches up
    mine = forecast[forecast["fid"] == fid].set_index("store")
    assert mine["in_sync_at"].isna().any() and mine["in_sync_at"].notna().any()
    page = build_report(demo_run, fid=fid)
    lines = {
        store: htmllib.unescape(re.sub(r"<[^>]+>", "", text))
        for store, text in re.findall(r'<li class="tier-\w+" data-store="([^"]+)">(.*?)</li>', page)
    }
    for store, row in mine.iterrows():
        line = lines[str(store)]
        if pd.isna(row["in_sync_at"]) and row["waits_for"] is not None and len(row["waits_for"]):
            who = " and ".join(row["waits_for"])
            assert line.endswith(f"forecast: not in sync until {who} is back: {row['blocked_by']}."), line
        elif pd.isna(row["in_sync_at"]):
            assert line.endswith(f"forecast: will not catch up within 14 days: {row['blocked_by']}."), line
        else:
            assert f"; forecast: in sync by ~{short_time(row['in_sync_at'])}" in line, line
