"""Where a workload would fit right now: free devices per candidate pool, and a project's
quota headroom, or why it can never run in a pool (the rule the submission applies,
scheduler_core.workload_fit). Used by the submit form's preview; a read, nothing is reserved."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from scheduler_core.models import NodePool, Project, Quota
from scheduler_core.selectors.gpu_map import PoolMap, gpu_map
from scheduler_core.workload_fit import GroupAsk, fit_problems, gang_gpus, pool_sizes


@dataclass
class PoolFit:
    """Whether a gang of pods fits in one pool's free capacity now, and the project's room."""

    pool: NodePool
    gpus_free: float
    gpus_total: int
    gang_gpus: float
    fits_now: bool
    nodes_used: list[str]
    deserved_gpus: float | None
    limit_gpus: float | None
    project_allocated_gpus: float
    never: list[str] = field(default_factory=list)
    """Why it can never run in this pool, even empty ([] when it can): submitting it with
    no other candidate pool is refused for these reasons."""

    @property
    def quota_headroom(self) -> float | None:
        if self.deserved_gpus is None:
            return None
        return round(self.deserved_gpus - self.project_allocated_gpus, 2)

    @property
    def within_quota(self) -> bool:
        return self.quota_headroom is not None and self.quota_headroom >= self.gang_gpus

    @property
    def within_limit(self) -> bool:
        if self.limit_gpus is None:
            return True
        return self.project_allocated_gpus + self.gang_gpus <= self.limit_gpus


def _place(pool_map: PoolMap, groups: Sequence[GroupAsk]) -> list[str] | None:
    """Greedy first fit of each group's gang on the free devices of ready nodes; None if
    they don't fit."""
    free = {n.node.name: [d.free for d in n.devices] for n in pool_map.nodes if n.schedulable}
    placed: list[str] = []
    for group in groups:
        nodes = _place_pods(free, pods=group.gang, gpus=group.gpus)
        if nodes is None:
            return None
        placed.extend(nodes)
    return placed


def _place_pods(free: dict[str, list[float]], *, pods: int, gpus: float) -> list[str] | None:
    """First fit of `pods` pods of `gpus` each on `free` (devices' free fractions by node,
    used up as pods are placed); None if they don't fit."""
    placed: list[str] = []
    for _ in range(pods):
        for name, devices in free.items():
            if gpus == 0:
                placed.append(name)
                break
            if gpus < 1:
                slot = next((i for i, f in enumerate(devices) if f + 1e-9 >= gpus), None)
                if slot is not None:
                    devices[slot] -= gpus
                    placed.append(name)
                    break
            else:
                whole = [i for i, f in enumerate(devices) if f >= 1 - 1e-9]
                need = math.ceil(gpus)
                if len(whole) >= need:
                    for i in whole[:need]:
                        devices[i] = 0.0
                    placed.append(name)
                    break
        else:
            return None
    return placed


def placement_preview(
    *, user, project: Project | None, pools: list[NodePool], groups: Sequence[GroupAsk]
) -> list[PoolFit]:
    """For each candidate pool: would the gangs of `groups` fit now, can they ever, and the
    quota room."""
    maps = {m.pool.pk: m for m in gpu_map(user=user)}
    sizes = pool_sizes({pk: [n.node for n in m.nodes] for pk, m in maps.items()})
    quotas = {}
    allocated: dict[int, float] = {}
    if project is not None:
        quotas = {q.pool_id: q for q in Quota.objects.filter(project=project)}
        for each_map in maps.values():
            allocated[each_map.pool.pk] = round(
                sum(
                    s.fraction
                    for n in each_map.nodes
                    for d in n.devices
                    for s in d.slices
                    if s.project_id == project.pk
                ),
                2,
            )
    fits = []
    for pool in pools:
        pool_map = maps.get(pool.pk)
        if pool_map is None:
            continue
        never = [text for _, text in fit_problems(groups, [pool], sizes)]
        placed = None if never else _place(pool_map, groups)
        quota = quotas.get(pool.pk)
        fits.append(
            PoolFit(
                pool=pool,
                gpus_free=pool_map.gpus_free_ready,
                gpus_total=pool_map.gpus_total,
                gang_gpus=gang_gpus(groups),
                fits_now=placed is not None,
                nodes_used=sorted(set(placed or [])),
                deserved_gpus=quota.gpus if quota else (0.0 if project else None),
                limit_gpus=quota.limit_gpus if quota else None,
                project_allocated_gpus=allocated.get(pool.pk, 0.0),
                never=never,
            )
        )
    return fits
