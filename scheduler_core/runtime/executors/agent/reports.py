"""What agents report (docs/agent.md, "Workload lifecycle"), turned into neutral run
reports for the run lifecycle (runtime.lifecycle). The `/ws/agents/` consumer calls these
two functions; each applies the report in one transaction and reconciles the node after
commit.

A report names its node and the run's epoch: a report of another node's run, of an
unknown run or of an epoch the run never had changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone
from fairway_agent.protocol import RUN_EXITED, RUN_RUNNING, RUN_START_FAILED, RUN_STARTING

from scheduler_core.models import Node, PodRun, Workload
from scheduler_core.models.agents import LIVE_RUN_STATES, PodRunState
from scheduler_core.runtime import lifecycle
from scheduler_core.runtime.executor import PortSeen, RunPhase, RunReport
from scheduler_core.runtime.reconcile import reconcile, stop_reason

# the agent protocol's run states -> the neutral phases
PHASES = {
    RUN_STARTING: RunPhase.STARTING,
    RUN_RUNNING: RunPhase.RUNNING,
    RUN_EXITED: RunPhase.EXITED,
    RUN_START_FAILED: RunPhase.START_FAILED,
}
ENDED = frozenset({RUN_EXITED, RUN_START_FAILED})


def _report(
    node: Node, run_id: int, epoch: int, state: str, at: datetime, **facts: Any
) -> RunReport | None:
    phase = PHASES.get(state)
    if phase is None:
        return None
    return RunReport(run_id=run_id, phase=phase, at=at, node_id=node.pk, epoch=epoch, **facts)


@dataclass(frozen=True)
class RunState:
    """One `run_state` of an agent: run `run` (of `epoch`) is now `state` (a protocol
    RUN_* state), its ports listening at `ports` (name -> port on the node)."""

    run: int
    epoch: int
    state: str
    exit_code: int | None
    signal: str | None
    reason: str | None
    at: datetime
    ports: Mapping[str, int] | None = None


def runs_reported(*, node: Node, states: list[RunState]) -> None:
    """Node `node`'s agent says what became of its runs, in order (the `run_state` frames
    that reached the server together: one pass through the lifecycle, one reconcile)."""
    reports = [
        _report(
            node, s.run, s.epoch, s.state, s.at, exit_code=s.exit_code, signal=s.signal,
            reason=s.reason, ports=_ports_seen(s.ports),
        )
        for s in states
    ]  # fmt: skip
    lifecycle.runs_observed([r for r in reports if r is not None])


def _ports_seen(ports: Mapping[str, int] | None) -> tuple[PortSeen, ...] | None:
    return None if ports is None else tuple(PortSeen(n, p) for n, p in ports.items())


def run_reported(*, node: Node, **state: Any) -> None:
    """One report (`RunState`'s fields, `run_id` for `run`)."""
    state["run"] = state.pop("run_id")
    runs_reported(node=node, states=[RunState(**state)])


def agent_hello(*, node: Node, runs: list[dict[str, Any]]) -> list[int]:
    """Node `node`'s agent (re)connected with `runs` (`{"run", "epoch", "state",
    "exit_code", "signal", "log_size"}`): apply what they say, end the live runs it no
    longer has, and return the ids of the runs it should keep (live and still wanted).
    Starts still owed to the node (new, or sent while it was away) go out after commit."""
    now = timezone.now()
    keep: list[int] = []
    resend: list[int] = []
    with transaction.atomic():
        seen: set[int] = set()
        for item in runs:
            run_id, epoch = item.get("run"), item.get("epoch")
            if not isinstance(run_id, int) or not isinstance(epoch, int):
                continue
            state = str(item.get("state"))
            if state in ENDED:
                report = _report(
                    node, run_id, epoch, state, now, exit_code=item.get("exit_code"),
                    signal=item.get("signal"), reason=item.get("reason"),
                )  # fmt: skip
                if report is not None:
                    lifecycle.run_observed(report)
                seen.add(run_id)
                continue
            run = lifecycle.known_run(run_id, node_id=node.pk, epoch=epoch)
            if run is None or run.state not in LIVE_RUN_STATES:
                continue  # unknown, or ended here: the agent stops it
            seen.add(run.pk)
            if state == RUN_RUNNING:
                lifecycle.run_observed(
                    RunReport(run_id, RunPhase.RUNNING, now, node_id=node.pk, epoch=epoch)
                )
            if run.allocation_id is not None:
                keep.append(run.pk)
            elif run.stop_sent_at is None:
                _stopping(run, now)  # not wanted, not signalled yet: stopped on `welcome`
        for run in PodRun.objects.filter(node=node, state__in=LIVE_RUN_STATES).exclude(pk__in=seen):
            if run.state == PodRunState.STARTING and run.allocation_id is not None:
                resend.append(run.pk)  # its start never arrived: send it again
            else:
                _end_missing(node, run, now)
        transaction.on_commit(lambda: reconcile(node_ids=[node.pk], resend=resend))
    return keep


def _stopping(run: PodRun, now: datetime) -> None:
    status = Workload.objects.filter(pk=run.workload_id).values_list("status", flat=True).first()
    PodRun.objects.filter(pk=run.pk).update(
        state=PodRunState.STOPPING, stop_sent_at=now,
        stop_reason=run.stop_reason or stop_reason(status),
    )  # fmt: skip


def _end_missing(node: Node, run: PodRun, now: datetime) -> None:
    """A live run its agent no longer has (the agent restarted without it, or a start
    that was being stopped never ran): lost; its workload failed that run if it was
    wanted."""
    lifecycle.run_observed(
        RunReport(
            run.pk, RunPhase.LOST, now, node_id=node.pk, epoch=run.epoch,
            reason=f"node {node.name}'s agent no longer has this run",
        )
    )  # fmt: skip
