"""What a workload's pods do on node agents: their output (the newest run's, followed live by
static/console/js/logs.js), each pod's runs and how they ended, and its GPUs' and process's
latest usage."""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler_core.models import Allocation, NodePool, PodRun, RunUsageSample, Workload
from scheduler_core.models.agents import LIVE_RUN_STATES
from scheduler_core.runtime.executor import Capability
from scheduler_core.runtime.registry import backends_with
from scheduler_core.selectors.agents import (
    DeviceUsage,
    PodLog,
    device_usage,
    latest_run_usage,
    pod_runs_of,
    workload_logs,
)

TAIL_LINES = 500
"""Lines of output shown when a pod is opened; logs.js follows on from there."""


@dataclass
class DeviceReading:
    """One GPU a pod holds, and its latest sample (None when none came lately)."""

    index: int
    usage: DeviceUsage | None


@dataclass
class PodPanel:
    """One pod: where it is placed, its runs (newest first), and what it uses now."""

    pod: str
    allocation: Allocation | None = None
    runs: list[PodRun] = field(default_factory=list)
    devices: list[DeviceReading] = field(default_factory=list)
    usage: RunUsageSample | None = None
    simulated: bool = False

    @property
    def run(self) -> PodRun | None:
        return self.runs[0] if self.runs else None

    @property
    def live(self) -> bool:
        return self.run is not None and self.run.state in LIVE_RUN_STATES


def pod_panels(workload: Workload, allocations: list[Allocation]) -> list[PodPanel]:
    """The workload's pods (placed now or run before), in pod order."""
    panels: dict[str, PodPanel] = {}
    for pod, runs in pod_runs_of(workload).items():
        panels[pod] = PodPanel(pod=pod, runs=runs)
    backends = pool_backends(allocations)
    simulated = backends_with(Capability.KNOWS_RUN_ENDS)
    for a in allocations:
        pod = f"{a.group}-{a.pod_index}"
        panel = panels.setdefault(pod, PodPanel(pod=pod))
        panel.allocation = a
        panel.simulated = backends[a.node.pool_id] in simulated
    usage = device_usage({a.node_id for a in allocations})
    newest = [p.run.pk for p in panels.values() if p.run is not None and p.live]
    run_usage = latest_run_usage(newest)
    for panel in panels.values():
        if panel.allocation is not None and not panel.simulated:
            node_id = panel.allocation.node_id
            panel.devices = [
                DeviceReading(i, usage.get((node_id, i))) for i in panel.allocation.gpu_devices
            ]
        if panel.run is not None and panel.live:
            panel.usage = run_usage.get(panel.run.pk)
    return sorted(panels.values(), key=_pod_order)


def pool_backends(allocations: list[Allocation]) -> dict[int, str]:
    """The backend of each pool the pods are placed in, by pool id. One query."""
    pool_ids = {a.node.pool_id for a in allocations}
    return dict(NodePool.objects.filter(pk__in=pool_ids).values_list("pk", "backend"))


def _pod_order(panel: PodPanel) -> tuple[str, int]:
    group, _, index = panel.pod.rpartition("-")
    return (group, int(index))


def _selected(panels: list[PodPanel], asked: str | None) -> PodPanel | None:
    for panel in panels:
        if panel.pod == asked:
            return panel
    return panels[0] if panels else None


def output_context(
    request, workload: Workload, allocations: list[Allocation], *, with_log: bool = True
) -> dict:
    """The output panel: every pod, the one shown (`?pod=`), and its last TAIL_LINES lines."""
    panels = pod_panels(workload, allocations)
    selected = _selected(panels, request.GET.get("pod"))
    log: PodLog | None = None
    if with_log and selected is not None and selected.run is not None:
        group, _, index = selected.pod.rpartition("-")
        logs = workload_logs(workload=workload, pod=(group, int(index)), tail=TAIL_LINES)
        log = logs[0] if logs else None
    return {
        "pod_panels": panels,
        "placed_pods": [p for p in panels if p.allocation is not None],
        "selected": selected,
        "log": log,
        "tail_lines": TAIL_LINES,
        "simulated": selected is not None and selected.simulated and not selected.runs,
    }
