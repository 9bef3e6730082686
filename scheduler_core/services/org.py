"""Departments, projects and memberships.

Both are queue owners and share one set of services (`queue_owner_*`). Who may change
what is decided in two places: `require_manager` (an owner's description) and
`require_admin_above` (its rank, weight, quota and members, set from the level above it:
a department admin ranks their projects, not their department). Every change of a rank,
weight or quota is recorded as a SchedulingEvent naming who made it.
"""

from __future__ import annotations

from typing import TypeVar

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction

from scheduler_core import access
from scheduler_core.choices import EventType
from scheduler_core.live_events.recording import event_record
from scheduler_core.loop.triggers import request_cycle
from scheduler_core.models import Department, DepartmentMembership, Project, ProjectMembership
from scheduler_core.models.queue_owner import QueueOwner
from scheduler_core.services.errors import FieldErrors, check_slug_name

Owner = TypeVar("Owner", bound=QueueOwner)


def require_manager(user, owner: QueueOwner) -> None:
    """Refuse unless `user` manages `owner`: system admins, and the admins of the
    department (or of the project's department)."""
    if not owner.managed_by(user):
        raise PermissionDenied(f"you do not manage {owner.kind} {owner}")


def require_admin_above(user, owner: QueueOwner, what: str) -> None:
    """Refuse unless `user` manages the level above `owner`, which sets its quotas and
    members: system admins for a department (`what` ends "only system admins ..."), the
    department's admins for a project."""
    if isinstance(owner, Department):
        access.require_system_admin(user, what)
    else:
        require_manager(user, owner)


def _check_weight_rank(errors: FieldErrors, rank, weight) -> None:
    if rank is not None and (not isinstance(rank, int) or isinstance(rank, bool)):
        errors.add("rank", f"must be a whole number, got {rank!r}")
    if weight is not None and (not isinstance(weight, int | float) or weight < 0):
        errors.add("over_quota_weight", f"must be a number of 0 or more, got {weight!r}")


def _queue_owner_create(
    model: type[Owner], *, name: str, rank: int, over_quota_weight: float, **fields
) -> Owner:
    errors = FieldErrors()
    check_slug_name(errors, name)
    _check_weight_rank(errors, rank, over_quota_weight)
    if model.objects.filter(name=name).exists():
        errors.add_conflict("name", f"a {model.kind} named {name!r} already exists")
    errors.raise_if_any()
    return model.objects.create(name=name, rank=rank, over_quota_weight=over_quota_weight, **fields)


def department_create(
    *, user, name: str, rank: int = 0, over_quota_weight: float = 1.0, description: str = ""
) -> Department:
    """Create a department (system admins)."""
    access.require_system_admin(user, "can do this")
    return _queue_owner_create(
        Department,
        name=name,
        rank=rank,
        over_quota_weight=over_quota_weight,
        description=description,
    )


def project_create(
    *,
    user,
    department: Department,
    name: str,
    rank: int = 0,
    over_quota_weight: float = 1.0,
    description: str = "",
) -> Project:
    """Create a project in a department the user manages."""
    require_manager(user, department)
    return _queue_owner_create(
        Project,
        department=department,
        name=name,
        rank=rank,
        over_quota_weight=over_quota_weight,
        description=description,
    )


def queue_owner_update(
    *,
    user,
    owner: Owner,
    rank: int | None = None,
    over_quota_weight: float | None = None,
    description: str | None = None,
) -> Owner:
    """Change a department's or project's description (its managers), or its rank and
    over-quota weight (the level above it: system admins for a department); fields not
    given stay as they are. A changed rank or weight is recorded as an event."""
    require_manager(user, owner)
    if rank is not None or over_quota_weight is not None:
        require_admin_above(user, owner, "change a department's rank and weight")
    errors = FieldErrors()
    _check_weight_rank(errors, rank, over_quota_weight)
    errors.raise_if_any()
    given = {"rank": rank, "over_quota_weight": over_quota_weight}
    changed = {
        field: {"from": getattr(owner, field), "to": value}
        for field, value in given.items()
        if value is not None and value != getattr(owner, field)
    }
    with transaction.atomic():
        for field, change in changed.items():
            setattr(owner, field, change["to"])
        if description is not None:
            owner.description = description
        owner.save()
        if changed:
            _record_rank_weight(user, owner, changed)
            request_cycle()
    return owner


def _record_rank_weight(user, owner: QueueOwner, changed: dict[str, dict]) -> None:
    words = {"rank": "rank", "over_quota_weight": "over-quota weight"}
    what = ", ".join(
        f"{words[field]} {change['from']:g} -> {change['to']:g}"
        for field, change in changed.items()
    )
    event_record(
        type=EventType.RANK_WEIGHT_CHANGED,
        project=owner if isinstance(owner, Project) else None,
        department=owner if isinstance(owner, Department) else None,
        reason=f"{owner.kind} {owner}: {what} by {user.username}",
        details={
            "owner": owner.name,
            "owner_type": owner.kind,
            "changed_by": user.username,
            **changed,
        },
    )


def _member_user(username: str):
    User = get_user_model()
    try:
        return User.objects.get(username=username)
    except User.DoesNotExist as exc:
        raise ValidationError({"username": f"no user named {username!r}"}) from exc


def queue_owner_set_member(
    *, user, owner: QueueOwner, username: str, role: str
) -> DepartmentMembership | ProjectMembership:
    """Give a user a role in a department (system admins) or a project (its managers)."""
    require_admin_above(user, owner, "can do this")
    roles = owner.member_roles
    if role not in roles.values:
        raise ValidationError({"role": f"must be one of {', '.join(roles.values)}"})
    member = _member_user(username)
    try:
        membership, _ = owner.memberships.update_or_create(user=member, defaults={"role": role})
    except IntegrityError as exc:  # pragma: no cover - unique race
        raise ValidationError({"username": "membership changed concurrently"}) from exc
    return membership


def queue_owner_remove_member(*, user, owner: QueueOwner, username: str) -> None:
    """Remove a user's role in a department (system admins) or a project (its managers)."""
    require_admin_above(user, owner, "change department members")
    owner.memberships.filter(user__username=username).delete()
