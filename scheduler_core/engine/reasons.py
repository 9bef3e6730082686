"""Pending reasons in words a researcher understands, naming numbers."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from scheduler_core.engine.resources import format_amount

if TYPE_CHECKING:
    from scheduler_core.engine.framework.state import WorkloadState

_EPOCH_THRESHOLD = 1e8  # below: simulated seconds from 0; above: epoch seconds
RESOURCE_WORDS = ("GPUs", "CPU cores", "GiB of memory")
LIMIT = "limit"
"""Reason kind of a workload that a project's or department's limit blocks."""
QUEUE_TURN_KINDS = frozenset({"fairshare", "quota", LIMIT, "priority"})
"""Reason kinds of a workload that its queue's rules keep waiting for its turn (its
fair share, quota or limit, or higher-priority work first), whatever room the nodes
have; the other kinds (capacity, gang, min_runtime, selector, ...) wait for room."""


def room_wait_starts(before: str | None, kind: str) -> bool:
    """Whether a pending workload whose reason kind goes from `before` (None: it had
    none) to `kind` starts waiting for room now: its queue's rules stopped keeping it
    waiting (see WorkloadSpec.room_wait_since)."""
    return before in QUEUE_TURN_KINDS and kind not in QUEUE_TURN_KINDS


def format_time(t: float, now: float | None = None) -> str:
    """'t=600' for simulated time; for epoch seconds a UTC clock time, '14:05 UTC', with
    the date in front when it is not the day of `now`."""
    if t < _EPOCH_THRESHOLD:
        return f"t={format_amount(t)}"
    when = datetime.fromtimestamp(t, tz=UTC)
    today = datetime.fromtimestamp(now, tz=UTC).date() if now is not None else None
    clock = when.strftime("%H:%M UTC")
    return clock if when.date() == today else f"{when:%Y-%m-%d} {clock}"


def priority_blocked(blocker: WorkloadState, pool: str) -> str:
    """Why a lower-priority workload waits under the priority policy."""
    return (
        f"waiting behind higher-priority workload {blocker.name} (priority "
        f"{blocker.priority}) in pool {pool}"
    )


def straddled_quota(
    level: str, queue: str, pool: str, resource: int, held: float, deserved: float, taken: float
) -> str:
    """Why a workload that sat partly within and partly above its queue's deserved
    quota was reclaimed whole (`resource` indexes RESOURCE_WORDS)."""
    words = RESOURCE_WORDS[resource]
    over = held - deserved
    return (
        f"it straddled {level} {queue}'s deserved quota of {format_amount(deserved)} {words} "
        f"in pool {pool} ({queue} held {format_amount(held)}, {format_amount(over)} over quota, "
        f"and this workload held {format_amount(taken)}), so it counted as "
        f"over quota and was taken whole"
    )


def below_pods(w: WorkloadState, why: str) -> str:
    """Why a running elastic workload with fewer pods than it wants is not growing."""
    wanted = sum(g.pods for g in w.groups)
    return f"runs {len(w.pods)} of its {wanted} pods and does not grow: {why}"


def preempted_by_priority(w: WorkloadState) -> str:
    """Why a workload was evicted for `w` under the priority policy."""
    return f"preempted by higher-priority {w.name} (priority {w.priority})"


def never_fits_pool(pool: str, why: str) -> str:
    """Why a workload waits that can never run in a fair-share pool (`why` names the
    numbers); it takes no part in the pool's division."""
    return (
        f"can never run in pool {pool}: {why}; it takes no part in the pool's fair-share division"
    )


def pod_size(gpus: float, cpu: float, memory: float) -> str:
    """What one pod asks for, in words: '2 GPUs and 16 CPU cores'."""
    parts = [
        f"{format_amount(amount)} {word}"
        for amount, word in zip((gpus, cpu, memory), RESOURCE_WORDS, strict=True)
        if amount > 0
    ]
    if not parts:
        return "nothing"
    return ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]


def no_over_quota_share(
    level: str,
    queue: str,
    pool: str,
    resource: int,
    fair: float,
    held: float,
    needs: float,
    free_gpus: float,
) -> str:
    """Why a workload of a queue with over-quota weight 0 cannot reclaim: it gets no
    share of the over-quota resources, so its fair share is at most its deserved quota
    (`resource` indexes RESOURCE_WORDS)."""
    words = RESOURCE_WORDS[resource]
    return (
        f"{level} {queue} has over-quota weight 0, so it has no over-quota share: its fair "
        f"share in pool {pool} is {format_amount(fair)} {words}, no more than its deserved "
        f"quota (holds {format_amount(held)}, this needs {format_amount(needs)}); it can only "
        f"use idle resources ({format_amount(free_gpus)} free GPUs) and cannot reclaim"
    )


def gave_up_pods(w: WorkloadState) -> str:
    """Why a running elastic workload that gave up pods this cycle does not grow again
    in the same cycle."""
    cause = f" ({w.evict_reason})" if w.evict_reason else ""
    return f"it gave up pods this cycle{cause}"


def _node_list(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def held_for_other(names: list[str], what: str, owner: str, gpus: float) -> str:
    """Why a workload is kept off nodes held for the pending `what` (gang or workload)
    `owner` of `gpus` GPUs (reserve_for_gangs)."""
    held = f"held for {what} {owner} ({format_amount(gpus)} GPUs)"
    if len(names) == 1:
        return f"node {names[0]} is {held}, which waits for it to drain"
    return f"nodes {_node_list(names)} are {held}, which waits for them to drain"


def held_for_it(names: list[str]) -> str:
    """What is held for a pending gang (reserve_for_gangs), added to why it waits."""
    if len(names) == 1:
        return f"node {names[0]} is held for it and drains as its running pods finish"
    return f"nodes {_node_list(names)} are held for it and drain as their running pods finish"


def behind_alike(project: str) -> str:
    """Why a parked workload waits when the alike one it waited behind started this
    cycle (framework/alike_window.py)."""
    return (
        f"workloads like it that come before it in project {project} started this cycle; "
        "it is looked at in the next cycle"
    )
