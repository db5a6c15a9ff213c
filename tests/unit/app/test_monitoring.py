"""The alert rules shipped with the package: valid for Debian's promtool, unit-tested by
``promtool test rules`` (pfscope-rules.test.yml beside this file), and about metrics /metrics serves."""

from __future__ import annotations

import re
import shutil
import subprocess
from importlib import resources
from pathlib import Path

import pytest
import yaml

from pfscope.app.metrics import METRIC_NAMES
from pfscope.app.monitoring import RULES_PATH

HERE = Path(__file__).resolve().parent
RULE_TESTS = HERE / "pfscope-rules.test.yml"


def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.fail("promtool is missing: run scripts/setup with PFSCOPE_PROMETHEUS=1 (scripts/test does)")
    return path


def rules() -> list[dict]:  # type: ignore[type-arg]
    return [r for g in yaml.safe_load(RULES_PATH.read_text())["groups"] for r in g["rules"]]


def test_the_rules_ship_as_package_data() -> None:
    shipped = resources.files("pfscope.app.monitoring") / "pfscope-rules.yml"
    assert shipped.is_file() and shipped.read_text() == RULES_PATH.read_text()


def test_promtool_checks_the_rules() -> None:
    done = subprocess.run(
        [promtool(), "check", "rules", str(RULES_PATH)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(rules())} rules found" in done.stdout + done.stderr


def test_promtool_unit_tests_pass() -> None:
    done = subprocess.run(
        [promtool(), "test", "rules", str(RULE_TESTS)], capture_output=True, text=True, timeout=120, cwd=HERE
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout + done.stderr


def test_promtool_unit_tests_catch_a_wrong_expectation(tmp_path: Path) -> None:
    """The harness can fail: the same tests with one expected value changed do."""
    text = RULE_TESTS.read_text().replace("../../../app/monitoring/pfscope-rules.yml", str(RULES_PATH))
    wrong = tmp_path / "wrong.test.yml"
    wrong.write_text(
        text.replace(
            'summary: "PFS1: 2 overdue backfill entries"', 'summary: "PFS1: 3 overdue backfill entries"'
        )
    )
    done = subprocess.run(
        [promtool(), "test", "rules", str(wrong)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0 and "FAILED" in done.stdout + done.stderr


def test_every_rule_is_unit_tested_and_reads_only_served_metrics() -> None:
    alerts = {r["alert"] for r in rules()}
    tested = {
        a["alertname"]
        for t in yaml.safe_load(RULE_TESTS.read_text())["tests"]
        for a in t["alert_rule_test"]
        if a.get("exp_alerts")
    }
    assert tested == alerts
    for r in rules():
        for name in re.findall(r"\bpfscope_[a-z_]+", r["expr"]):
            assert name in METRIC_NAMES, (r["alert"], name)
    # the five alerts, and the two that say the figures themselves are missing
    assert alerts == {
        "PfscopeReplicaOverdue",
        "PfscopeContentAtRisk",
        "PfscopeStoreDown",
        "PfscopeRunStale",
        "PfscopeRejectedInput",
        "PfscopeNoRun",
        "PfscopeMetricsAbsent",
    }


def test_pfscope_rules_prints_the_file_or_its_path(capsys: pytest.CaptureFixture[str]) -> None:
    from pfscope.app.cli import main

    assert main(["rules"]) == 0
    assert capsys.readouterr().out == RULES_PATH.read_text()
    assert main(["rules", "--path"]) == 0
    printed = Path(capsys.readouterr().out.strip())
    assert printed == RULES_PATH and printed.is_file()
