"""The layers of docs/architecture.md hold: imports run downward only, and no module cycle.

Read from the source with ``ast`` (imports inside functions included), so a lazy import that goes
upward fails here as well.
"""
import ast
import collections
import sys
from pathlib import Path

import omnigraph

PACKAGE = Path(omnigraph.__file__).resolve().parent

#: lowest first; a module may import its own layer and those below it
LAYERS = [
    ("base", ("omnigraph._config", "omnigraph._npz", "omnigraph._cache", "omnigraph._files", "omnigraph.memory",
              "omnigraph.validation")),
    ("ops", ("omnigraph.ops",)),
    ("datasets", ("omnigraph.datasets",)),
    ("hub", ("omnigraph.hub",)),
    ("models", ("omnigraph.models",)),
    ("training", ("omnigraph.training",)),
    ("estimators", ("omnigraph.estimators",)),
    ("benchmark", ("omnigraph.benchmark",)),
    ("cli", ("omnigraph.cli",)),
]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph() -> dict[str, set[str]]:
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    edges = collections.defaultdict(set)
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                edges[name].update(a.name for a in node.names if a.name in paths)
            elif isinstance(node, ast.ImportFrom):
                target = node.module or ""
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    if sub in paths:
                        edges[name].add(sub)
                    elif target in paths:
                        edges[name].add(target)
    return {name: edges.get(name, set()) for name in paths}


def _layer(module: str) -> int | None:
    for rank, (_, prefixes) in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank
    return None


def test_every_module_has_a_layer():
    unplaced = [m for m in _import_graph() if m != "omnigraph" and _layer(m) is None]
    assert not unplaced, f"modules outside the layers of docs/architecture.md: {unplaced}"


def test_imports_run_downward_only():
    upward = sorted((m, t) for m, targets in _import_graph().items() if m != "omnigraph"
                    for t in targets if _layer(t) > _layer(m))
    assert not upward, "imports from a lower layer to a higher one:\n" + "\n".join(f"  {m} -> {t}" for m, t in upward)


def test_no_module_cycle():
    graph = _import_graph()
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
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
                cycles.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles: {cycles}"


def test_the_check_sees_an_upward_import(tmp_path, monkeypatch):
    """The checker itself: a training module importing an estimator is reported."""
    fake = tmp_path / "omnigraph"
    (fake / "training").mkdir(parents=True)
    (fake / "estimators").mkdir()
    for f in ("__init__.py", "training/__init__.py", "estimators/__init__.py", "estimators/x.py"):
        (fake / f).write_text("")
    (fake / "training" / "y.py").write_text("def f():\n    from omnigraph.estimators.x import g\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    graph = _import_graph()
    assert graph["omnigraph.training.y"] == {"omnigraph.estimators.x"}
    assert _layer("omnigraph.estimators.x") > _layer("omnigraph.training.y")
