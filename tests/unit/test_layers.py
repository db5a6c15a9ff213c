"""Imports point one way: the model at the bottom, the command line on top.

Every ``import`` statement counts, those inside functions (lazy imports) included:

    spark_jobs.model      plain Python: imports nothing else of pfscope, and no Spark
    spark_jobs.simulator  the model only
    spark_jobs.ingest     the model only
    spark_jobs (the job)  the model, the simulator and ingest; never app
    app                   spark_jobs and app; never app.cli
    app.cli               the top: nothing imports it
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def modules() -> dict[str, Path]:
    found = {}
    for top in ("app", "spark_jobs"):
        for path in (ROOT / top).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def imports_of(name: str, path: Path) -> set[str]:
    """Every module ``name`` imports, at any depth of its code (relative imports resolved)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            out.add(base)
            out |= {f"{base}.{a.name}" for a in node.names}
    return out


def layer(module: str) -> str:
    for prefix in ("spark_jobs.model", "spark_jobs.simulator", "spark_jobs.ingest", "app.cli", "spark_jobs", "app"):
        if module == prefix or module.startswith(prefix + "."):
            return prefix
    return "outside"


#: what each layer may import of pfscope (and "pyspark": whether Spark may be imported)
ALLOWED = {
    "spark_jobs.model": {"spark_jobs.model"},
    "spark_jobs.simulator": {"spark_jobs.model", "spark_jobs.simulator"},
    "spark_jobs.ingest": {"spark_jobs.model", "spark_jobs.ingest"},
    "spark_jobs": {"spark_jobs.model", "spark_jobs.simulator", "spark_jobs.ingest", "spark_jobs", "pyspark"},
    "app": {"spark_jobs.model", "spark_jobs.simulator", "spark_jobs.ingest", "spark_jobs", "app"},
    "app.cli": {"spark_jobs.model", "spark_jobs.simulator", "spark_jobs.ingest", "spark_jobs", "app", "app.cli"},
}


@pytest.mark.parametrize("name", sorted(modules()))
def test_imports_point_down(name: str) -> None:
    path = modules()[name]
    mine = layer(name)
    wrong = []
    for imported in sorted(imports_of(name, path)):
        if imported.split(".")[0] == "pyspark":
            if "pyspark" not in ALLOWED[mine]:
                wrong.append(imported)
            continue
        theirs = layer(imported)
        if theirs != "outside" and theirs not in ALLOWED[mine]:
            wrong.append(imported)
    assert not wrong, f"{name} ({mine}) imports {wrong}"


def test_the_layers_test_sees_lazy_and_relative_imports() -> None:
    """The checker itself: an import inside a function and a relative import are both seen."""
    seen = imports_of("spark_jobs.ingest.build", ROOT / "spark_jobs" / "ingest" / "build.py")
    assert "spark_jobs.ingest.formats" in seen
    assert "spark_jobs.publish" in imports_of("app.cli", ROOT / "app" / "cli.py") or \
        "spark_jobs.job" in imports_of("app.cli", ROOT / "app" / "cli.py")
    assert layer("app.cli") == "app.cli" and layer("spark_jobs.model.fold") == "spark_jobs.model"
