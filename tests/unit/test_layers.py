"""Imports point one way: the model at the bottom, the command line on top, and no circle.

Every ``import`` statement counts, those inside functions (lazy imports) included:

    spark_jobs.model      plain Python: imports nothing else of pfscope, and no Spark
    spark_jobs.simulator  the model only
    spark_jobs.exchange   the model only (Exchange's exports read in plain Python)
    spark_jobs.published  the model only (the published runs' format: the job writes it, the app reads it)
    spark_jobs.runtime    the model and Spark (session, class archive, workers' daemon and files)
    spark_jobs.compute    the model, the simulator, published runs, the runtime; never ingest
    spark_jobs.ingest     the model, the readers, published runs, the runtime; never compute
    app                   all of spark_jobs and app; never app.cli
    app.cli               the top: nothing imports it
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
P = "pfscope."


def modules() -> dict[str, Path]:
    found = {}
    for top in ("app", "spark_jobs"):
        for path in (ROOT / top).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[P + ".".join(parts)] = path
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


#: the layers, most specific first
LAYERS = tuple(
    P + n
    for n in (
        "spark_jobs.model",
        "spark_jobs.simulator",
        "spark_jobs.exchange",
        "spark_jobs.published",
        "spark_jobs.runtime",
        "spark_jobs.compute",
        "spark_jobs.ingest",
        "app.cli",
        "spark_jobs",
        "app",
    )
)


def layer(module: str) -> str:
    for prefix in LAYERS:
        if module == prefix or module.startswith(prefix + "."):
            return prefix.removeprefix(P)
    return "outside"


BELOW_APP = {
    "spark_jobs.model",
    "spark_jobs.simulator",
    "spark_jobs.exchange",
    "spark_jobs.published",
    "spark_jobs.runtime",
    "spark_jobs.compute",
    "spark_jobs.ingest",
}
#: what each layer may import of pfscope (and "pyspark": whether Spark may be imported)
ALLOWED = {
    "spark_jobs.model": {"spark_jobs.model"},
    "spark_jobs.simulator": {"spark_jobs.model", "spark_jobs.simulator"},
    "spark_jobs.exchange": {"spark_jobs.model", "spark_jobs.exchange"},
    "spark_jobs.published": {"spark_jobs.model", "spark_jobs.published"},
    "spark_jobs.runtime": {"spark_jobs.model", "spark_jobs.runtime", "pyspark"},
    "spark_jobs.compute": {
        "spark_jobs.model",
        "spark_jobs.simulator",
        "spark_jobs.published",
        "spark_jobs.runtime",
        "spark_jobs.compute",
        "pyspark",
    },
    "spark_jobs.ingest": {
        "spark_jobs.model",
        "spark_jobs.exchange",
        "spark_jobs.published",
        "spark_jobs.runtime",
        "spark_jobs.ingest",
        "pyspark",
    },
    "spark_jobs": {"spark_jobs"},
    "app": BELOW_APP | {"app"},
    "app.cli": BELOW_APP | {"app", "app.cli"},
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
        if imported.split(".")[0] in ("app", "spark_jobs"):
            wrong.append(f"{imported} (pfscope's modules are imported as pfscope.*)")
            continue
        theirs = layer(imported)
        if theirs != "outside" and theirs not in ALLOWED[mine]:
            wrong.append(imported)
    assert not wrong, f"{name} ({mine}) imports {wrong}"


def import_graph() -> dict[str, set[str]]:
    """Module -> the pfscope modules it imports (a package's ``__init__`` counts as a module)."""
    found = modules()
    return {
        name: {m for m in imports_of(name, path) if m in found and m != name} for name, path in found.items()
    }


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_module_imports_itself_back() -> None:
    """No circle, lazy imports included, within a layer too: a newcomer can read the modules bottom-up."""
    assert circles(import_graph()) == []


def test_the_circle_finder_finds_circles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert circles(graph) == [["a", "b", "c"]]


def test_the_layers_test_sees_lazy_and_relative_imports() -> None:
    """The checker itself: an import inside a function and a relative import are both seen."""
    seen = imports_of(P + "spark_jobs.exchange.build", ROOT / "spark_jobs" / "exchange" / "build.py")
    assert P + "spark_jobs.exchange.formats" in seen
    cli = imports_of(P + "app.cli", ROOT / "app" / "cli.py")
    assert P + "spark_jobs.published.runs" in cli or P + "spark_jobs.compute.entry" in cli
    assert layer(P + "app.cli") == "app.cli" and layer(P + "spark_jobs.model.fold") == "spark_jobs.model"
    relative = imports_of(P + "spark_jobs.x.y", _written(ROOT, "from .z import w\n"))
    assert P + "spark_jobs.x.z" in relative


def _written(root: Path, text: str) -> Path:
    import tempfile

    folder = Path(tempfile.mkdtemp())
    (folder / "y.py").write_text(text)
    return folder / "y.py"
