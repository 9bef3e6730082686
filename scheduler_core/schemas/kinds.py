"""Kind defaults: the one place that says what a workload's priority and preemptibility
are when its submission leaves them out (FORMAT.md: training 50, interactive 100,
inference 125, cpu 50; preemptible for training and cpu, unless priority >= 100).

The live service, the scenario loader and what-if copies of the live cluster all ask here,
so an interactive workload of priority 50 is not preemptible wherever it is submitted.
"""

from __future__ import annotations

from scheduler_core.engine.snapshot import DEFAULT_PRIORITY_BY_KIND, default_preemptible

KINDS: tuple[str, ...] = tuple(DEFAULT_PRIORITY_BY_KIND)


def kind_defaults(
    kind: str, *, priority: int | None = None, preemptible: bool | None = None
) -> tuple[int, bool]:
    """(priority, preemptible) of a workload of `kind`: what it states, else the kind's
    default priority and the preemptibility that kind and priority imply."""
    if priority is None:
        priority = DEFAULT_PRIORITY_BY_KIND[kind]
    if preemptible is None:
        preemptible = default_preemptible(kind, priority)
    return priority, preemptible
