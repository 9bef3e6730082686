"""The import graph of Fairway's own modules, read from the source (nothing is imported).

Every import counts, at module level or inside a function, except those under
`if TYPE_CHECKING:` (type-only). `from package import name` points at the submodule
`package.name` when there is one, else at the package itself.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("scheduler_core", "api", "console", "config", "benchmarks")


def module_files() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the project (migrations aside)."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                yield from _imports(child)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        yield from _imports(node)


def _target(name: str, modules: dict[str, Path]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports."""
    modules = module_files()
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        is_package = path.name == "__init__.py"
        edges: set[str] = set()
        for node in _imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [_target(alias.name, modules) for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    package = module.split(".") if is_package else module.split(".")[:-1]
                    package = package[: len(package) - node.level + 1]
                    base = ".".join([*package, base] if base else package)
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules
                    else _target(base, modules)
                    for alias in node.names
                ]  # fmt: skip
            edges.update(t for t in targets if t and t != module)
        graph[module] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


# Modules that stand for themselves in the package graph, not for their package:
# ports a lower layer may import (each imports nothing of its own package) and shells
# that sit on top like views (Celery task modules only translate and call services).
PORTS = {
    "scheduler_core.loop.triggers": "how anything asks for a cycle (the task, by name)",
    "scheduler_core.services.errors": "the field errors every input check raises",
    "scheduler_core.runtime.interface": "the execution interface the apply step sees",
}


def _node(module: str, modules: dict[str, Path]) -> str:
    """The package a module counts for: its own package, or itself if a port or shell."""
    if module in PORTS or module.rpartition(".")[2] == "tasks":
        return module
    return module if modules[module].name == "__init__.py" else module.rpartition(".")[0]


def package_graph(
    graph: dict[str, set[str]], modules: dict[str, Path] | None = None
) -> dict[str, set[str]]:
    """Package -> the packages its modules import (`modules`: name -> file, by default
    the project's). A package's own subpackages, and the packages it sits in, aside: a
    package may use its subpackages, and a subpackage its package's `__init__`."""
    modules = module_files() if modules is None else modules
    packages: dict[str, set[str]] = {}
    for module, targets in graph.items():
        source = _node(module, modules)
        edges = packages.setdefault(source, set())
        for target in targets:
            sink = _node(target, modules)
            nested = sink.startswith(f"{source}.") or source.startswith(f"{sink}.")
            if sink != source and not nested:
                edges.add(sink)
    return packages
