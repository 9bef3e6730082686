"""The layout's rules, checked on the source: imports point inward and never go round.

    api, console  ->  scheduler_core  ->  scheduler_core.engine (pure)

Inside scheduler_core, the loop sits on top: whatever asks for a cycle does so through
`loop.triggers`, which sends the cycle task by name, so nothing below the loop imports it.
Packages do not go round either (`services` -> `runtime` -> `services` would, even with
no module circle): a package imports another only one way (imports.package_graph; its
ports and shells listed there).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.architecture.imports import cycles, import_graph, package_graph


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph()


def _offending(graph, importer, imported) -> list[str]:
    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        if importer(module)
        for target in targets
        if imported(target)
    )


def test_no_module_imports_itself_in_a_circle(graph):
    assert cycles(graph) == []


def test_no_package_imports_itself_in_a_circle(graph):
    assert cycles(package_graph(graph)) == []


def test_a_package_circle_is_found():
    """The check sees a circle that only packages make (no module imports itself)."""
    graph = {"p.a.x": {"p.b.y"}, "p.b.y": set(), "p.b.z": {"p.a.w"}, "p.a.w": set()}
    modules = {name: Path(f"{name.replace('.', '/')}.py") for name in graph}
    assert cycles(graph) == []
    assert cycles(package_graph(graph, modules)) == [["p.a", "p.b"]]


def test_the_domain_never_imports_the_api_or_the_console(graph):
    assert (
        _offending(
            graph,
            lambda m: m.startswith("scheduler_core"),
            lambda t: t.startswith(("api", "console")),
        )
        == []
    )


def test_the_engine_imports_nothing_of_the_project_outside_itself(graph):
    assert (
        _offending(
            graph,
            lambda m: m.startswith("scheduler_core.engine"),
            lambda t: not t.startswith("scheduler_core.engine"),
        )
        == []
    )


def test_only_the_loop_and_the_composition_root_import_the_loop_beyond_its_triggers(graph):
    def allowed(module: str) -> bool:
        return module.startswith(
            ("scheduler_core.loop", "scheduler_core.apps", "scheduler_core.management", "config")
        )

    assert (
        _offending(
            graph,
            lambda m: not allowed(m),
            lambda t: t.startswith("scheduler_core.loop") and t != "scheduler_core.loop.triggers",
        )
        == []
    )


def test_the_apply_step_knows_the_runtime_only_through_its_interface(graph):
    assert (
        _offending(
            graph,
            lambda m: m.startswith("scheduler_core.adapters"),
            lambda t: (
                t.startswith("scheduler_core.runtime") and t != "scheduler_core.runtime.interface"
            ),
        )
        == []
    )


def test_the_execution_interface_imports_none_of_its_callers(graph):
    """The seam's own value types only (the loop and the adapters translate to them)."""
    assert graph["scheduler_core.runtime.interface"] == set()


def test_only_the_registry_names_the_executors(graph):
    """Below the seam every backend is an executor behind the registry, which imports
    them by name on first use: nothing of the domain imports one (an executor's own
    transport, the agents' websocket consumer, and management commands may)."""

    def domain(module: str) -> bool:
        return module.startswith("scheduler_core") and not module.startswith(
            ("scheduler_core.runtime.executors", "scheduler_core.management")
        )

    assert (
        _offending(graph, domain, lambda t: t.startswith("scheduler_core.runtime.executors.")) == []
    )
