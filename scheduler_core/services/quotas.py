"""Per-pool quotas of departments and projects."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db import transaction

from scheduler_core import access
from scheduler_core.choices import EventType
from scheduler_core.live_events.recording import event_record
from scheduler_core.loop.triggers import request_cycle
from scheduler_core.models import Department, NodePool, Project, Quota
from scheduler_core.services.errors import FieldErrors, require_non_negative

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
            and limit < deserved
        ):
            errors.add(
                f"limit_{key}",
                f"the limit ({limit:g}) must be at least the deserved quota ({deserved:g})",
            )
    errors.raise_if_any()


def _set_quota(owner_field: str, owner, pool: NodePool, values: dict) -> Quota:
    quota = Quota.objects.filter(**{owner_field: owner, "pool": pool}).first()
    current = {
        key: (getattr(quota, key) if quota else (None if key.startswith("limit_") else 0.0))
        for key in (*RESOURCES, *(f"limit_{k}" for k in RESOURCES))
    }
    merged = {**current, **values}
    _validate(merged)
    with transaction.atomic():
        if quota is None:
            quota = Quota(**{owner_field: owner, "pool": pool})
        for key, value in merged.items():
            setattr(quota, key, value)
        quota.save()
        event_record(
            type=EventType.QUOTA_CHANGED,
            project=owner if owner_field == "project" else None,
            department=owner if owner_field == "department" else None,
            pool=pool,
            reason=f"quota of {owner} in pool {pool}: {quota.gpus:g} GPUs"
            + (f", limit {quota.limit_gpus:g}" if quota.limit_gpus is not None else ""),
            details={"owner": owner.name, "owner_type": owner_field, **merged},
        )
        request_cycle()
    return quota


UNSET = object()


def _values(**kwargs) -> dict:
    return {k: v for k, v in kwargs.items() if v is not UNSET}


def project_set_quota(
    *,
    user,
    project: Project,
    pool: NodePool,
    gpus=UNSET,
    cpu=UNSET,
    memory=UNSET,
    limit_gpus=UNSET,
    limit_cpu=UNSET,
    limit_memory=UNSET,
) -> Quota:
    """Set a project's deserved quota and limits in a pool (fields not given stay as they are;
    a limit of None removes it)."""
    if not access.can_manage_project(user, project):
        raise PermissionDenied(f"you do not manage project {project}")
    return _set_quota(
        "project",
        project,
        pool,
        _values(
            gpus=gpus,
            cpu=cpu,
            memory=memory,
            limit_gpus=limit_gpus,
            limit_cpu=limit_cpu,
            limit_memory=limit_memory,
        ),
    )


def department_set_quota(
    *,
    user,
    department: Department,
    pool: NodePool,
    gpus=UNSET,
    cpu=UNSET,
    memory=UNSET,
    limit_gpus=UNSET,
    limit_cpu=UNSET,
    limit_memory=UNSET,
) -> Quota:
    """Set a department's deserved quota and limits in a pool (system admins)."""
    access.require_system_admin(user, "set department quotas")
    return _set_quota(
        "department",
        department,
        pool,
        _values(
            gpus=gpus,
            cpu=cpu,
            memory=memory,
            limit_gpus=limit_gpus,
            limit_cpu=limit_cpu,
            limit_memory=limit_memory,
        ),
    )
