"""The launch spec: what a workload's pods run, built once for every executor (the agent
turns it into `start` frames, Slurm into a batch job, Kubernetes into pods).

`Launches` reads what it needs for a set of workloads at once (two queries): the
workloads with their projects, and every placed pod of theirs (for ranks and peers).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from scheduler_core.choices import PLACED_STATES
from scheduler_core.models import Allocation, Node, PodRun, Workload
from scheduler_core.runtime.env import Pod, distributed_env
from scheduler_core.runtime.executor import Launch, PodLaunch
from scheduler_core.runtime.ports import declared_ports, proxy_env


class Launches:
    """The launch specs of some workloads' pods."""

    def __init__(self, workload_ids: Iterable[int]) -> None:
        ids = set(workload_ids)
        self.workloads = {
            w.pk: w for w in Workload.objects.filter(pk__in=ids).select_related("project")
        }
        self.pods: dict[int, list[Pod]] = defaultdict(list)
        self.grace_periods: dict[int, int] = {}  # its pool's, per workload
        for row in Allocation.objects.filter(workload_id__in=ids).values_list(
            "workload_id", "group", "pod_index", "node_id", "node__address", "node__name",
            "node__pool__grace_period",
        ):  # fmt: skip
            workload_id, group, pod_index, node_pk, address, name, grace = row
            self.pods[workload_id].append(Pod(group, pod_index, address or name, node_pk))
            self.grace_periods[workload_id] = grace

    def wanted(self, workload_id: int) -> bool:
        """Is the workload still placed (a start for it makes sense)?"""
        w = self.workloads.get(workload_id)
        return w is not None and w.status in PLACED_STATES

    def pod(self, run: PodRun, node: Node) -> PodLaunch:
        """One run's pod: where it runs and its environment."""
        w = self.workloads[run.workload_id]
        pods = self.pods[w.pk]
        me = next(p for p in pods if (p.group, p.pod_index) == (run.group, run.pod_index))
        env = distributed_env(
            workload_id=w.pk,
            workload_name=w.name,
            project=w.project.name,
            group_names=[g["name"] for g in w.pod_groups],
            pods=pods,
            pod=me,
            spec_env=(w.spec or {}).get("env"),
        )
        env |= proxy_env(w.pk, run.pod, declared_ports(w.spec))
        return PodLaunch(
            run_id=run.pk, epoch=run.epoch, node_id=node.pk, node_name=node.name,
            group=run.group, pod_index=run.pod_index, devices=tuple(run.gpu_devices or ()),
            gpu_fraction=run.gpu_fraction, env=env,
        )  # fmt: skip

    def launch(self, workload_id: int, pods: Iterable[PodLaunch]) -> Launch:
        """The workload's launch with `pods` (those started now)."""
        w = self.workloads[workload_id]
        spec = w.spec or {}
        command = spec.get("command")
        return Launch(
            workload_id=w.pk,
            workload_name=w.name,
            project=w.project.name,
            argv=tuple(str(a) for a in command) if isinstance(command, list) else None,
            shell=command if isinstance(command, str) else None,
            image=spec.get("image") or None,
            workdir=spec.get("workdir") or None,
            grace_period=self.grace_periods.get(w.pk, 0),
            checkpoint_key=f"{w.project.name}/{w.name}",
            gang_size=len(self.pods[w.pk]),
            pods=tuple(pods),
            ports=declared_ports(spec),
        )
