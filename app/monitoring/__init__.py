"""The Prometheus alert rules shipped with pfscope (``pfscope-rules.yml``, package data)."""

from __future__ import annotations

from pathlib import Path

#: the rule file to list under ``rule_files`` in prometheus.yml (``pfscope rules`` prints it)
RULES_PATH = Path(__file__).resolve().parent / "pfscope-rules.yml"
