"""The layout's rules, checked on the source: imports point inward and never go round.

    api, console  ->  scheduler_core  ->  scheduler_core.engine (pure)

Inside scheduler_core, the loop sits on top: whatever asks for a cycle does so through
`loop.triggers`, which sends the cycle task by name, so nothing below the loop imports it.
"""

from __future__ import annotations

import pytest

from tests.architecture.imports import cycles, import_graph


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
