"""A directory user's account and roles, brought in step with the directory at each of
their sign-ins (directory.backend): the account is created on the first, its name and
e-mail follow the directory, and the roles that LDAP_GROUP_ROLES maps from directory
groups are given or taken away. Roles in projects and departments that no mapped group
names are left as admins set them in Fairway.

A local account (one with a password of its own) is never taken over by a directory entry
of the same username: its owner signs in with the local password.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction

from scheduler_core.directory.config import DirectoryConfig, GroupRole
from scheduler_core.directory.ldap import DirectoryUser
from scheduler_core.models import Department, Project


def directory_user_sync(*, found: DirectoryUser, roles: list[GroupRole], config: DirectoryConfig):
    """The account of directory user `found`, holding `roles` (the roles of their groups)
    among those `config` maps; None when a local account has their username."""
    User = get_user_model()
    with transaction.atomic():
        user, created = User.objects.select_for_update().get_or_create(
            username=found.username,
            defaults={
                "email": found.email,
                "first_name": found.first_name,
                "last_name": found.last_name,
            },
        )
        if created:
            user.set_unusable_password()
        elif user.has_usable_password():
            return None
        user.email, user.first_name, user.last_name = found.email, found.first_name, found.last_name
        system_admin = any(r.kind == "system" for r in roles)
        if any(r.kind == "system" for r in config.roles):
            user.is_superuser = user.is_staff = system_admin
        user.save()
        for model in (Project, Department):
            _sync_memberships(user, model, roles, config)
    return user


def _sync_memberships(user, model, roles: list[GroupRole], config: DirectoryConfig) -> None:
    """Give `user` the roles in `model`'s owners that `roles` name, and take away their
    roles in the other owners the mapping governs."""
    kind = "project" if model is Project else "department"
    governed = {r.owner for r in config.roles if r.kind == kind}
    wanted: dict[str, str] = {}
    for role in roles:
        # researcher over viewer, admin over viewer: the strongest role wins
        if role.kind == kind and role.owner and wanted.get(role.owner) in (None, "viewer"):
            wanted[role.owner] = role.role
    owners = {o.name: o for o in model.objects.filter(name__in=governed)}
    for name, owner in owners.items():
        if name in wanted:
            owner.memberships.update_or_create(user=user, defaults={"role": wanted[name]})
        else:
            owner.memberships.filter(user=user).delete()
