"""Per-pool quotas of departments and projects."""

from __future__ import annotations

from enum import Enum, auto

from django.db import transaction

from scheduler_core.choices import EventType
from scheduler_core.live_events.recording import event_record
from scheduler_core.loop.triggers import request_cycle
from scheduler_core.models import Department, NodePool, Project, Quota
from scheduler_core.models.queue_owner import QueueOwner
from scheduler_core.services.errors import FieldErrors, require_non_negative
from scheduler_core.services.org import require_admin_above

RESOURCES = ("gpus", "cpu", "memory")


def _validate(values: dict[str, float | None]) -> None:
    errors = FieldErrors()
    for key in RESOURCES:
        require_non_negative(errors, key, values[key])
        require_non_negative(errors, f"limit_{key}", values[f"limit_{key}"])
    for key in RESOURCES:
        deserved, limit = values[key], values[f"limit_{key}"]
        if (
            f"limit_{key}" not in errors.errors
            and key not in errors.errors
            and limit is not None
            and deserved is not None
            and limit < deserved
        ):
            errors.add(
                f"limit_{key}",
                f"the limit ({limit:g}) must be at least the deserved quota ({deserved:g})",
            )
    errors.raise_if_any()


class Unset(Enum):
    """A value not given: it stays as it is (None is a value: no limit)."""

    UNSET = auto()


UNSET = Unset.UNSET


def queue_owner_set_quota(
    *,
    user,
    owner: QueueOwner,
    pool: NodePool,
    gpus: float | Unset = UNSET,
    cpu: float | Unset = UNSET,
    memory: float | Unset = UNSET,
    limit_gpus: float | Unset | None = UNSET,
    limit_cpu: float | Unset | None = UNSET,
    limit_memory: float | Unset | None = UNSET,
) -> Quota:
    """Set a department's (system admins) or project's (its managers) deserved quota and
    limits in a pool; values not given stay as they are, a limit of None removes it. The
    change is recorded as an event naming who made it."""
    require_admin_above(user, owner, "set department quotas")
    given = {
        "gpus": gpus,
        "cpu": cpu,
        "memory": memory,
        "limit_gpus": limit_gpus,
        "limit_cpu": limit_cpu,
        "limit_memory": limit_memory,
    }
    quota = Quota.objects.for_owner(owner).filter(pool=pool).first()
    if quota is None:  # floats, as a saved quota's are (the event's details show them)
        quota = Quota(pool=pool, gpus=0.0, cpu=0.0, memory=0.0)
        quota.owner = owner
    merged = {key: getattr(quota, key) if value is UNSET else value for key, value in given.items()}
    _validate(merged)
    with transaction.atomic():
        for key, value in merged.items():
            setattr(quota, key, value)
        quota.save()
        event_record(
            type=EventType.QUOTA_CHANGED,
            project=owner if isinstance(owner, Project) else None,
            department=owner if isinstance(owner, Department) else None,
            pool=pool,
            reason=f"quota of {owner} in pool {pool}: {quota.gpus:g} GPUs"
            + (f", limit {quota.limit_gpus:g}" if quota.limit_gpus is not None else "")
            + f" (set by {user.username})",
            details={
                "owner": owner.name,
                "owner_type": owner.kind,
                "changed_by": user.username,
                **merged,
            },
        )
        request_cycle()
    return quota
