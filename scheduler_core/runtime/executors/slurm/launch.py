"""One Fairway run as one Slurm batch job: the `sbatch` options that pin it to the nodes
and GPUs Fairway chose, and the script that gives each pod its environment and output file.

Shapes (docs/slurm.md):
- one pod: a job on its node; the batch shell is the pod.
- pods on several nodes with the same GPUs on each (same indices where devices are
  pinnable, same counts otherwise) and as many pods per node: one job over those nodes
  (`-N n -w nodes --ntasks-per-node=k`), the pods as the tasks of one `srun`.
- otherwise a heterogeneous job, one component per node (its GPUs, its pods), the pods
  as the tasks of one `srun --het-group=0-(n-1)`.
Each task finds its pod by (node name, local task id), takes its own GPUs out of the
node's CUDA_VISIBLE_DEVICES (several pods may share a node), sets the pod's variables
(ranks, peers, PyTorch's names) and writes to the pod's own output file.

Pinnable nodes (one GRES type per device index, `gpu:g3:1`) get exactly the devices
Fairway chose; on others Slurm picks `gpu:N` and Fairway records what it reports.

A job's environment: what `sbatch` runs with (`--export=ALL`; the client keeps that to
PATH and SLURM_CONF: client.py), Slurm's own SLURM_* variables, and what the script sets.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from scheduler_core.runtime.executors.slurm.client import JOB_PATH, JobRequest


@dataclass(frozen=True, slots=True)
class PodLaunch:
    """One pod: where it runs (node name, GPU indices there), what it runs and with which
    variables, and the file its output goes to."""

    key: str  # `group-index`, the pod's name in its workload
    node: str
    gpus: tuple[int, ...]
    env: Mapping[str, str]
    log_path: str
    gpu_count: int = 0  # GPUs it asks where devices are not pinnable (else len(gpus))


@dataclass(frozen=True, slots=True)
class RunLaunch:
    """A run to submit: its pods in rank order and what they all share."""

    tag: str  # the job name Fairway finds the job by
    comment: str
    partition: str
    workdir: str
    pods: Sequence[PodLaunch]
    argv: Sequence[str] | None = None
    shell: str | None = None
    pinnable: Mapping[str, bool] = field(default_factory=dict)  # by node name
    batch_log: str = "/dev/null"
    extra_options: Sequence[str] = ()


@dataclass(frozen=True, slots=True)
class _NodeShare:
    node: str
    pods: list[PodLaunch]

    @property
    def gpus(self) -> tuple[int, ...]:
        return tuple(sorted({g for p in self.pods for g in p.gpus}))

    @property
    def gpu_count(self) -> int:
        return sum(p.gpu_count or len(p.gpus) for p in self.pods)


def by_node(pods: Sequence[PodLaunch]) -> list[_NodeShare]:
    """The pods grouped by node, nodes in the order of their first pod."""
    shares: dict[str, _NodeShare] = {}
    for pod in pods:
        shares.setdefault(pod.node, _NodeShare(pod.node, [])).pods.append(pod)
    return list(shares.values())


def gres_option(share: _NodeShare, pinnable: bool) -> list[str]:
    """`--gres=` for one node's GPUs: exact types where pinnable, a count elsewhere."""
    if pinnable and share.gpus:
        return ["--gres=" + ",".join(f"gpu:g{i}:1" for i in share.gpus)]
    if share.gpu_count:
        return [f"--gres=gpu:{share.gpu_count}"]
    return []


def job_request(launch: RunLaunch) -> JobRequest:
    """The sbatch request for `launch` (see the module docstring for its shape)."""
    shares = by_node(launch.pods)
    common = [
        "-p", launch.partition, "-J", launch.tag, "--comment", launch.comment,
        "--no-requeue", "--export=ALL", "-o", launch.batch_log, "-e", launch.batch_log,
        *launch.extra_options,
    ]  # fmt: skip
    if len(launch.pods) == 1:
        share = shares[0]
        options = ["-w", share.node, "-N", "1", "--ntasks=1"]
        options += gres_option(share, launch.pinnable.get(share.node, False))
        return JobRequest([common + options], batch_script(launch, srun=None), launch.workdir)
    if _uniform(shares, launch.pinnable):
        first = shares[0]
        options = [
            "-w", ",".join(s.node for s in shares), "-N", str(len(shares)),
            f"--ntasks-per-node={len(first.pods)}",
            *gres_option(first, launch.pinnable.get(first.node, False)),
        ]  # fmt: skip
        return JobRequest([common + options], batch_script(launch, srun=[]), launch.workdir)
    components = []
    for index, share in enumerate(shares):
        options = ["-w", share.node, "-N", "1", f"--ntasks={len(share.pods)}"]
        options += gres_option(share, launch.pinnable.get(share.node, False))
        components.append((common if index == 0 else []) + options)
    het = [f"--het-group=0-{len(shares) - 1}"]
    return JobRequest(components, batch_script(launch, srun=het), launch.workdir)


