"""Where the ports of interactive pods are (docs/interactive.md): the open ports of a
workload's running pods (its page, the API, `fairway describe`), and the one port a proxy
request names, for a user who may see the workload (`visible_to`, the one access rule)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Prefetch, QuerySet

from scheduler_core.models import PodRun, Workload
from scheduler_core.models.agents import PodRunState
from scheduler_core.runtime.executor import Capability
from scheduler_core.runtime.ports import declared_ports, proxy_path
from scheduler_core.runtime.registry import backends_with


@dataclass(frozen=True, slots=True)
class OpenPort:
    """A port of a running pod: its proxy `path`, and where the pod listens."""

    pod: str
    name: str
    path: str
    host: str
    port: int


def _open_ports_of(workload_id: int, runs: Iterable[PodRun]) -> list[OpenPort]:
    return [
        OpenPort(run.pod, str(p["name"]), proxy_path(workload_id, run.pod, str(p["name"])),
                 str(p["host"]), int(p["port"]))
        for run in runs
        if run.state == PodRunState.RUNNING and run.allocation_id is not None
        for p in run.ports or []
    ]  # fmt: skip


def with_open_ports(qs: QuerySet[Workload]) -> QuerySet[Workload]:
    """Add each workload's running runs (`running_runs`), for `open_ports` (one query)."""
    running = PodRun.objects.filter(state=PodRunState.RUNNING, allocation__isnull=False)
    return qs.prefetch_related(
        Prefetch(
            "pod_runs", queryset=running.order_by("group", "pod_index"), to_attr="running_runs"
        )
    )


def open_ports(workload: Workload) -> list[OpenPort]:
    """The ports its running pods listen on, pod by pod (prefetched by `with_open_ports`,
    else one query)."""
    runs = getattr(workload, "running_runs", None)
    if runs is None:
        runs = PodRun.objects.filter(workload=workload, state=PodRunState.RUNNING)
        runs = runs.order_by("group", "pod_index")
    return _open_ports_of(workload.pk, runs)


def ports_note(workload: Workload, backend: str | None) -> str:
    """Why a workload that declares ports has none open, in words ("" when it declares
    none, or some are open or may open once it runs)."""
    if not declared_ports(workload.spec):
        return ""
    if backend is None or backend in backends_with(Capability.EXPOSES_PORTS):
        return ""
    if backend in backends_with(Capability.KNOWS_RUN_ENDS):
        return (
            f"Its pool is simulated (the {backend} backend): no process runs, so nothing "
            "serves these ports and there is nothing to open."
        )
    return f"Its pool's backend ({backend}) does not give pods ports yet: nothing to open."


@dataclass(frozen=True, slots=True)
class ProxyTarget:
    """Where a proxy request goes, or why it cannot (`problem`, a 502's message)."""

    host: str = ""
    port: int = 0
    problem: str = ""


def _pod(pod: str) -> tuple[str, int] | None:
    group, _, index = pod.rpartition("-")
    return (group, int(index)) if group and index.isdigit() and len(index) < 9 else None


def proxy_target(*, user, workload_id: int, pod: str, port: str) -> ProxyTarget | None:
    """Where port `port` of pod `pod` of workload `workload_id` listens, for `user`; None
    when the user may not see the workload or it has no such pod or port (a 404)."""
    workload = Workload.objects.visible_to(user).filter(pk=workload_id).first()
    where = _pod(pod)
    if workload is None or where is None or port not in declared_ports(workload.spec):
        return None
    run = (
        PodRun.objects.filter(workload=workload, group=where[0], pod_index=where[1])
        .order_by("-pk").first()
    )  # fmt: skip
    listening = {p["name"]: p for p in (run.ports if run is not None else [])}
    if run is None or run.state != PodRunState.RUNNING or port not in listening:
        state = "has not started" if run is None else f"is {run.get_state_display().lower()}"
        return ProxyTarget(
            problem=f"pod {pod} of workload {workload.name} is not running ({state}; the "
            f"workload is {workload.get_status_display().lower()}): nothing serves port {port}"
        )
    found = listening[port]
    return ProxyTarget(host=str(found["host"]), port=int(found["port"]))
