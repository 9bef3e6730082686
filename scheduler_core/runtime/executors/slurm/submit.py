"""Starting a workload's pods on Slurm: one held job pinned to the nodes Fairway chose
(launch.py gives its shape), released only once its GPUs are free there.

- Exact devices: where a node's GPUs are one GRES type per index and the devices Fairway
  chose are free in Slurm, the job asks for exactly those (`gpu:g3:1`); otherwise it asks
  for as many (`gpu:N`) and Fairway records the indices Slurm gave (gres_detail).
- Release: a held job is released when every node it asks is usable and has its GPUs
  free (a previous job may still be completing, or a job Fairway did not start may hold
  them). `release_ready` runs after each submission and on every observe, and counts the
  GPUs it has just released so that two jobs never get the same ones in one pass.
- Nothing twice: a start handed again (its first may have been lost) is skipped when a
  job with its tag exists already.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from scheduler_core.runtime.executor import Launch
from scheduler_core.runtime.executors.slurm.client import SlurmClient
from scheduler_core.runtime.executors.slurm.launch import PodLaunch, RunLaunch, by_node, job_request
from scheduler_core.runtime.executors.slurm.records import SlurmJob, SlurmNode
from scheduler_core.runtime.executors.slurm.tags import job_comment, job_name, runs_of

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PoolTarget:
    """Where a pool's jobs go: its partition, account, output directory and signal."""

    partition: str
    account: str
    output_dir: Path
    signal: str


def log_path(output_dir: Path, workload_id: int, run_id: int) -> Path:
    """The file a pod's output goes to (read back into the log store)."""
    return output_dir / f"w{workload_id}" / f"run-{run_id}.log"


def run_launch(
    launch: Launch, target: PoolTarget, nodes: Mapping[str, SlurmNode], prefix: str
) -> RunLaunch:
    """The Slurm shape of one workload's launch (see the module docstring)."""
    run_ids = [p.run_id for p in launch.pods]
    pods = []
    for pod in launch.pods:
        node = nodes.get(pod.node_name)
        exact = (
            node is not None
            and node.pinnable
            and bool(pod.devices)
            and not set(pod.devices) & set(node.used_gpus)
        )
        gpus = max(len(pod.devices), math.ceil(pod.gpu_fraction)) if pod.devices else 0
        path = log_path(target.output_dir, launch.workload_id, pod.run_id)
        pods.append(
            PodLaunch(
                key=f"{pod.group}-{pod.pod_index}", node=pod.node_name,
                gpus=tuple(pod.devices) if exact else (), env=dict(pod.env),
                log_path=str(path), gpu_count=0 if exact else gpus,
            )
        )  # fmt: skip
    extra = ["-A", target.account] if target.account else []
    workdir = launch.workdir or str(target.output_dir / f"w{launch.workload_id}")
    return RunLaunch(
        tag=job_name(prefix, launch.workload_id, run_ids),
        comment=job_comment(prefix, launch.workload_id, run_ids),
        partition=target.partition, workdir=workdir, pods=pods, argv=launch.argv,
        shell=launch.shell,
        pinnable={name: n.pinnable for name, n in nodes.items()},
        batch_log=str(target.output_dir / f"w{launch.workload_id}" / "slurm-%j.out"),
        extra_options=extra,
    )  # fmt: skip


def submit(
    client: SlurmClient, launch: RunLaunch, known: Iterable[SlurmJob], prefix: str
) -> int | None:
    """Submit the launch held, unless a job of its runs exists (None then)."""
    wanted = {int(r) for r in launch.comment.rsplit("runs=", 1)[-1].split(",")}
    if any(set(runs_of(job, prefix)) & wanted for job in known if not job.ended):
        return None
    Path(launch.workdir).mkdir(parents=True, exist_ok=True)
    for pod in launch.pods:
        Path(pod.log_path).parent.mkdir(parents=True, exist_ok=True)
    return client.submit(job_request(launch), hold=True)


class FreeGpus:
    """The GPUs of each node as Slurm reports them, minus those released in this pass."""

    def __init__(self, nodes: Iterable[SlurmNode]) -> None:
        self.nodes = {n.name: n for n in nodes}
        self.taken: dict[str, set[int]] = {n.name: set(n.used_gpus) for n in self.nodes.values()}
        self.counted: dict[str, int] = {}

    def _fits(self, name: str, pinned: tuple[int, ...], count: int) -> bool:
        node = self.nodes.get(name)
        if node is None or not node.usable or set(pinned) & self.taken[name]:
            return False
        return count <= node.gpus - len(self.taken[name]) - self.counted.get(name, 0)

    def _take(self, name: str, pinned: tuple[int, ...], count: int) -> None:
        if pinned:
            self.taken[name] |= set(pinned)
        else:
            self.counted[name] = self.counted.get(name, 0) + count

    def _claim(self, needs: list[tuple[str, tuple[int, ...], int]]) -> bool:
        if not all(self._fits(*need) for need in needs):
            return False
        for need in needs:
            self._take(*need)
        return True

    def claim_job(self, components: Iterable[SlurmJob]) -> bool:
        """Take a held job's GPUs if every node it asks has them free now."""
        return self._claim(
            [
                (name, c.pinned_gpus, c.gpus_per_node)
                for c in components
                for name in c.required_nodes
            ]
        )

    def claim_launch(self, launch: RunLaunch) -> bool:
        """The same for a job just submitted (its shape as Fairway asked it)."""
        return self._claim([(s.node, s.gpus, s.gpu_count) for s in by_node(launch.pods)])


def release_ready(
    client: SlurmClient, jobs: Iterable[SlurmJob], nodes: Iterable[SlurmNode], prefix: str
) -> list[int]:
    """Release this installation's held jobs whose GPUs are free, oldest first; their
    ids."""
    groups: dict[int, list[SlurmJob]] = {}
    for job in jobs:
        if job.held and runs_of(job, prefix):
            groups.setdefault(job.root_id, []).append(job)
    free = FreeGpus(nodes)
    ready = [root for root in sorted(groups) if free.claim_job(groups[root])]
    if ready:
        client.release(ready)
    return ready