def _uniform(shares: list[_NodeShare], pinnable: Mapping[str, bool]) -> bool:
    first = shares[0]
    return all(
        len(s.pods) == len(first.pods)
        and pinnable.get(s.node, False) == pinnable.get(first.node, False)
        and (
            s.gpus == first.gpus if pinnable.get(s.node, False) else s.gpu_count == first.gpu_count
        )
        and len({p.gpu_count or len(p.gpus) for p in s.pods}) == 1
        for s in shares
    )


def _exports(env: Mapping[str, str]) -> list[str]:
    return [f"export {name}={shlex.quote(str(value))}" for name, value in env.items()]


def _command(launch: RunLaunch) -> str:
    if launch.argv:
        return "exec " + " ".join(shlex.quote(str(a)) for a in launch.argv)
    if launch.shell:
        return "exec /bin/bash -c " + shlex.quote(launch.shell)
    return "echo 'this workload has no command to run' >&2; exit 64"


def _positions(share: _NodeShare) -> list[list[int]]:
    """Where each pod's GPUs sit in the node's CUDA_VISIBLE_DEVICES: by index where
    Fairway chose the devices, else in turn (Slurm chose them)."""
    found, offset = [], 0
    for pod in share.pods:
        if pod.gpus:
            found.append([share.gpus.index(g) for g in pod.gpus])
        else:
            found.append(list(range(offset, offset + pod.gpu_count)))
            offset += pod.gpu_count
    return found


def pod_script(launch: RunLaunch) -> str:
    """The shell text every task runs: find its pod, set its variables and devices, write
    to its output file, run the command."""
    lines = ['case "${SLURMD_NODENAME}/${SLURM_LOCALID:-0}" in']
    for share in by_node(launch.pods):
        for local_id, (pod, positions) in enumerate(
            zip(share.pods, _positions(share), strict=True)
        ):
            body = [
                *_exports(pod.env),
                f"FAIRWAY_GPU_POSITIONS={shlex.quote(' '.join(map(str, positions)))}",
                f"FAIRWAY_POD_LOG={shlex.quote(pod.log_path)}",
            ]
            lines.append(f"  {shlex.quote(share.node)}/{local_id})")
            lines += [f"    {line}" for line in body]
            lines.append("    ;;")
    lines += [
        '  *) echo "fairway: no pod for task $SLURMD_NODENAME/$SLURM_LOCALID" >&2; exit 65 ;;',
        "esac",
        # several pods on one node share the job's devices there: each takes its own
        'if [ -n "${CUDA_VISIBLE_DEVICES:-}" ] && [ -n "$FAIRWAY_GPU_POSITIONS" ]; then',
        '  IFS=, read -ra fw_all <<< "$CUDA_VISIBLE_DEVICES"; fw_mine=()',
        '  for fw_p in $FAIRWAY_GPU_POSITIONS; do fw_mine+=("${fw_all[$fw_p]}"); done',
        '  CUDA_VISIBLE_DEVICES=$(IFS=,; echo "${fw_mine[*]}"); export CUDA_VISIBLE_DEVICES',
        "fi",
        'exec >> "$FAIRWAY_POD_LOG" 2>&1',
        _command(launch),
    ]
    return "\n".join(lines) + "\n"


def batch_script(launch: RunLaunch, *, srun: list[str] | None) -> str:
    """The batch script: the pod itself for one pod (srun None), else one srun that runs
    every pod as a task and ends them all when one fails."""
    head = [
        "#!/bin/bash",
        f"# Fairway run {launch.tag} ({launch.comment})",
        f'export PATH="${{PATH:-{JOB_PATH}}}"',
        f"cd {shlex.quote(launch.workdir)} 2>/dev/null || cd /tmp",
    ]
    if srun is None:
        return "\n".join(head) + "\n" + pod_script(launch)
    tasks = [
        "export SLURM_EXPORT_ENV=ALL",  # the tasks get the job's environment
        "exec srun --kill-on-bad-exit=1 --wait=0 " + " ".join(srun) + " /bin/bash -c "
        + shlex.quote(pod_script(launch)),
    ]  # fmt: skip
    return "\n".join(head + tasks) + "\n"
