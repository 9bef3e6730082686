"""Whether a workload's pods can ever fit: one rule for the submission, which refuses a
workload that no candidate pool can ever hold, and for the submit form's preview, which
says per pool that it never fits there (rather than "it queues") for the same reason.

"Ever" means with every node of the pool empty: a pod must fit on one node (GPUs, CPU
cores, memory; nodes that declare no CPU or memory do not limit them) and the gang's
minimum in the pool's GPUs all together. A pod asking a fraction of a GPU fits only a pool
whose backend shares devices (Capability.SHARES_GPUS: not Slurm's).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from django.db.models import Count, Max, Sum

from scheduler_core.choices import Backend
from scheduler_core.models import Node, NodePool
from scheduler_core.runtime.executor import Capability
from scheduler_core.runtime.registry import backends_with


class GroupAsk(Protocol):
    """A group of identical pods: `gang` of them start together, each asking these."""

    @property
    def gang(self) -> int: ...
    @property
    def gpus(self) -> float: ...
    @property
    def cpu(self) -> float: ...
    @property
    def memory(self) -> float: ...


@dataclass(frozen=True)
class PodAsk:
    """A group of pods as a form that is still being filled in asks for it."""

    gang: int
    gpus: float
    cpu: float = 0.0
    memory: float = 0.0


Problem = tuple[str, str]
"""(field, what is wrong), as FieldErrors takes it."""

RESOURCES = (
    ("gpus", "gpu_count", "GPUs"),
    ("cpu", "cpu", "CPU cores"),
    ("memory", "memory", "GiB of memory"),
)
"""(what a pod asks, the node's field that holds it, its unit in words)."""


def whole_gpus(gpus: float) -> float:
    """The GPUs one pod holds: whole devices from 1 GPU up, the fraction below."""
    return math.ceil(gpus) if gpus >= 1 else gpus


def gang_gpus(groups: Sequence[GroupAsk]) -> float:
    """GPUs the gang's minimum pods hold at once."""
    return sum(g.gang * whole_gpus(g.gpus) for g in groups)


@dataclass(frozen=True)
class PoolSize:
    """What the fit rule reads of a pool's nodes: its largest node per resource, its GPUs
    in all and how many nodes it has (so a check costs the same for 10 nodes or 2,500)."""

    nodes: int = 0
    gpus: float = 0.0  # all its nodes' GPUs together
    largest: Mapping[str, float] = field(default_factory=dict)  # node field -> largest


EMPTY = PoolSize()


def pool_sizes(nodes_by_pool: Mapping[int, Sequence[Node]]) -> dict[int, PoolSize]:
    """Each pool's PoolSize from its nodes."""
    return {
        pk: PoolSize(
            nodes=len(nodes),
            gpus=sum(n.gpu_count for n in nodes),
            largest={attr: max(getattr(n, attr) for n in nodes) for _, attr, _ in RESOURCES},
        )
        for pk, nodes in nodes_by_pool.items()
        if nodes
    }


def stored_pool_sizes() -> dict[int, PoolSize]:
    """Each pool's PoolSize from the database, in one aggregate query."""
    attrs = [attr for _, attr, _ in RESOURCES]
    rows = (
        Node.objects.order_by()
        .values_list("pool_id")
        .annotate(Count("id"), Sum("gpu_count"), *[Max(attr) for attr in attrs])
    )
    return {
        pool: PoolSize(
            nodes=count,
            gpus=gpus or 0,
            largest={attr: value or 0 for attr, value in zip(attrs, largest, strict=True)},
        )
        for pool, count, gpus, *largest in rows
    }


def fit_problems(
    groups: Sequence[GroupAsk],
    pools: Sequence[NodePool],
    sizes: Mapping[int, PoolSize],
    *,
    use_groups: bool = False,
) -> list[Problem]:
    """Why `groups` can never run in `pools` taken together (their largest node, their
    largest pool), or [] when they can."""
    pool_names = ", ".join(p.name for p in pools) or "any pool"
    unshared = _unshared_fractions(groups, pools, use_groups=use_groups)
    if unshared:
        return unshared
    known = [sizes.get(p.pk, EMPTY) for p in pools]
    if not any(size.nodes for size in known):
        return [("pools", f"{pool_names} has no nodes")]
    problems: list[Problem] = []
    for i, g in enumerate(groups):
        prefix = f"groups[{i}]." if use_groups else ""
        for key, attr, unit in RESOURCES:
            largest = max(size.largest.get(attr, 0) for size in known if size.nodes)
            want = getattr(g, key)
            if key != "gpus" and largest == 0:
                continue  # nodes that do not declare cpu/memory do not limit it
            if want > largest:
                problems.append(
                    (
                        f"{prefix}{key}",
                        f"a pod asks for {want:g} {unit} but the largest node in {pool_names} "
                        f"has {largest:g}",
                    )
                )
    need = gang_gpus(groups)
    best = max(size.gpus for size in known)
    if need > best:
        problems.append(
            (
                "groups" if use_groups else "min_pods",
                f"the gang needs {need:g} GPUs at once but the largest candidate pool "
                f"({pool_names}) has {best:g} GPUs in total",
            )
        )
    return problems


def _unshared_fractions(
    groups: Sequence[GroupAsk], pools: Sequence[NodePool], *, use_groups: bool
) -> list[Problem]:
    """A pod asking a fraction of a GPU where none of `pools` shares devices."""
    fractions = [(i, g) for i, g in enumerate(groups) if 0 < g.gpus < 1]
    if not fractions or not pools:
        return []
    sharing = backends_with(Capability.SHARES_GPUS)
    if any(p.backend in sharing for p in pools):
        return []
    backends = sorted({_backend_label(p.backend) for p in pools})
    where = ", ".join(p.name for p in pools)
    return [
        (
            f"groups[{i}].gpus" if use_groups else "gpus",
            f"a pod asks for {g.gpus:g} of a GPU but {where} gives whole GPUs only (pods "
            f"run with {' and '.join(backends)}): ask 1 GPU, or a pool of node agents",
        )
        for i, g in fractions
    ]


def _backend_label(backend: str) -> str:
    """A backend's name in words ("Slurm"), or as stored where it has no label."""
    labels = dict(Backend.choices)
    return str(labels.get(backend, backend)).split(" (")[0]


def never_fits(
    groups: Sequence[GroupAsk],
    pools: Sequence[NodePool],
    sizes: Mapping[int, PoolSize],
    *,
    use_groups: bool = False,
) -> list[Problem]:
    """Why no pool of `pools` can ever run `groups`, or [] when one can: what rules out all
    of them together, else what rules out each one (the preview names the same per pool)."""
    together = fit_problems(groups, pools, sizes, use_groups=use_groups)
    if together or not pools:
        return together
    each = [(p, fit_problems(groups, [p], sizes, use_groups=use_groups)) for p in pools]
    if all(problems for _, problems in each):
        return [(key, f"in {p.name}: {text}") for p, problems in each for key, text in problems]
    return []
