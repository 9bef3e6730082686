"""The work a stopped run throws away, and when a move is worth it.

A preempted or moved workload restarts its pods; what it ran since it last (re)started
is lost (the engine's snapshot knows no checkpoints, so this is what a workload without
one loses, and an upper bound for one with). Lost work is counted in GPU-seconds: the
GPUs it holds times the seconds since it (re)started. The simulator charges it, victim
order prefers the workloads that lose least, and consolidation weighs it (see
`move_is_worth_it`).
"""

from __future__ import annotations

from scheduler_core.engine.snapshot import WorkloadSpec


def spec_gpus(spec: WorkloadSpec) -> float:
    """GPUs the workload's running pods hold."""
    if not spec.pods:
        return 0.0
    per_group = {g.name: g.request.gpus for g in spec.groups}
    return sum(per_group.get(p.group, 0.0) for p in spec.pods)


def run_seconds(spec: WorkloadSpec, now: float) -> float:
    """Seconds its current run has lasted (0 for a workload that is not running)."""
    if spec.started_at is None or not spec.pods:
        return 0.0
    return max(now - spec.started_at, 0.0)


def lost_gpu_seconds(spec: WorkloadSpec, now: float, gpus: float | None = None) -> float:
    """GPU-seconds that stopping the workload now throws away: the GPUs it holds
    (`gpus`, when the caller knows them, else from its pods) times its run so far."""
    held = spec_gpus(spec) if gpus is None else gpus
    return held * run_seconds(spec, now)


def waited_gpu_seconds(spec: WorkloadSpec, gpus: float, now: float) -> float:
    """GPU-seconds a pending workload of `gpus` GPUs has spent waiting for room since it
    last went back to the queue (its submission, or its last eviction): the idle time
    its GPUs would have been put to had room been made for it. Time its queue's rules
    kept it waiting (over its fair share, say: WorkloadSpec.room_wait_since) does not
    count: no move or reclaim could have started it then, so that wait is no rent
    that making room now would have saved. A wait that paid for a reclaim is spent:
    room_wait_since moves on by as much (actions/room_waits.py)."""
    return gpus * max(now - room_wait_start(spec), 0.0)


def room_wait_start(spec: WorkloadSpec) -> float:
    """When the wait for room of a pending workload began (see waited_gpu_seconds)."""
    since = spec.submitted_at if spec.pending_since is None else spec.pending_since
    if spec.room_wait_since is not None:
        since = max(since, spec.room_wait_since)
    return since


def move_is_worth_it(lost: float, waited: float) -> bool:
    """Whether a consolidation may throw away `lost` GPU-seconds of the workloads it
    moves to start, now, a job that has waited `waited` GPU-seconds.

    The rule is the break-even rule of ski rental. Nobody knows how long the job would
    still wait for a node to free room by itself (the engine knows no run's remaining
    time): waiting costs its GPUs' worth of time every second, like rent; a move pays
    once, the work it throws away, like buying. Moving as soon as the rent paid so far
    reaches the price (`lost <= waited`) never costs more than twice what the best
    choice made in hindsight would have cost, whatever the future holds, while moving
    at once can throw away hours of a long run to save a job a minute, and never moving
    lets large jobs starve behind small ones that keep filling freed GPUs. So a
    fragmented job moves pods that have just started (almost nothing is lost) at once,
    and pods that have run for hours only after it has waited about as long, by then
    often not at all because room freed itself.
    """
    return lost <= waited
